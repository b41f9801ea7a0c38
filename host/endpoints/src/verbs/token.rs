//! `POST …/serviceaccounts/NAME/token` (`TokenRequest`, `kubectl create token NAME`): a
//! token for the account, signed by the gateway ([`crate::sa_token`]). 201 with the
//! `TokenRequest` and its `status.token`; nothing is stored.

use bytes::Bytes;
use http::{Response, StatusCode};
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::validation::FieldError;

use super::Ctx;
use crate::body::Body;
use crate::error::ApiResult;

pub(super) async fn create(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let name = ctx.name().to_owned();
    let request = if body.is_empty() {
        serde_json::json!({})
    } else {
        ctx.decode_body(&body)?.value
    };
    let found = ctx.read_latest(&name).await?;
    let sa = crate::object::from_stored(&found.value).map_err(crate::error::ApiError::internal)?;
    let issued = crate::sa_token::issue(ctx.inner.sa_signer(), &sa, &request).map_err(|msg| {
        Status::invalid(
            "TokenRequest",
            "authentication.k8s.io",
            &name,
            &[FieldError::invalid(
                "spec.expirationSeconds",
                request["spec"]["expirationSeconds"].clone(),
                msg,
            )],
        )
    })?;
    if matches!(
        ctx.encoding.output(),
        Ok(wasmgate_apimachinery::media::Output::Protobuf)
    ) {
        return super::protobuf_response::object_response(
            StatusCode::CREATED,
            "authentication.k8s.io/v1",
            "TokenRequest",
            &issued,
        );
    }
    let bytes = Bytes::from(serde_json::to_vec(&issued).unwrap_or_default());
    Ok(crate::response::bytes_response(
        StatusCode::CREATED,
        "application/json",
        bytes,
    ))
}

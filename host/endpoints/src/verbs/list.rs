//! `list` (`RV-04`..`RV-07`, `CHUNK-01`..`CHUNK-06`, `SEL-01`): one consistent snapshot per
//! paginated list, continue tokens bound to the list's revision, selectors applied while
//! filling a page.

use http::Response;
use wasmgate_apimachinery::options::{ListOptions, list_semantics};
use wasmgate_apimachinery::status::Status;

use super::pages::read_list;
use super::{Ctx, Filter};
use crate::body::Body;
use crate::error::ApiResult;

pub(super) async fn list(ctx: &mut Ctx) -> ApiResult<Response<Body>> {
    let opts = ListOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let filter = Filter::new(
        &ctx.rt,
        opts.label_selector.clone(),
        opts.field_selector.clone(),
    )?;
    let semantics = list_semantics(&opts).map_err(|e| Status::bad_request(e.0))?;
    if let Some(how) = super::list_stream::streams(ctx, opts.limit).await {
        return super::list_stream::respond(ctx, how, filter, semantics, opts.limit).await;
    }
    let presenter = ctx.kind().presenter();
    let listed = read_list(ctx, presenter.as_ref(), &filter, semantics, opts.limit).await?;
    ctx.respond_list(
        listed.items,
        listed.revision,
        &listed.continue_token,
        listed.remaining,
    )
    .await
}

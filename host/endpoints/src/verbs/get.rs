//! `get` (`RV-03`): unset = most recent, `0` = any, otherwise not older than.

use http::{Response, StatusCode};
use wasmgate_apimachinery::options::parse_resource_version;
use wasmgate_apimachinery::status::Status;

use super::Ctx;
use crate::body::Body;
use crate::error::ApiResult;

pub(super) async fn get(ctx: &mut Ctx) -> ApiResult<Response<Body>> {
    let name = ctx.name().to_owned();
    if let Some(rv) = ctx
        .query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0")
    {
        let rev = parse_resource_version(rv).map_err(|e| Status::bad_request(e.0))?;
        wait_for_revision(ctx, rev).await?;
    }
    let found = ctx.read_latest(&name).await?;
    let out = ctx.kind().present(found.value).await?;
    ctx.respond_object(StatusCode::OK, out).await
}

/// Waits briefly for the store to reach `rev`, else 504 "Too large resource version"
/// (`RV-09`).
pub(super) async fn wait_for_revision(ctx: &Ctx, rev: u64) -> ApiResult<()> {
    let store = ctx.inner.store();
    if store.revision() >= rev || store.wait_for(rev, ctx.inner.resource_version_wait()).await {
        return Ok(());
    }
    Err(Status::too_large_resource_version(rev, store.revision()).into())
}

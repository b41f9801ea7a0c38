//! `deletecollection` (`VERB-05`, `DEL-05`): deletes every object the selectors match,
//! each as a single delete would, and returns them as a list.

use bytes::Bytes;
use http::Response;
use wasmgate_apimachinery::options::{ListOptions, ListSemantics};
use wasmgate_apimachinery::status::Status;

use super::delete::{Deleted, delete_one, delete_options};
use super::pages::read_list;
use super::{Ctx, Filter};
use crate::body::Body;
use crate::error::ApiResult;
use crate::object::meta_str;

pub(super) async fn delete_collection(ctx: &mut Ctx, body: Bytes) -> ApiResult<Response<Body>> {
    let opts = delete_options(ctx, &body)?;
    let list_opts = ListOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let filter = Filter::new(
        &ctx.rt,
        list_opts.label_selector.clone(),
        list_opts.field_selector.clone(),
    )?;
    let presenter = ctx.kind().presenter();
    let listed = read_list(
        ctx,
        presenter.as_ref(),
        &filter,
        ListSemantics::MostRecent,
        0,
    )
    .await?;
    let mut deleted = Vec::new();
    for item in listed.items {
        let (name, ns) = {
            let obj = item.value()?;
            let name = meta_str(&obj, "name").unwrap_or("").to_owned();
            (name, meta_str(&obj, "namespace").map(str::to_owned))
        };
        match delete_one(ctx, presenter.as_ref(), ns.as_deref(), &name, &opts).await {
            Ok(Deleted::Removed { obj, .. } | Deleted::Pending(obj)) => deleted.push(obj),
            // Gone meanwhile: nothing to report.
            Err(e) if e.status.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    ctx.respond_list(deleted, ctx.inner.store().revision(), "", None)
        .await
}

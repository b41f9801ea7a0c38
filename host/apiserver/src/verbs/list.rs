//! `list` (`RV-04`..`RV-07`, `CHUNK-01`..`CHUNK-06`, `SEL-01`): one consistent snapshot per
//! paginated list, continue tokens bound to the list's revision, selectors applied while
//! filling a page.

use http::Response;
use wasmgate_apimachinery::options::{ContinueToken, ListOptions, ListSemantics, list_semantics};
use wasmgate_apimachinery::status::Status;
use wasmgate_storage::{ReadAt, StorageError};

use super::{Ctx, Filter, Obj};
use crate::body::Body;
use crate::error::{ApiError, ApiResult, storage_error};
use crate::kinds::{Presenter, present_many};
use crate::object;

/// The items of one page and where the next starts.
pub(super) struct Listed {
    pub(super) items: Vec<Obj>,
    pub(super) revision: u64,
    pub(super) continue_token: String,
    pub(super) remaining: Option<u64>,
}

pub(super) async fn list(ctx: &mut Ctx) -> ApiResult<Response<Body>> {
    let opts = ListOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let filter = Filter::new(
        &ctx.rt,
        opts.label_selector.clone(),
        opts.field_selector.clone(),
    )?;
    let semantics = list_semantics(&opts).map_err(|e| Status::bad_request(e.0))?;
    let presenter = ctx.presenter();
    let listed = read_list(ctx, presenter.as_ref(), &filter, semantics, opts.limit).await?;
    ctx.respond_list(
        listed.items,
        listed.revision,
        &listed.continue_token,
        listed.remaining,
    )
    .await
}

/// Reads one page (or everything, with limit 0) of the collection the request names, its
/// items as `presenter` (the request's [`Ctx::presenter`]) shows them.
pub(super) async fn read_list(
    ctx: &Ctx,
    presenter: Option<&Presenter>,
    filter: &Filter,
    semantics: ListSemantics,
    limit: u64,
) -> ApiResult<Listed> {
    let prefix = ctx.rt.namespace_prefix(ctx.namespace());
    let store = &ctx.inner.store;
    let (at, mut start_after) = match &semantics {
        ListSemantics::MostRecent | ListSemantics::Any => (ReadAt::Latest, None),
        ListSemantics::NotOlderThan(rev) => {
            super::get::wait_for_revision(ctx, *rev).await?;
            (ReadAt::Latest, None)
        }
        ListSemantics::Exact(rev) => (ReadAt::Exact(*rev), None),
        ListSemantics::Continue(token) => {
            if token.rv < store.compacted() {
                return Err(Status::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                )
                .into());
            }
            (
                ReadAt::Exact(token.rv),
                Some(format!("{prefix}{}", token.start)),
            )
        }
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let target = ctx.target("");
    let count_remaining = filter.is_everything();
    let mut items = Vec::new();
    let mut revision = None;
    let mut at = at;
    loop {
        let want = if limit == 0 { 0 } else { limit - items.len() };
        let page = store
            .list(&prefix, at, start_after.as_deref(), want, count_remaining)
            .await
            .map_err(|e| match e {
                StorageError::Compacted { .. } if matches!(semantics, ListSemantics::Continue(_)) => {
                    ApiError::from(Status::expired("The provided continue parameter is too old to display a consistent list result."))
                }
                other => storage_error(other, target),
            })?;
        // Every further page reads at the revision of the first (`CHUNK-02`).
        at = ReadAt::Exact(page.revision);
        revision.get_or_insert(page.revision);
        let last_key = page.items.last().map(|v| v.key.clone());
        let mut kept = Vec::with_capacity(page.items.len());
        for v in page.items {
            if filter.is_everything() {
                kept.push((v.value, None));
            } else {
                let obj = object::from_stored(&v.value).map_err(ApiError::internal)?;
                if filter.matches(&obj) {
                    kept.push((v.value, Some(obj)));
                }
            }
        }
        items.extend(present_many(presenter, kept).await?);
        let full = limit > 0 && items.len() >= limit;
        if !page.more || full || last_key.is_none() {
            let revision = revision.unwrap_or(page.revision);
            let continue_token = match (&last_key, page.more) {
                (Some(k), true) => {
                    let rel = k.strip_prefix(&prefix).unwrap_or(k);
                    ContinueToken::new(revision, rel).encode()
                }
                _ => String::new(),
            };
            return Ok(Listed {
                items,
                revision,
                remaining: if continue_token.is_empty() {
                    None
                } else {
                    page.remaining
                },
                continue_token,
            });
        }
        start_after = last_key;
    }
}

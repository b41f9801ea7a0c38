//! A collection read from the store page by page at one revision (`CHUNK-02`): lists,
//! streamed lists and a watch's initial state read through it.

use wasmgate_apimachinery::options::{ContinueToken, ListSemantics};
use wasmgate_apimachinery::status::Status;
use wasmgate_storage::{ReadAt, StorageError};

use super::{Ctx, Filter, Obj};
use crate::error::{ApiError, ApiResult, storage_error};
use crate::kinds::{Presenter, present_many};
use crate::object;

/// Keys read from the store per page of a streamed response (a whole-collection LIST, a
/// watch's initial state): ~2.6 MB of 1 KiB objects.
pub(super) const PAGE: usize = 2000;

/// The items of one page and where the next starts.
pub(super) struct Listed {
    pub(super) items: Vec<Obj>,
    pub(super) revision: u64,
    pub(super) continue_token: String,
    pub(super) remaining: Option<u64>,
}

/// Reads one page (or everything, with limit 0) of the collection the request names, its
/// items as `presenter` (the request's `Kind::presenter`) shows them.
pub(super) async fn read_list(
    ctx: &Ctx,
    presenter: Option<&Presenter>,
    filter: &Filter,
    semantics: ListSemantics,
    limit: u64,
) -> ApiResult<Listed> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut pages = Pages::start(ctx, &semantics, filter).await?;
    let mut items = Vec::new();
    loop {
        let want = if limit == 0 { 0 } else { limit - items.len() };
        items.extend(pages.next(ctx, presenter, filter, want).await?);
        let full = limit > 0 && items.len() >= limit;
        if pages.done() || full {
            let continue_token = pages.continue_token();
            return Ok(Listed {
                items,
                revision: pages.revision(),
                remaining: if continue_token.is_empty() {
                    None
                } else {
                    pages.remaining
                },
                continue_token,
            });
        }
    }
}

/// A collection read page by page at one revision (`CHUNK-02`): the first page fixes it.
pub(super) struct Pages {
    prefix: String,
    at: ReadAt,
    start_after: Option<String>,
    revision: Option<u64>,
    continuing: bool,
    count_remaining: bool,
    /// The last key read and whether the store has more after it.
    last_key: Option<String>,
    more: bool,
    remaining: Option<u64>,
    started: bool,
}

impl Pages {
    pub(super) async fn start(
        ctx: &Ctx,
        semantics: &ListSemantics,
        filter: &Filter,
    ) -> ApiResult<Pages> {
        let prefix = ctx.rt.namespace_prefix(ctx.namespace());
        let store = ctx.inner.store();
        let (at, start_after) = match semantics {
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
        Ok(Pages {
            prefix,
            at,
            start_after,
            revision: None,
            continuing: matches!(semantics, ListSemantics::Continue(_)),
            count_remaining: filter.is_everything(),
            last_key: None,
            more: true,
            remaining: None,
            started: false,
        })
    }

    /// Pages without `remainingItemCount` (a streamed list has no use for it, and each
    /// count reads the rest of the collection).
    pub(super) fn without_counts(mut self) -> Pages {
        self.count_remaining = false;
        self
    }

    /// Whether the store has nothing after the last page.
    pub(super) fn done(&self) -> bool {
        self.started && (!self.more || self.last_key.is_none())
    }

    /// The revision of the list (after the first page).
    pub(super) fn revision(&self) -> u64 {
        self.revision.unwrap_or(0)
    }

    /// The token that continues after the last page, empty when nothing follows.
    pub(super) fn continue_token(&self) -> String {
        match (&self.last_key, self.more) {
            (Some(k), true) => {
                let rel = k.strip_prefix(&self.prefix).unwrap_or(k);
                ContinueToken::new(self.revision(), rel).encode()
            }
            _ => String::new(),
        }
    }

    /// The next up to `want` keys (0: all that are left), those the filter keeps, as the
    /// presenter shows them.
    pub(super) async fn next(
        &mut self,
        ctx: &Ctx,
        presenter: Option<&Presenter>,
        filter: &Filter,
        want: usize,
    ) -> ApiResult<Vec<Obj>> {
        if self.done() {
            return Ok(Vec::new());
        }
        let target = ctx.target("");
        let continuing = self.continuing;
        let page = ctx
            .inner
            .store()
            .list(
                &self.prefix,
                self.at,
                self.start_after.as_deref(),
                want,
                self.count_remaining,
            )
            .await
            .map_err(|e| match e {
                StorageError::Compacted { .. } if continuing => {
                    ApiError::from(Status::expired("The provided continue parameter is too old to display a consistent list result."))
                }
                other => storage_error(other, target),
            })?;
        self.started = true;
        // Every further page reads at the revision of the first (`CHUNK-02`).
        self.at = ReadAt::Exact(page.revision);
        self.revision.get_or_insert(page.revision);
        self.last_key = page.items.last().map(|v| v.key.clone());
        self.more = page.more;
        self.remaining = page.remaining;
        self.start_after.clone_from(&self.last_key);
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
        present_many(presenter, kept).await
    }
}

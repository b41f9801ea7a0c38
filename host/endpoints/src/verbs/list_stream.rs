//! A LIST in JSON, as metadata only or as a Table, streamed (issue 9 "Bounded memory", as
//! kube 1.33 streams its JSON list encoding): a whole collection (no `limit`) is written
//! page by page as the store is read at one revision, so the gateway holds a few pages of
//! it at a time (each page one buffer), never the whole list; a page with a limit is read
//! first (the objects' stored bytes, shared with the object cache) and its metadata or
//! Table rows encoded a few thousand at a time. Gzip, when the client accepts it,
//! compresses the stream as it goes.
//!
//! The first page is read before the response starts, so that everything that can refuse
//! the request (a compacted or future revision, a bad continue token) still gets its
//! `Status`. A storage failure after that ends the response early: the client sees a
//! truncated body, as with kube-apiserver.

use std::io::Write as _;

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use wasmgate_apimachinery::media::{Encoding, Output};
use wasmgate_apimachinery::options::ListSemantics;
use wasmgate_apimachinery::table;

use super::pages::{PAGE, Pages};
use super::{Ctx, Filter, Obj};
use crate::body::{self, Body};
use crate::error::ApiResult;

/// Pages buffered between the reader and the connection.
const PAGES_IN_FLIGHT: usize = 2;

/// How this list is streamed, if it is: compact JSON (objects or metadata only) or a
/// Table with the built-in columns (a printer plugin's failure midway would change the
/// columns of a table already half sent, so those tables are built whole). Without a
/// limit the store is read page by page as the response goes out; with one, the page is
/// read first (it decides the continue token and remaining count, which come before the
/// items) and only encoded piece by piece: compact JSON objects then need no streaming
/// (their stored bytes go out as they are, [`crate::body::joined`]).
pub(super) async fn streams(ctx: &Ctx, limit: u64) -> Option<Streamed> {
    if ctx.encoding.pretty() {
        return None;
    }
    let streamed = match ctx.encoding.output() {
        Ok(Output::Json) if limit == 0 => Streamed::FromStore,
        Ok(Output::Json) => return None,
        Ok(Output::PartialObjectMetadata(_, Encoding::Json)) => Streamed::FromStore,
        Ok(Output::Table(_))
            if super::printing::PluginPrinter::for_request(ctx)
                .await
                .is_none() =>
        {
            Streamed::FromStore
        }
        _ => return None,
    };
    Some(if limit == 0 {
        streamed
    } else {
        Streamed::ReadFirst
    })
}

/// Where a streamed list's items come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Streamed {
    /// Read from the store page by page while the response goes out (no limit).
    FromStore,
    /// One page (a limit) read whole first, then encoded in pieces.
    ReadFirst,
}

/// The items still to encode.
enum Source {
    Store(Box<FromStore>),
    Read(std::vec::IntoIter<Obj>),
}

struct FromStore {
    pages: Pages,
    filter: Filter,
    presenter: Option<crate::kinds::Presenter>,
}

impl Source {
    fn done(&self) -> bool {
        match self {
            Source::Store(s) => s.pages.done(),
            Source::Read(items) => items.len() == 0,
        }
    }

    async fn next(&mut self, ctx: &Ctx) -> ApiResult<Vec<Obj>> {
        match self {
            Source::Store(s) => {
                let FromStore {
                    pages,
                    filter,
                    presenter,
                } = &mut **s;
                pages.next(ctx, presenter.as_ref(), filter, PAGE).await
            }
            Source::Read(items) => Ok(items.by_ref().take(PAGE).collect()),
        }
    }
}

pub(super) async fn respond(
    ctx: &Ctx,
    how: Streamed,
    filter: Filter,
    semantics: ListSemantics,
    limit: u64,
) -> ApiResult<Response<Body>> {
    let out = ctx.encoding.output()?;
    let presenter = ctx.kind().presenter();
    let (mut source, list_meta) = match how {
        Streamed::FromStore => {
            let pages = Pages::start(ctx, &semantics, &filter)
                .await?
                .without_counts();
            (
                Source::Store(Box::new(FromStore {
                    pages,
                    filter,
                    presenter,
                })),
                None,
            )
        }
        Streamed::ReadFirst => {
            let listed =
                super::pages::read_list(ctx, presenter.as_ref(), &filter, semantics, limit).await?;
            let meta = ListMeta {
                revision: listed.revision,
                continue_token: listed.continue_token,
                remaining: listed.remaining,
            };
            (Source::Read(listed.items.into_iter()), Some(meta))
        }
    };
    let first = source.next(ctx).await?;
    let list_meta = match (list_meta, &source) {
        (Some(m), _) => m,
        (None, Source::Store(s)) => ListMeta {
            revision: s.pages.revision(),
            continue_token: String::new(),
            remaining: None,
        },
        (None, Source::Read(_)) => ListMeta::default(),
    };
    let mut enc = Encoder::new(ctx, out, list_meta);
    let mut batch = Vec::new();
    enc.items(ctx, first, &mut batch).await?;
    // Compressed as a whole response would be: when it reaches the threshold (a first
    // page under it with nothing after it stays plain).
    let first_bytes = batch.iter().map(|b| b.len() as u64).sum::<u64>();
    let compress =
        ctx.accepts_gzip() && (!source.done() || first_bytes >= crate::response::GZIP_MIN_BYTES);
    let mut sink = Sink::new(compress);
    let (tx, rx) = mpsc::channel(PAGES_IN_FLIGHT);
    let ctx = ctx.detached();
    tokio::spawn(async move {
        let mut batch = batch;
        loop {
            if source.done() {
                batch.push(Bytes::from_static(b"]}"));
                let _ = tx.send(sink.last(batch)).await;
                return;
            }
            if tx.send(sink.batch(batch)).await.is_err() {
                return;
            }
            batch = Vec::new();
            let page = match source.next(&ctx).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(cause = ?e.cause, status = e.status.code, "streamed list ended early");
                    return;
                }
            };
            if let Err(e) = enc.items(&ctx, page, &mut batch).await {
                tracing::warn!(cause = ?e.cause, status = e.status.code, "streamed list ended early");
                return;
            }
        }
    });
    let mut resp = Response::new(body::channel(rx));
    *resp.status_mut() = StatusCode::OK;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if compress {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    Ok(resp)
}

/// The list's `metadata`.
#[derive(Default)]
struct ListMeta {
    revision: u64,
    continue_token: String,
    remaining: Option<u64>,
}

/// The list's JSON, in pieces: the head (kind, metadata, the Table's columns), then the
/// items (stored bytes as they are, metadata only, or rows), separated by commas.
struct Encoder {
    out: Output,
    list_kind: String,
    api_version: String,
    meta: ListMeta,
    first: bool,
}

impl Encoder {
    fn new(ctx: &Ctx, out: Output, meta: ListMeta) -> Encoder {
        Encoder {
            out,
            list_kind: ctx.rt.list_kind.clone(),
            api_version: ctx.api_version(),
            meta,
            first: true,
        }
    }

    /// `{…,"items":[` (or `"rows":[`), with the Table's columns when there are any.
    fn head(&self, columns: Vec<table::ColumnDefinition>) -> Vec<u8> {
        let mut meta = Map::new();
        meta.insert(
            "resourceVersion".into(),
            json!(self.meta.revision.to_string()),
        );
        if !self.meta.continue_token.is_empty() {
            meta.insert("continue".into(), json!(self.meta.continue_token));
        }
        if let Some(n) = self.meta.remaining {
            meta.insert("remainingItemCount".into(), json!(n));
        }
        let (kind, api_version) = match self.out {
            Output::Table(v) => {
                let t = table::Table {
                    api_version: v.api_version().into(),
                    metadata: Value::Object(meta),
                    column_definitions: columns,
                    rows: Vec::new(),
                };
                // `{…,"rows":[]}` without its last two bytes: the rows follow.
                let mut whole = serde_json::to_vec(&t.to_json()).unwrap_or_default();
                if whole.ends_with(b"[]}") {
                    whole.truncate(whole.len() - 2);
                }
                return whole;
            }
            Output::PartialObjectMetadata(v, _) => (
                "PartialObjectMetadataList".to_owned(),
                v.api_version().to_owned(),
            ),
            _ => (self.list_kind.clone(), self.api_version.clone()),
        };
        let mut b = BytesMut::with_capacity(256);
        b.put_slice(br#"{"kind":"#);
        b.put_slice(&serde_json::to_vec(&kind).unwrap_or_default());
        b.put_slice(br#","apiVersion":"#);
        b.put_slice(&serde_json::to_vec(&api_version).unwrap_or_default());
        b.put_slice(br#","metadata":"#);
        b.put_slice(&serde_json::to_vec(&meta).unwrap_or_default());
        b.put_slice(br#","items":["#);
        b.to_vec()
    }

    /// Appends a page of items to `batch` as one buffer (one frame per page: hyper and
    /// rustls handle a few large writes far better than many small ones), after the head
    /// for the first page.
    async fn items(&mut self, ctx: &Ctx, items: Vec<Obj>, batch: &mut Vec<Bytes>) -> ApiResult<()> {
        let mut columns = Vec::new();
        let encoded: Vec<Bytes> = match self.out {
            Output::Table(v) => {
                let (cols, rows) = ctx.table_parts(&values(&items)?, v).await?;
                columns = cols;
                // A row serialises as the whole table renders it.
                rows.iter()
                    .map(|r| Bytes::from(serde_json::to_vec(r).unwrap_or_default()))
                    .collect()
            }
            Output::PartialObjectMetadata(v, _) => items
                .iter()
                .map(|i| {
                    i.value().map(|o| {
                        let m = json!({"kind": "PartialObjectMetadata", "apiVersion": v.api_version(), "metadata": super::meta(&o)});
                        Bytes::from(serde_json::to_vec(&m).unwrap_or_default())
                    })
                })
                .collect::<ApiResult<_>>()?,
            _ => items
                .into_iter()
                .map(|i| match i {
                    Obj::Raw(r) => r,
                    Obj::Value(v) => Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
                })
                .collect(),
        };
        let head = if self.first {
            self.head(columns)
        } else {
            Vec::new()
        };
        let mut b = BytesMut::with_capacity(
            head.len() + encoded.iter().map(|e| e.len() + 1).sum::<usize>(),
        );
        b.put_slice(&head);
        for (i, e) in encoded.into_iter().enumerate() {
            if i > 0 || !self.first {
                b.put_u8(b',');
            }
            b.put_slice(&e);
        }
        self.first = false;
        if !b.is_empty() {
            batch.push(b.freeze());
        }
        Ok(())
    }
}

fn values(items: &[Obj]) -> ApiResult<Vec<Value>> {
    items
        .iter()
        .map(|i| i.value().map(std::borrow::Cow::into_owned))
        .collect()
}

/// The bytes as they go to the connection: as they are, or through one gzip stream.
struct Sink {
    gzip: Option<flate2::write::GzEncoder<Vec<u8>>>,
}

impl Sink {
    fn new(compress: bool) -> Sink {
        Sink {
            gzip: compress
                .then(|| flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast())),
        }
    }

    fn batch(&mut self, batch: Vec<Bytes>) -> Vec<Bytes> {
        let Some(enc) = &mut self.gzip else {
            return batch;
        };
        for b in &batch {
            // Writing to a Vec does not fail.
            let _ = enc.write_all(b);
        }
        let out = std::mem::take(enc.get_mut());
        if out.is_empty() {
            Vec::new()
        } else {
            vec![Bytes::from(out)]
        }
    }

    fn last(&mut self, batch: Vec<Bytes>) -> Vec<Bytes> {
        let mut out = self.batch(batch);
        if let Some(enc) = self.gzip.take()
            && let Ok(rest) = enc.finish()
            && !rest.is_empty()
        {
            out.push(Bytes::from(rest));
        }
        out
    }
}

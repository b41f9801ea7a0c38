//! `watch` (`WATCH-01`..`WATCH-06`, `WATCH-08`, `STREAM-01`..`STREAM-04`, `GAP-02`,
//! `GAP-03`): a chunked stream of `{"type":…,"object":…}` lines, or, for a client that
//! takes protobuf (`ENC-04`, `application/vnd.kubernetes.protobuf;stream=watch`), of
//! length-prefixed `WatchEvent` messages each holding the whole encoded object.
//!
//! Errors known before the stream starts (bad options, a compacted revision) are plain
//! HTTP errors; errors after it started are an `ERROR` event with a Status, then the end.
//! The stream ends cleanly at `timeoutSeconds`, at shutdown, or when the client leaves.
//!
//! ## Slow clients
//! A slow client slows only its own stream: frames go through a small channel, and while
//! it is full the watcher stops reading (its cursor stays; events stay in the store's
//! ring), so memory does not grow with the backlog. Once the ring has moved past it, the
//! watch ends (as kube's cacher ends unresponsive watchers) rather than read its events
//! back from disk with CPU the writers need; its client watches again from the last
//! revision it got.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, Response, StatusCode, header};
use rand::Rng;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use wasmgate_apimachinery::media::{Encoding, NotAcceptable, Output};
use wasmgate_apimachinery::options::{ListOptions, ListSemantics, WatchStart, watch_start};
use wasmgate_apimachinery::protobuf;
use wasmgate_apimachinery::status::Status;
use wasmgate_apimachinery::table::{self, IncludeObject};
use wasmgate_storage::{Event, EventKind, StorageError, Watcher};

use super::pages::{PAGE, Pages};
use super::{Ctx, Filter, Obj};
use crate::body::{self, Body};
use crate::error::{ApiResult, storage_error};
use crate::object::{self, meta};

/// Batches of frames buffered per watch before the watcher waits for the client (the
/// events themselves wait in the store's ring: the watcher takes them when there is room).
const CHANNEL_BATCHES: usize = 4;
/// Largest batch made of ready events (the bytes of its frames).
const COALESCE_BYTES: usize = 256 * 1024;
/// How often a watch whose client does not take its events checks whether it has fallen
/// out of the store's in-memory window.
const LAG_CHECK: Duration = Duration::from_millis(200);

pub(super) async fn watch(ctx: &mut Ctx) -> ApiResult<Response<Body>> {
    let opts = ListOptions::from_query(&ctx.query).map_err(|e| Status::bad_request(e.0))?;
    let mut fields = opts.field_selector.clone();
    if let Some(name) = &ctx.req.name {
        // `/watch/…/NAME` (the deprecated path form) watches one object (GAP-03).
        fields.and_equals("metadata.name", name.as_str());
    }
    let filter = Filter::new(&ctx.rt, opts.label_selector.clone(), fields)?;
    let start = watch_start(&opts).map_err(|e| Status::bad_request(e.0))?;
    let output = match ctx.encoding.output()? {
        // kube's stream negotiation: YAML has no stream form.
        Output::Yaml => {
            return Err(Status::from(NotAcceptable {
                accepted: "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
            })
            .into());
        }
        o => o,
    };
    let (object_api_version, object_kind) = ctx.response_kind();
    let object_kind = object_kind.to_owned();
    let include = ctx.encoding.include_object()?;
    let presenter = ctx.kind().presenter();
    let store = ctx.inner.store();
    let prefix = ctx.rt.namespace_prefix(ctx.namespace());
    // Where the stream starts, and the synthetic ADDED events that come first.
    let (initial, from, initial_bookmark) = match start {
        WatchStart::InitialState {
            bookmark,
            not_older_than,
        } => {
            let semantics = match not_older_than {
                Some(rev) => ListSemantics::NotOlderThan(rev),
                None => ListSemantics::MostRecent,
            };
            // The current state, a page at a time (the first now, so that a refusal
            // still gets its Status; the rest as the client takes them).
            let mut pages = Pages::start(ctx, &semantics, &filter)
                .await?
                .without_counts();
            let first = pages.next(ctx, presenter.as_ref(), &filter, PAGE).await?;
            let from = pages.revision();
            let initial = Initial {
                items: first,
                rest: Some((ctx.detached(), pages)),
            };
            (initial, from, bookmark)
        }
        WatchStart::After(rev) => {
            // A revision the store has not reached: wait briefly, then kube's
            // "Too large resource version" (504), as for a get or list (`RV-09`).
            super::get::wait_for_revision(ctx, rev).await?;
            (Initial::none(), rev, false)
        }
        WatchStart::Now => (Initial::none(), store.revision(), false),
    };
    let watcher = store
        .watch(&prefix, from)
        .map_err(|e| storage_error(e, ctx.target("")))?;
    let timeout = match opts.timeout_seconds {
        Some(s) => Duration::from_secs(s),
        None => {
            let min = ctx.inner.min_request_timeout();
            min + min.mul_f64(rand::rng().random::<f64>())
        }
    };
    let (tx, rx) = mpsc::channel(CHANNEL_BATCHES);
    let printer = match output {
        Output::Table(_) => match super::printing::PluginPrinter::for_request(ctx).await {
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => {
                tracing::warn!("{e}");
                ctx.warnings
                    .push(format!("{e}; showing the default columns"));
                None
            }
            None => None,
        },
        _ => None,
    };
    let columns = match &printer {
        Some(p) => p.columns.clone(),
        None => ctx.kind().table_columns(),
    };
    let stream = Stream {
        tx,
        filter,
        output,
        include,
        kind: object_kind,
        api_version: object_api_version,
        sent_columns: false,
        presenter,
        columns,
        printer,
        rt: ctx.rt.clone(),
        version: ctx.req.version.clone(),
        registry: ctx.inner.clone(),
        metrics: ctx
            .inner
            .metrics()
            .watches
            .start(&ctx.rt.group, &ctx.req.version, &ctx.rt.kind),
    };
    let bookmarks = opts
        .allow_watch_bookmarks
        .then_some(ctx.inner.bookmark_interval());
    let shutdown = ctx.inner.shutdown();
    tokio::spawn(stream.run(
        initial,
        from,
        initial_bookmark,
        watcher,
        bookmarks,
        timeout,
        shutdown,
    ));
    let mut resp = Response::new(body::channel(rx));
    *resp.status_mut() = StatusCode::OK;
    let content_type = if output.is_protobuf() {
        protobuf::WATCH_MEDIA_TYPE
    } else {
        "application/json"
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}

/// What every watcher of one event would otherwise derive again: the decoded object and
/// previous object (for selectors), and the JSON frames (one per event type a watcher
/// may see it as) that watchers without a conversion send as they are.
#[derive(Default)]
struct EventCache {
    decoded: std::sync::OnceLock<DecodedEvent>,
    json_frames: [std::sync::OnceLock<Bytes>; 3],
    /// The protobuf frames, for watchers of the object's own kind in protobuf.
    protobuf_frames: [std::sync::OnceLock<Bytes>; 3],
}

/// The synthetic ADDED events a watch starts with: a page read, and where the rest
/// comes from.
struct Initial {
    items: Vec<Obj>,
    rest: Option<(Ctx, Pages)>,
}

impl Initial {
    fn none() -> Initial {
        Initial {
            items: Vec::new(),
            rest: None,
        }
    }
}

/// The object and previous object of an event as selectors see them: decoded once for
/// every watcher, and kept as long as the event stays in the store's ring (16k events),
/// so without `metadata.managedFields` (no selector reads it, and as a JSON tree it is
/// most of a small object's decoded size). Output that needs the whole object decodes it
/// again.
struct DecodedEvent {
    obj: Option<Value>,
    prev: Option<Value>,
}

fn cache(ev: &Event) -> &EventCache {
    let any = ev
        .cache
        .get_or_init(|| Arc::new(EventCache::default()) as Arc<dyn Any + Send + Sync>);
    // Only this module fills the slot, always with an `EventCache`.
    static EMPTY: std::sync::LazyLock<EventCache> = std::sync::LazyLock::new(EventCache::default);
    any.downcast_ref::<EventCache>().unwrap_or(&EMPTY)
}

fn decoded(ev: &Event) -> &DecodedEvent {
    let view = |bytes: &Bytes| {
        let mut v = object::from_stored(bytes).ok()?;
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        Some(v)
    };
    cache(ev).decoded.get_or_init(|| DecodedEvent {
        obj: view(&ev.value),
        prev: ev.prev.as_ref().and_then(|p| view(&p.value)),
    })
}

/// `{"type":ty,"object":raw}\n`.
fn json_frame(ty: &str, raw: &[u8]) -> Bytes {
    let mut f = BytesMut::with_capacity(raw.len() + 40);
    f.put_slice(br#"{"type":""#);
    f.put_slice(ty.as_bytes());
    f.put_slice(br#"","object":"#);
    f.put_slice(raw);
    f.put_slice(b"}\n");
    f.freeze()
}

fn frame_slot(ty: &str) -> usize {
    match ty {
        "ADDED" => 0,
        "MODIFIED" => 1,
        _ => 2,
    }
}

/// The JSON frame of `ev` as `ty`, made once for all its watchers.
fn shared_json_frame(ev: &Event, ty: &'static str) -> Bytes {
    cache(ev).json_frames[frame_slot(ty)]
        .get_or_init(|| json_frame(ty, &ev.value))
        .clone()
}

/// A protobuf frame: `WatchEvent{type, object: RawExtension{raw: the whole encoded
/// object}}` after its 4-byte length (`ENC-04`), of a stored object (its bytes, or
/// decoded). A `PartialObjectMetadata` frame encodes only the object's metadata.
fn protobuf_frame(ty: &str, api_version: &str, kind: &str, obj: Stored<'_>) -> Bytes {
    let encoded = match obj {
        Stored::Raw(raw) => protobuf::encode_stored(api_version, kind, raw),
        Stored::Value(v) => protobuf::encode(api_version, kind, v),
    };
    match encoded {
        Ok(object) => Bytes::from(protobuf::watch_frame(ty, &object)),
        Err(e) => {
            tracing::warn!(error = %e, "a watch event has no protobuf form");
            protobuf_error_frame(&Status::internal())
        }
    }
}

/// An object of a protobuf frame.
#[derive(Clone, Copy)]
enum Stored<'a> {
    Raw(&'a [u8]),
    Value(&'a Value),
}

/// An `ERROR` event with a Status, in protobuf.
fn protobuf_error_frame(status: &Status) -> Bytes {
    let object = status.to_protobuf().unwrap_or_default();
    Bytes::from(protobuf::watch_frame("ERROR", &object))
}

struct Stream {
    tx: mpsc::Sender<Vec<Bytes>>,
    filter: Filter,
    output: Output,
    include: IncludeObject,
    kind: String,
    api_version: String,
    /// Table streams send column definitions with the first row only.
    sent_columns: bool,
    /// Version conversion of custom resources.
    presenter: Option<crate::kinds::Presenter>,
    columns: Vec<table::ColumnDefinition>,
    /// The group's printer plugin, when one is bound (its columns are `columns`).
    printer: Option<super::printing::PluginPrinter>,
    /// The kind and version, for table cells (built-in printers or CRD printer columns).
    rt: std::sync::Arc<crate::registry::ResourceType>,
    version: String,
    /// Catalog changes: a watch of custom resources ends when its CRD goes.
    registry: std::sync::Arc<dyn crate::Context>,
    /// `apiserver_registered_watchers` (while the stream lives) and the events sent.
    metrics: crate::metrics::watches::WatchMetrics,
}

impl Stream {
    #[allow(
        clippy::too_many_arguments,
        reason = "one call site; the parts of one watch"
    )]
    async fn run(
        mut self,
        initial: Initial,
        from: u64,
        initial_bookmark: bool,
        mut watcher: Watcher,
        bookmarks: Option<Duration>,
        timeout: Duration,
        mut shutdown: tokio::sync::watch::Receiver<bool>,
    ) {
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut catalog = self.registry.types().subscribe();
        let mut ticker = bookmarks
            .map(|every| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
        // The initial state, in batches of frames, page by page.
        let Initial {
            mut items,
            mut rest,
        } = initial;
        loop {
            let mut batch = Vec::new();
            let mut bytes = 0;
            for item in items.drain(..) {
                let frame = match item {
                    Obj::Raw(raw) => self.frame("ADDED", &raw, None).await,
                    Obj::Value(v) => {
                        let raw = Bytes::from(serde_json::to_vec(&v).unwrap_or_default());
                        self.frame("ADDED", &raw, Some(&v)).await
                    }
                };
                bytes += frame.len();
                batch.push(frame);
                if bytes >= COALESCE_BYTES {
                    let full = std::mem::take(&mut batch);
                    bytes = 0;
                    if !self
                        .send(full, &watcher, &mut shutdown, &mut deadline)
                        .await
                    {
                        return;
                    }
                }
            }
            if !batch.is_empty()
                && !self
                    .send(batch, &watcher, &mut shutdown, &mut deadline)
                    .await
            {
                return;
            }
            let Some((ctx, pages)) = rest.as_mut().filter(|(_, p)| !p.done()) else {
                break;
            };
            match pages
                .next(ctx, self.presenter.as_ref(), &self.filter, PAGE)
                .await
            {
                Ok(page) => items = page,
                Err(e) => {
                    let f = self.error_frame(&e.status);
                    let _ = self
                        .send(vec![f], &watcher, &mut shutdown, &mut deadline)
                        .await;
                    return;
                }
            }
        }
        drop(rest);
        if initial_bookmark {
            let frame = self.bookmark(from, true);
            if !self
                .send(vec![frame], &watcher, &mut shutdown, &mut deadline)
                .await
            {
                return;
            }
        }
        loop {
            let mut bookmark_due = false;
            let next = tokio::select! {
                biased;
                _ = shutdown.wait_for(|s| *s) => return,
                _ = &mut deadline => return,
                _ = self.tx.closed() => return,
                _ = catalog.changed(), if self.rt.custom().is_some() => {
                    if !self.type_still_served() {
                        return;
                    }
                    None
                }
                ev = watcher.next() => Some(ev),
                _ = async {
                    match ticker.as_mut() {
                        Some(t) => { t.tick().await; }
                        None => std::future::pending::<()>().await,
                    }
                } => { bookmark_due = true; None }
            };
            let frame = match next {
                Some(Ok(ev)) => {
                    // Events of one commit arrive together: send what is ready as one
                    // batch (one write to the connection) instead of one per event.
                    let mut batch = Vec::new();
                    let mut bytes = 0;
                    if let Some(f) = self.event_frame(&ev).await {
                        bytes += f.len();
                        batch.push(f);
                    }
                    while bytes < COALESCE_BYTES {
                        let Some(ev) = watcher.next_buffered() else {
                            break;
                        };
                        if let Some(f) = self.event_frame(&ev).await {
                            bytes += f.len();
                            batch.push(f);
                        }
                    }
                    if batch.is_empty() {
                        continue;
                    }
                    batch
                }
                Some(Err(StorageError::Closed)) => return,
                Some(Err(e)) => {
                    let status = match e {
                        StorageError::Compacted {
                            requested,
                            compacted,
                        } => Status::expired(format!(
                            "too old resource version: {requested} ({compacted})"
                        )),
                        other => {
                            tracing::warn!(error = %crate::error::error_chain(&other), "watch failed");
                            Status::internal()
                        }
                    };
                    let f = self.error_frame(&status);
                    let _ = self
                        .send(vec![f], &watcher, &mut shutdown, &mut deadline)
                        .await;
                    return;
                }
                None if bookmark_due && !watcher.has_buffered() => {
                    vec![self.bookmark(watcher.progress(), false)]
                }
                None => continue,
            };
            if !self
                .send(frame, &watcher, &mut shutdown, &mut deadline)
                .await
            {
                return;
            }
        }
    }

    /// Hands `frames` to the connection. While the client does not take them, the
    /// watch ends if it falls out of the store's in-memory window (kube's cacher ends
    /// unresponsive watchers the same way): a client that cannot keep up would otherwise
    /// make the gateway read its events back from disk, CPU the writers need. Its client
    /// watches again from the last revision it got (and relists if that is gone).
    async fn send(
        &self,
        frames: Vec<Bytes>,
        watcher: &Watcher,
        shutdown: &mut tokio::sync::watch::Receiver<bool>,
        deadline: &mut std::pin::Pin<&mut tokio::time::Sleep>,
    ) -> bool {
        let permit = match self.tx.try_reserve() {
            Ok(p) => p,
            Err(mpsc::error::TrySendError::Closed(())) => return false,
            Err(mpsc::error::TrySendError::Full(())) => {
                let lagging = async {
                    loop {
                        tokio::time::sleep(LAG_CHECK).await;
                        if watcher.behind_memory() {
                            return;
                        }
                    }
                };
                tokio::select! {
                    r = self.tx.reserve() => match r {
                        Ok(p) => p,
                        Err(_) => return false,
                    },
                    _ = lagging => {
                        tracing::info!(resource = %self.rt.resource, "ending a watch whose client fell behind");
                        return false;
                    }
                    _ = shutdown.wait_for(|s| *s) => return false,
                    _ = deadline.as_mut() => return false,
                }
            }
        };
        self.metrics.sent(&frames);
        permit.send(frames);
        true
    }

    /// The frame for a store event, or `None` when this watcher's selectors hide it.
    async fn event_frame(&mut self, ev: &Event) -> Option<Bytes> {
        if self.filter.is_everything() {
            let ty = match (ev.kind, &ev.prev) {
                (EventKind::Put, None) => "ADDED",
                (EventKind::Put, Some(_)) => "MODIFIED",
                (EventKind::Delete, _) => "DELETED",
            };
            return Some(self.frame_with_cache(ty, ev).await);
        }
        let d = decoded(ev);
        let was = d.prev.as_ref().is_some_and(|p| self.filter.matches(p));
        let ty = match ev.kind {
            EventKind::Delete => was.then_some("DELETED")?,
            EventKind::Put => {
                let is = d.obj.as_ref().is_some_and(|o| self.filter.matches(o));
                match (was, is) {
                    (false, true) => "ADDED",
                    (true, true) => "MODIFIED",
                    // Left the selection: to this watcher the object is gone.
                    (true, false) => "DELETED",
                    (false, false) => return None,
                }
            }
        };
        Some(self.frame_with_cache(ty, ev).await)
    }

    async fn frame_with_cache(&mut self, ty: &'static str, ev: &Event) -> Bytes {
        if let Some(p) = self.presenter.as_ref().filter(|p| p.needs(&ev.value)) {
            let mut obj = object::from_stored(&ev.value).unwrap_or(Value::Null);
            if let Err(e) = p.apply(&mut obj).await {
                // A failed conversion: the client sees why, as kube-apiserver's watch
                // reports a decoding error of an event.
                return self.error_frame(&e.status);
            }
            let raw = Bytes::from(serde_json::to_vec(&obj).unwrap_or_default());
            return self.frame(ty, &raw, Some(&obj)).await;
        }
        match self.output {
            Output::Json => shared_json_frame(ev, ty),
            Output::Protobuf => cache(ev).protobuf_frames[frame_slot(ty)]
                .get_or_init(|| {
                    protobuf_frame(ty, &self.api_version, &self.kind, Stored::Raw(&ev.value))
                })
                .clone(),
            // Tables and metadata carry the whole metadata: decoded here, not the view.
            _ => self.frame(ty, &ev.value, None).await,
        }
    }

    /// An `ERROR` event with `status`, in the stream's encoding.
    fn error_frame(&self, status: &Status) -> Bytes {
        if self.output.is_protobuf() {
            protobuf_error_frame(status)
        } else {
            json_frame("ERROR", &status.to_json())
        }
    }

    /// `{"type":ty,"object":…}\n` in the stream's output form (or its protobuf frame).
    async fn frame(&mut self, ty: &str, raw: &Bytes, decoded: Option<&Value>) -> Bytes {
        if self.output.is_protobuf() {
            let obj = decoded.map_or(Stored::Raw(raw), Stored::Value);
            return match self.output {
                Output::PartialObjectMetadata(v, _) => {
                    protobuf_frame(ty, v.api_version(), "PartialObjectMetadata", obj)
                }
                _ => protobuf_frame(ty, &self.api_version, &self.kind, obj),
            };
        }
        let mut f = BytesMut::with_capacity(raw.len() + 40);
        f.put_slice(br#"{"type":""#);
        f.put_slice(ty.as_bytes());
        f.put_slice(br#"","object":"#);
        match self.output {
            Output::Json | Output::Yaml | Output::Protobuf => f.put_slice(raw),
            Output::Table(v) | Output::PartialObjectMetadata(v, _) => {
                let owned;
                let obj = match decoded {
                    Some(o) => o,
                    None => {
                        owned = object::from_stored(raw).unwrap_or(Value::Null);
                        &owned
                    }
                };
                let out = if let Output::Table(_) = self.output {
                    let now = time::OffsetDateTime::now_utc();
                    let rv = object::meta_str(obj, "resourceVersion").unwrap_or("");
                    let columns = if self.sent_columns {
                        Vec::new()
                    } else {
                        self.sent_columns = true;
                        self.columns.clone()
                    };
                    table::Table {
                        api_version: v.api_version().into(),
                        metadata: table::list_metadata(rv, "", None),
                        column_definitions: columns,
                        rows: vec![table::TableRow {
                            cells: self.cells(obj, now).await,
                            conditions: None,
                            object: table::row_object(obj, self.include, v.api_version()),
                        }],
                    }
                    .to_json()
                } else {
                    json!({"kind": "PartialObjectMetadata", "apiVersion": v.api_version(), "metadata": meta(obj)})
                };
                f.put_slice(&serde_json::to_vec(&out).unwrap_or_default());
            }
        }
        f.put_slice(b"}\n");
        f.freeze()
    }

    /// Whether the custom type this watch serves is still the one registered (its CRD
    /// was not deleted, nor deleted and created again).
    fn type_still_served(&self) -> bool {
        let Some(mine) = self.rt.custom() else {
            return true;
        };
        let cat = self.registry.types().snapshot();
        cat.lookup(&self.rt.group, &self.version, &self.rt.resource)
            .and_then(|t| t.custom())
            .is_some_and(|c| c.crd_uid == mine.crd_uid)
    }

    async fn cells(&self, obj: &Value, now: time::OffsetDateTime) -> Vec<Value> {
        if let Some(p) = &self.printer {
            return match p.cells(std::slice::from_ref(obj)).await {
                Ok(mut rows) => rows.pop().unwrap_or_default(),
                Err(e) => {
                    // The columns were sent: a row of the same width, the name first.
                    tracing::warn!("{e}");
                    let mut row = vec![Value::Null; self.columns.len()];
                    if let Some(first) = row.first_mut() {
                        *first = object::meta(obj)
                            .get("name")
                            .cloned()
                            .unwrap_or(Value::Null);
                    }
                    row
                }
            };
        }
        match self.rt.custom().and_then(|c| c.version(&self.version)) {
            Some(v) => crate::custom::cells(v, obj, now),
            None => table::cells_for(&self.rt.group, &self.rt.resource, obj, now),
        }
    }

    /// A BOOKMARK: every change up to `rev` has been sent (`WATCH-06`); with `end`, it also
    /// marks the end of the initial events of a streaming list (`GAP-03`).
    fn bookmark(&self, rev: u64, end: bool) -> Bytes {
        let mut m = json!({"resourceVersion": rev.to_string()});
        if end {
            m["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": m});
        match self.output {
            Output::Protobuf => {
                return protobuf_frame(
                    "BOOKMARK",
                    &self.api_version,
                    &self.kind,
                    Stored::Value(&obj),
                );
            }
            Output::PartialObjectMetadata(v, Encoding::Protobuf) => {
                return protobuf_frame(
                    "BOOKMARK",
                    v.api_version(),
                    "PartialObjectMetadata",
                    Stored::Value(&obj),
                );
            }
            _ => {}
        }
        let mut f =
            serde_json::to_vec(&json!({"type": "BOOKMARK", "object": obj})).unwrap_or_default();
        f.push(b'\n');
        Bytes::from(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9 "Fan-out": an event's JSON frame is made once and shared by every watcher
    /// that sends it as is (the same buffer, not a copy per watcher).
    #[test]
    fn json_frames_are_made_once_per_event_and_type() {
        let ev = Event::new(
            7,
            "core/configmaps/ns/a".into(),
            EventKind::Put,
            Bytes::from_static(br#"{"kind":"ConfigMap"}"#),
            None,
        );
        let a = shared_json_frame(&ev, "ADDED");
        let b = shared_json_frame(&ev, "ADDED");
        assert_eq!(
            &a[..],
            &br#"{"type":"ADDED","object":{"kind":"ConfigMap"}}
"#[..]
        );
        assert_eq!(a.as_ptr(), b.as_ptr(), "one buffer for every watcher");
        let m = shared_json_frame(&ev, "MODIFIED");
        assert!(m.starts_with(br#"{"type":"MODIFIED""#));
        // The decoded form lives beside the frames in the same cache slot.
        assert!(decoded(&ev).obj.is_some());
        assert_eq!(shared_json_frame(&ev, "ADDED").as_ptr(), a.as_ptr());
    }
}

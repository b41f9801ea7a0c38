//! kube-apiserver's request metrics: `apiserver_request_total`,
//! `apiserver_request_duration_seconds`, `apiserver_longrunning_requests` and
//! `apiserver_current_inflight_requests`, with kube's names, labels, buckets and label
//! values (`staging/src/k8s.io/apiserver/pkg/endpoints/metrics`).
//!
//! ## What a request is counted as
//! * `verb`: kube's reported verb, from the method and the path: `GET` (one object),
//!   `LIST`, `WATCH` (`?watch=true` and the `/watch/` paths alike), `POST`, `PUT`, `PATCH`,
//!   `APPLY` (a PATCH of `application/apply-patch+yaml`), `DELETE` (an object or a
//!   collection), `CONNECT` (connect subresources).
//! * `scope`: `resource` for a named object or a create, else `namespace` when the path
//!   has one, else `cluster`.
//! * `dry_run`: `All`, `invalid` (a `dryRun` value other than `All`), or empty.
//! * `component`: `apiserver`; empty for the health checks (`/livez`, `/readyz`,
//!   `/healthz`, whose path is the `subresource`), as kube labels them.
//! * `code`: the response's status, whatever answered it: the handler, or a filter
//!   (401, 403, 429, 504). kube's own filters leave 401 and 403 out (kubernetes#86063);
//!   here every answer counts.
//!
//! As in kube, only what is served is counted: resource requests for a group, version,
//! resource and subresource the registry knows (a request for anything else has no
//! series, so paths cannot grow the metrics without bound) and the health checks; other
//! paths (discovery, OpenAPI, `/version`, `/metrics`) are not. A watch is counted when it
//! ends, with its whole duration, and is in `apiserver_longrunning_requests` while it
//! streams, as kube's `RecordLongRunning` has it.
//!
//! ## Cost
//! A series is made once per label set, in a slot of a fixed table that is never
//! emptied. A request then finds it without a lock or an allocation (one short hash of
//! its labels, atomic loads while probing) and records its answer with three atomic adds
//! (its code, its duration's bucket, the durations' sum).

use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Response, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt as _;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use tokio::time::Instant;
use wasmgate_apimachinery::options::Query;
use wasmgate_apimachinery::request_info::{RequestInfo, ResourceRequest, Verb};

use super::buckets::Buckets;
use wasmgate_apiserver_core::body::Body;

/// kube's `apiserver_request_duration_seconds` buckets (seconds).
pub const DURATION_BOUNDS: [f64; 23] = wasmgate_storage::stats::LATENCY_BOUNDS;

/// Subresources kube reports as `CONNECT`.
const CONNECT_SUBRESOURCES: [&str; 5] = ["log", "exec", "portforward", "attach", "proxy"];

/// Status codes counted without a lock (any other goes to a short locked list).
const CODES: [u16; 20] = [
    200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 406, 409, 410, 413, 415, 422, 429, 500, 503,
    504,
];
const CODE_LABELS: [&str; 20] = [
    "200", "201", "202", "204", "304", "400", "401", "403", "404", "405", "406", "409", "410",
    "413", "415", "422", "429", "500", "503", "504",
];

/// The labels of one series of `apiserver_request_total` (but the code) and
/// `apiserver_request_duration_seconds`, borrowed from the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Labels<'a> {
    verb: &'static str,
    dry_run: &'static str,
    group: &'a str,
    version: &'a str,
    resource: &'a str,
    subresource: &'a str,
    scope: &'static str,
    component: &'static str,
}

impl Labels<'_> {
    fn hash(&self) -> u64 {
        let mut h = FxHasher(0);
        Hash::hash(self, &mut h);
        h.finish()
    }

    fn owned(&self) -> OwnedLabels {
        OwnedLabels {
            verb: self.verb,
            dry_run: self.dry_run,
            group: self.group.into(),
            version: self.version.into(),
            resource: self.resource.into(),
            subresource: self.subresource.into(),
            scope: self.scope,
            component: self.component,
        }
    }
}

#[derive(Debug)]
struct OwnedLabels {
    verb: &'static str,
    dry_run: &'static str,
    group: Box<str>,
    version: Box<str>,
    resource: Box<str>,
    subresource: Box<str>,
    scope: &'static str,
    component: &'static str,
}

impl OwnedLabels {
    fn borrowed(&self) -> Labels<'_> {
        Labels {
            verb: self.verb,
            dry_run: self.dry_run,
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
            scope: self.scope,
            component: self.component,
        }
    }
}

/// One label set's counters: responses by code, durations, watches streaming.
#[derive(Debug)]
struct Series {
    labels: OwnedLabels,
    /// [`Labels::hash`] of `labels`.
    hash: u64,
    codes: [AtomicU64; CODES.len()],
    other_codes: Mutex<Vec<(u16, u64)>>,
    duration: Buckets,
    /// Watches of this series streaming now (`apiserver_longrunning_requests`).
    longrunning: AtomicI64,
    /// Whether a watch of this series ever streamed (kube keeps the gauge's series
    /// once made, at 0 when none streams).
    longrunning_seen: AtomicBool,
}

impl Series {
    fn new(labels: OwnedLabels, hash: u64) -> Series {
        Series {
            labels,
            hash,
            codes: Default::default(),
            other_codes: Mutex::new(Vec::new()),
            duration: Buckets::new(&DURATION_BOUNDS, 1e-9),
            longrunning: AtomicI64::new(0),
            longrunning_seen: AtomicBool::new(false),
        }
    }

    fn record(&self, code: u16, took: Duration) {
        match CODES.iter().position(|c| *c == code) {
            Some(i) => {
                self.codes[i].fetch_add(1, Ordering::Relaxed);
            }
            None => {
                let mut other = self
                    .other_codes
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match other.iter_mut().find(|(c, _)| *c == code) {
                    Some((_, n)) => *n += 1,
                    None => other.push((code, 1)),
                }
            }
        }
        self.duration
            .observe(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }

    fn is_watch(&self) -> bool {
        self.labels.verb == "WATCH"
    }
}

/// FxHash (rustc's): a rotate, xor and multiply per word. Enough for a table of label
/// sets this process makes (a request for something not served never gets a slot).
struct FxHasher(u64);

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.add(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// Slots of the series table (a power of two). A label set past them is not counted
/// (and says so once): kube's label sets number in the hundreds, this is thousands.
const SLOTS_BITS: u32 = 13;
const SLOTS: usize = 1 << SLOTS_BITS;

/// Where a request's series is in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesId(usize);

/// Non-watch requests holding a place in the in-flight budget, by kind, and the most
/// of them at once in the last second (kube reports that maximum).
#[derive(Debug, Default)]
struct Inflight {
    now: AtomicI64,
    high: AtomicI64,
    last_second: AtomicI64,
}

/// A request's place in [`Requests::executing`]; dropping it ends it.
pub struct Executing<'a>(&'a Inflight);

impl Drop for Executing<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Every request series, and the in-flight gauges.
#[derive(Debug)]
pub struct Requests {
    /// An open-addressing table (linear probing) whose slots are filled once and never
    /// emptied, so that lookups need no lock: a label set is always found before the
    /// first empty slot of its probe sequence.
    slots: Box<[OnceLock<Box<Series>>]>,
    /// Held while filling a slot.
    adding: Mutex<()>,
    /// Whether the table was found full (logged once).
    full: AtomicBool,
    /// `readOnly`, `mutating`.
    inflight: [Inflight; 2],
}

impl Default for Requests {
    fn default() -> Requests {
        Requests {
            slots: (0..SLOTS).map(|_| OnceLock::new()).collect(),
            adding: Mutex::new(()),
            full: AtomicBool::new(false),
            inflight: Default::default(),
        }
    }
}

/// Where a request's labels come from.
pub struct Request<'a> {
    pub method: &'a Method,
    pub path: &'a str,
    pub query: &'a Query,
    pub headers: &'a HeaderMap,
    pub info: Option<&'a RequestInfo>,
}

impl Requests {
    /// The series `req` is counted in, when it has one; `known` tells whether the
    /// registry serves a resource request's group, version, resource and subresource
    /// (asked only the first time a label set is seen).
    pub fn series(
        &self,
        req: &Request<'_>,
        known: impl FnOnce(&ResourceRequest) -> bool,
    ) -> Option<SeriesId> {
        let resource = match req.info {
            Some(RequestInfo::Resource(r)) => Some(r),
            _ => None,
        };
        let labels = match resource {
            Some(r) => resource_labels(r, req.query, req.headers),
            None => health_labels(req.method, req.path)?,
        };
        let hash = labels.hash();
        if let Ok(found) = self.find(hash, &labels) {
            return Some(found);
        }
        if let Some(r) = resource
            && !known(r)
        {
            return None;
        }
        let _adding = self
            .adding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Another request may have added it meanwhile.
        let empty = match self.find(hash, &labels) {
            Ok(found) => return Some(found),
            Err(empty) => empty,
        };
        let Some(slot) = empty else {
            if !self.full.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "{SLOTS} request metric series: requests of new label sets are not counted"
                );
            }
            return None;
        };
        let series = Box::new(Series::new(labels.owned(), hash));
        let _ = self.slots[slot].set(series);
        Some(SeriesId(slot))
    }

    /// The slot holding `labels`, else the first empty slot of its probe sequence
    /// (`None`: the table is full).
    fn find(&self, hash: u64, labels: &Labels<'_>) -> Result<SeriesId, Option<usize>> {
        let mut i = (hash >> (64 - SLOTS_BITS)) as usize;
        for _ in 0..SLOTS {
            match self.slots[i].get() {
                Some(s) if s.hash == hash && s.labels.borrowed() == *labels => {
                    return Ok(SeriesId(i));
                }
                Some(_) => i = (i + 1) & (SLOTS - 1),
                None => return Err(Some(i)),
            }
        }
        Err(None)
    }

    fn get(&self, id: SeriesId) -> Option<&Series> {
        self.slots.get(id.0)?.get().map(|b| &**b)
    }

    /// Records the response to a request of `series` that started at `started` and
    /// took `took` (the response is ready). A watch being streamed is recorded when its
    /// body ends (its client left, it timed out, or the server shut it), with its whole
    /// duration.
    pub fn finish(
        self: &Arc<Self>,
        series: Option<SeriesId>,
        started: Instant,
        took: Duration,
        resp: Response<Body>,
    ) -> Response<Body> {
        let Some((id, s)) = series.and_then(|id| Some((id, self.get(id)?))) else {
            return resp;
        };
        let code = resp.status().as_u16();
        if s.is_watch() && resp.status().is_success() {
            s.longrunning.fetch_add(1, Ordering::Relaxed);
            s.longrunning_seen.store(true, Ordering::Relaxed);
            let streaming = Streaming {
                requests: self.clone(),
                id,
                started,
                code,
            };
            return resp.map(|inner| {
                WatchBody {
                    inner,
                    _streaming: streaming,
                }
                .boxed()
            });
        }
        s.record(code, took);
        resp
    }

    /// A place among the requests executing now: `mutating` or `readOnly` (kube's
    /// `apiserver_current_inflight_requests`).
    pub fn executing(&self, mutating: bool) -> Executing<'_> {
        let g = &self.inflight[usize::from(mutating)];
        let now = g.now.fetch_add(1, Ordering::Relaxed) + 1;
        g.high.fetch_max(now, Ordering::Relaxed);
        Executing(g)
    }

    /// Starts the next second of the in-flight maximum.
    pub fn tick(&self) {
        for g in &self.inflight {
            let high = g
                .high
                .swap(g.now.load(Ordering::Relaxed), Ordering::Relaxed);
            g.last_second.store(high, Ordering::Relaxed);
        }
    }
}

/// kube's labels for a resource request.
fn resource_labels<'a>(r: &'a ResourceRequest, query: &Query, headers: &HeaderMap) -> Labels<'a> {
    let subresource = r.subresource.as_deref().unwrap_or("");
    let mut verb = match r.verb {
        Verb::Get => "GET",
        Verb::List => "LIST",
        Verb::Watch => "WATCH",
        Verb::Create => "POST",
        Verb::Update => "PUT",
        Verb::Patch => {
            let apply = headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes() == b"application/apply-patch+yaml");
            if apply { "APPLY" } else { "PATCH" }
        }
        Verb::Delete | Verb::DeleteCollection => "DELETE",
    };
    if CONNECT_SUBRESOURCES.contains(&subresource) {
        verb = "CONNECT";
    }
    let scope = if r.name.is_some() || r.verb == Verb::Create {
        "resource"
    } else if r.namespace.is_some() {
        "namespace"
    } else {
        "cluster"
    };
    Labels {
        verb,
        dry_run: dry_run(query),
        group: &r.group,
        version: &r.version,
        resource: &r.resource,
        subresource,
        scope,
        component: "apiserver",
    }
}

/// kube's labels for a health check: the path as the subresource, no component.
fn health_labels(method: &Method, path: &str) -> Option<Labels<'static>> {
    if *method != Method::GET && *method != Method::HEAD {
        return None;
    }
    let path = ["/livez", "/readyz", "/healthz"]
        .into_iter()
        .find(|p| *p == path)?;
    Some(Labels {
        verb: "GET",
        dry_run: "",
        group: "",
        version: "",
        resource: "",
        subresource: path,
        scope: "",
        component: "",
    })
}

/// kube's `dry_run` label: empty without `dryRun`, `All` when every value is `All`,
/// else `invalid`.
fn dry_run(query: &Query) -> &'static str {
    let mut any = false;
    for v in query.get_all("dryRun") {
        if v != "All" {
            return "invalid";
        }
        any = true;
    }
    if any { "All" } else { "" }
}

/// A watch streaming: counted in `apiserver_longrunning_requests` until dropped, then
/// in `apiserver_request_total` and `apiserver_request_duration_seconds`.
struct Streaming {
    requests: Arc<Requests>,
    id: SeriesId,
    started: Instant,
    code: u16,
}

impl Drop for Streaming {
    fn drop(&mut self) {
        if let Some(s) = self.requests.get(self.id) {
            s.longrunning.fetch_sub(1, Ordering::Relaxed);
            s.record(self.code, self.started.elapsed());
        }
    }
}

/// A watch's body, with what records its end.
struct WatchBody {
    inner: Body,
    _streaming: Streaming,
}

impl HttpBody for WatchBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Writes the request metrics at each scrape.
#[derive(Debug)]
pub struct RequestsCollector(pub Arc<Requests>);

impl Collector for RequestsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let requests = &self.0;
        let mut all: Vec<&Series> = requests
            .slots
            .iter()
            .filter_map(|s| s.get())
            .map(|b| &**b)
            .collect();
        all.sort_by(|a, b| {
            let (a, b) = (a.labels.borrowed(), b.labels.borrowed());
            (
                a.group,
                a.version,
                a.resource,
                a.subresource,
                a.verb,
                a.scope,
            )
                .cmp(&(
                    b.group,
                    b.version,
                    b.resource,
                    b.subresource,
                    b.verb,
                    b.scope,
                ))
        });

        let mut e = encoder.encode_descriptor(
            "apiserver_request",
            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            None,
            MetricType::Counter,
        )?;
        for s in &all {
            let mut codes: Vec<(std::borrow::Cow<'static, str>, u64)> = CODE_LABELS
                .iter()
                .zip(&s.codes)
                .map(|(c, n)| ((*c).into(), n.load(Ordering::Relaxed)))
                .filter(|(_, n)| *n > 0)
                .collect();
            codes.extend(
                s.other_codes
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .iter()
                    .map(|(c, n)| (c.to_string().into(), *n)),
            );
            for (code, n) in codes {
                let labels = with_code(s.labels.borrowed(), &code);
                ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
            }
        }

        let mut e = encoder.encode_descriptor(
            "apiserver_request_duration_seconds",
            "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            None,
            MetricType::Histogram,
        )?;
        for s in &all {
            let l = s.labels.borrowed();
            s.duration.encode(
                &mut e,
                &[
                    ("verb", l.verb),
                    ("dry_run", l.dry_run),
                    ("group", l.group),
                    ("version", l.version),
                    ("resource", l.resource),
                    ("subresource", l.subresource),
                    ("scope", l.scope),
                    ("component", l.component),
                ],
            )?;
        }

        let mut e = encoder.encode_descriptor(
            "apiserver_longrunning_requests",
            "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
            None,
            MetricType::Gauge,
        )?;
        for s in all
            .iter()
            .filter(|s| s.longrunning_seen.load(Ordering::Relaxed))
        {
            let l = s.labels.borrowed();
            let labels = [
                ("verb", l.verb),
                ("group", l.group),
                ("version", l.version),
                ("resource", l.resource),
                ("subresource", l.subresource),
                ("scope", l.scope),
                ("component", l.component),
            ];
            ConstGauge::new(s.longrunning.load(Ordering::Relaxed))
                .encode(e.encode_family(&labels)?)?;
        }

        let mut e = encoder.encode_descriptor(
            "apiserver_current_inflight_requests",
            "[STABLE] Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            None,
            MetricType::Gauge,
        )?;
        for (kind, g) in ["readOnly", "mutating"].into_iter().zip(&requests.inflight) {
            // The last whole second, or this one when it has seen more.
            let v = g
                .last_second
                .load(Ordering::Relaxed)
                .max(g.high.load(Ordering::Relaxed));
            ConstGauge::new(v).encode(e.encode_family(&[("request_kind", kind)])?)?;
        }
        Ok(())
    }
}

/// The label set of `apiserver_request_total`: the series' labels and `code`.
fn with_code<'a>(l: Labels<'a>, code: &'a str) -> [(&'static str, &'a str); 9] {
    [
        ("verb", l.verb),
        ("dry_run", l.dry_run),
        ("group", l.group),
        ("version", l.version),
        ("resource", l.resource),
        ("subresource", l.subresource),
        ("scope", l.scope),
        ("component", l.component),
        ("code", code),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]
    use super::*;
    use wasmgate_apimachinery::request_info;

    fn labels_of(method: Method, uri: &str, content_type: Option<&str>) -> String {
        let (path, q) = uri.split_once('?').unwrap_or((uri, ""));
        let query = Query::parse(Some(q));
        let watch = query.bool("watch").unwrap().unwrap_or(false);
        let info = request_info::parse(&method, path, watch).unwrap();
        let mut headers = HeaderMap::new();
        if let Some(ct) = content_type {
            headers.insert(header::CONTENT_TYPE, ct.parse().unwrap());
        }
        let RequestInfo::Resource(r) = &info else {
            panic!("{info:?}")
        };
        let l = resource_labels(r, &query, &headers);
        format!(
            "{} {} {}/{}/{}/{} {}",
            l.verb, l.scope, l.group, l.version, l.resource, l.subresource, l.dry_run
        )
    }

    /// kube's verb and scope for each kind of request (`CanonicalVerb`, `CleanVerb`,
    /// `CleanScope` and the installer's `requestScope`).
    #[test]
    fn verbs_and_scopes_as_kube_reports_them() {
        let cases = [
            (
                Method::GET,
                "/api/v1/namespaces/d/configmaps/a",
                None,
                "GET resource /v1/configmaps/ ",
            ),
            (
                Method::HEAD,
                "/api/v1/namespaces/d/configmaps/a",
                None,
                "GET resource /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d/configmaps",
                None,
                "LIST namespace /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/configmaps",
                None,
                "LIST cluster /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/namespaces",
                None,
                "LIST cluster /v1/namespaces/ ",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d",
                None,
                "GET resource /v1/namespaces/ ",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d/configmaps?watch=true",
                None,
                "WATCH namespace /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d/configmaps?watch=1",
                None,
                "WATCH namespace /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/d/configmaps",
                None,
                "WATCH namespace /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/d/configmaps/a",
                None,
                "WATCH resource /v1/configmaps/ ",
            ),
            (
                Method::GET,
                "/api/v1/configmaps?watch=true",
                None,
                "WATCH cluster /v1/configmaps/ ",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/d/configmaps",
                None,
                "POST resource /v1/configmaps/ ",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/d/configmaps?dryRun=All",
                None,
                "POST resource /v1/configmaps/ All",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/d/configmaps?dryRun=All&dryRun=x",
                None,
                "POST resource /v1/configmaps/ invalid",
            ),
            (
                Method::POST,
                "/api/v1/namespaces",
                None,
                "POST resource /v1/namespaces/ ",
            ),
            (
                Method::POST,
                "/api/v1/namespaces/d/serviceaccounts/s/token",
                None,
                "POST resource /v1/serviceaccounts/token ",
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/d/configmaps/a",
                None,
                "PUT resource /v1/configmaps/ ",
            ),
            (
                Method::PUT,
                "/apis/example.com/v1/widgets/a/status",
                None,
                "PUT resource example.com/v1/widgets/status ",
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/d/configmaps/a",
                Some("application/merge-patch+json"),
                "PATCH resource /v1/configmaps/ ",
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/d/configmaps/a",
                Some("application/apply-patch+yaml"),
                "APPLY resource /v1/configmaps/ ",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/d/configmaps/a",
                None,
                "DELETE resource /v1/configmaps/ ",
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/d/configmaps",
                None,
                "DELETE namespace /v1/configmaps/ ",
            ),
            (
                Method::DELETE,
                "/apis/apps/v1/deployments",
                None,
                "DELETE cluster apps/v1/deployments/ ",
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d/pods/p/log",
                None,
                "CONNECT resource /v1/pods/log ",
            ),
        ];
        for (method, uri, ct, want) in cases {
            assert_eq!(labels_of(method.clone(), uri, ct), want, "{method} {uri}");
        }
    }

    /// Not a check, a measurement: what counting one request costs (its series found,
    /// then its answer recorded), on one thread and on two threads at once hammering the
    /// same series (`cargo test --release -p wasmgate-apiserver --lib
    /// metrics::requests::tests::cost -- --ignored --nocapture`).
    #[test]
    #[ignore = "a measurement, meaningful in release builds"]
    fn cost_per_request() {
        let r = Arc::new(Requests::default());
        let run = |r: &Arc<Requests>, n: u32| {
            let query = Query::parse(Some("timeout=32s"));
            let headers = HeaderMap::new();
            let path = "/api/v1/namespaces/bench/configmaps/x";
            let info = request_info::parse(&Method::GET, path, false).unwrap();
            let req = Request {
                method: &Method::GET,
                path,
                query: &query,
                headers: &headers,
                info: Some(&info),
            };
            let mut resp = Response::new(wasmgate_apiserver_core::body::empty());
            let started = Instant::now();
            for _ in 0..n {
                let series = r.series(&req, |_| true);
                resp = r.finish(series, started, started.elapsed(), resp);
            }
            started.elapsed().as_nanos() as f64 / f64::from(n)
        };
        let n = 2_000_000;
        run(&r, n / 10);
        eprintln!("one thread: {:.0} ns per request", run(&r, n));
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| run(&r, n));
            let b = s.spawn(|| run(&r, n));
            (a.join().unwrap(), b.join().unwrap())
        });
        eprintln!("two threads, one series: {a:.0} and {b:.0} ns per request");
    }

    /// A series is made once per label set and found again without the registry.
    #[test]
    fn series_are_made_once_and_only_for_served_resources() {
        let r = Requests::default();
        let query = Query::parse(None);
        let headers = HeaderMap::new();
        let info =
            request_info::parse(&Method::GET, "/api/v1/namespaces/d/configmaps", false).unwrap();
        let req = Request {
            method: &Method::GET,
            path: "/api/v1/namespaces/d/configmaps",
            query: &query,
            headers: &headers,
            info: Some(&info),
        };
        assert!(r.series(&req, |_| false).is_none(), "not served: no series");
        let a = r.series(&req, |_| true).unwrap();
        let b = r.series(&req, |_| panic!("asked again")).unwrap();
        assert_eq!(a, b);
        let health = Request {
            method: &Method::GET,
            path: "/readyz",
            info: Some(&RequestInfo::NonResource),
            ..req
        };
        let h = r.series(&health, |_| panic!("not a resource")).unwrap();
        let h = r.get(h).unwrap();
        assert_eq!(
            (h.labels.subresource.as_ref(), h.labels.component),
            ("/readyz", "")
        );
        let metrics = Request {
            path: "/metrics",
            ..health
        };
        assert!(r.series(&metrics, |_| true).is_none());
    }
}

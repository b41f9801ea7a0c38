//! Closed-loop load scenarios: `create`, `get`, `update`, `list`. Each client keeps one
//! request in flight; a request counts when it completes inside the measured window.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use http::{Method, Request, Uri};
use serde::Serialize;

use crate::bench::{Bench, sleep_until, unix_nanos};
use crate::client::{Client, Endpoint, Failure, Reply, ReqBody, describe_failure};
use crate::objects::ObjectTemplate;
use crate::stats::{CpuMeter, CpuUse, Errors, Latency, Summary, Ticker, round3};
use crate::watchline::parse_object;

/// The result of one load scenario.
#[derive(Debug, Clone, Serialize)]
pub struct LoadReport {
    /// `create`, `get`, `update` or `list`.
    pub scenario: &'static str,
    /// Successful requests per second in the measured window.
    pub ops_per_s: f64,
    /// Successful requests in the measured window.
    pub ok: u64,
    /// Failed requests over the whole scenario (warm-up included).
    pub failed: u64,
    /// Latency of the successful requests in the measured window.
    pub latency: Summary,
    /// Failures by kind.
    pub errors: Errors,
    /// Response bytes per second (bodies only).
    pub response_mib_per_s: f64,
    /// Clients.
    pub concurrency: u32,
    /// Measured seconds.
    pub duration_s: f64,
    /// CPU used during the measured window.
    pub cpu: CpuUse,
    /// Objects in each list response (list only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_items: Option<u64>,
    /// The encoding of list responses: `json`, `table` or `protobuf` (list only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_encoding: Option<&'static str>,
    /// Bytes of each list response body (list only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_bytes: Option<u64>,
    /// The latencies `latency` sums up, to aggregate several replicas' reports.
    #[serde(skip)]
    pub histogram: Latency,
}

impl LoadReport {
    /// The figures of several replicas run at once, as one: requests, bytes and clients
    /// add up; latency percentiles are those of every replica's requests together; the
    /// CPU use is the first report's (every report measures the same processes over the
    /// same window).
    pub fn aggregate(reports: &[LoadReport]) -> anyhow::Result<LoadReport> {
        let Some((first, rest)) = reports.split_first() else {
            anyhow::bail!("no report to aggregate");
        };
        let mut all = first.clone();
        for r in rest {
            all.ops_per_s = round3(all.ops_per_s + r.ops_per_s);
            all.ok += r.ok;
            all.failed += r.failed;
            all.histogram.merge(&r.histogram)?;
            all.errors.merge(&r.errors);
            all.response_mib_per_s = round3(all.response_mib_per_s + r.response_mib_per_s);
            all.concurrency += r.concurrency;
        }
        all.latency = all.histogram.summary();
        Ok(all)
    }
}

impl std::fmt::Display for LoadReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<7} {:>9.1} ops/s  {}  ok {}  failed {}  ({})",
            self.scenario, self.ops_per_s, self.latency, self.ok, self.errors, self.cpu
        )?;
        if let Some(n) = self.list_items {
            write!(
                f,
                "  [{n} items/list, {} {} B/list, {:.1} MiB/s]",
                self.list_encoding.unwrap_or("json"),
                self.list_bytes.unwrap_or(0),
                self.response_mib_per_s
            )?;
        }
        Ok(())
    }
}

/// What one client does, request after request.
trait Op: Send + 'static {
    /// The next request, and whether it counts (bookkeeping requests do not).
    fn next(&mut self, ep: &Endpoint) -> (Request<ReqBody>, bool);
    /// Whether the response body is needed on success.
    fn keep_body(&self) -> bool {
        false
    }
    /// A 2xx response to the last request.
    fn succeeded(&mut self, _reply: &Reply) {}
    /// The last request failed.
    fn failed(&mut self) {}
}

/// POST a new object every time.
struct CreateOp {
    uri: Uri,
    tpl: ObjectTemplate,
    prefix: String,
    name: String,
    seq: u64,
}

impl Op for CreateOp {
    fn next(&mut self, ep: &Endpoint) -> (Request<ReqBody>, bool) {
        self.name.clear();
        self.name.push_str(&self.prefix);
        let _ = write!(self.name, "{:09}", self.seq);
        self.seq += 1;
        let body = self.tpl.create(&self.name, unix_nanos());
        (ep.request(Method::POST, self.uri.clone(), body), true)
    }
}

/// GET existing objects round-robin.
struct GetOp {
    uris: Arc<Vec<Uri>>,
    i: usize,
}

impl Op for GetOp {
    fn next(&mut self, ep: &Endpoint) -> (Request<ReqBody>, bool) {
        self.i = (self.i + 1) % self.uris.len().max(1);
        let uri = self.uris.get(self.i).cloned().unwrap_or_default();
        (ep.request(Method::GET, uri, bytes::Bytes::new()), true)
    }
}

/// One object an updater owns.
struct Owned {
    name: String,
    uri: Uri,
    rv: u64,
    /// The resourceVersion is unknown (after a failure): GET it before the next PUT.
    stale: bool,
}

/// PUT the objects this client owns, round-robin, each with its current resourceVersion.
struct UpdateOp {
    tpl: ObjectTemplate,
    objs: Vec<Owned>,
    i: usize,
    seq: u64,
}

impl Op for UpdateOp {
    fn next(&mut self, ep: &Endpoint) -> (Request<ReqBody>, bool) {
        // After a failure, refresh the same object; otherwise move on.
        if !self.objs.get(self.i).is_some_and(|o| o.stale) {
            self.i = (self.i + 1) % self.objs.len().max(1);
        }
        let Some(o) = self.objs.get(self.i) else {
            return (
                ep.request(Method::GET, Uri::default(), bytes::Bytes::new()),
                false,
            );
        };
        if o.stale {
            return (
                ep.request(Method::GET, o.uri.clone(), bytes::Bytes::new()),
                false,
            );
        }
        self.seq += 1;
        let body = self.tpl.update(&o.name, o.rv, self.seq);
        (ep.request(Method::PUT, o.uri.clone(), body), true)
    }

    fn keep_body(&self) -> bool {
        true
    }

    fn succeeded(&mut self, reply: &Reply) {
        if let Some(o) = self.objs.get_mut(self.i) {
            match parse_object(&reply.body)
                .ok()
                .and_then(|h| h.metadata.revision())
            {
                Some(rv) => {
                    o.rv = rv;
                    o.stale = false;
                }
                None => o.stale = true,
            }
        }
    }

    fn failed(&mut self) {
        if let Some(o) = self.objs.get_mut(self.i) {
            o.stale = true;
        }
    }
}

/// Server-side apply of the objects this client owns, round-robin: the whole
/// configuration with a new counter each time, no resourceVersion (`SSA-01`).
struct ApplyOp {
    tpl: ObjectTemplate,
    objs: Vec<(String, Uri)>,
    i: usize,
    seq: u64,
}

/// The apply patch media type (kubectl sends JSON under it).
const APPLY_PATCH: http::HeaderValue =
    http::HeaderValue::from_static("application/apply-patch+yaml");

impl Op for ApplyOp {
    fn next(&mut self, ep: &Endpoint) -> (Request<ReqBody>, bool) {
        self.i = (self.i + 1) % self.objs.len().max(1);
        self.seq += 1;
        let Some((name, uri)) = self.objs.get(self.i) else {
            return (
                ep.request(Method::GET, Uri::default(), bytes::Bytes::new()),
                false,
            );
        };
        let mut req = ep.request(Method::PATCH, uri.clone(), self.tpl.apply(name, self.seq));
        req.headers_mut()
            .insert(http::header::CONTENT_TYPE, APPLY_PATCH);
        (req, true)
    }
}

/// LIST one collection.
struct ListOp {
    uri: Uri,
    /// The `Accept` header, when not JSON.
    accept: Option<&'static str>,
}

/// What kubectl get asks for.
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// What client-go asks for when configured with protobuf.
const PROTOBUF_ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

impl Op for ListOp {
    fn next(&mut self, ep: &Endpoint) -> (Request<ReqBody>, bool) {
        let mut req = ep.request(Method::GET, self.uri.clone(), bytes::Bytes::new());
        if let Some(accept) = self.accept {
            req.headers_mut()
                .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
        }
        (req, true)
    }
}

/// What one client measured.
struct WorkerOut {
    lat: Latency,
    ok: u64,
    bytes: u64,
    errors: Errors,
}

async fn worker<O: Op>(
    mut client: Client,
    mut op: O,
    warm_end: Instant,
    end: Instant,
    ticker: Option<Arc<Ticker>>,
) -> anyhow::Result<WorkerOut> {
    let mut out = WorkerOut {
        lat: Latency::new()?,
        ok: 0,
        bytes: 0,
        errors: Errors::default(),
    };
    while Instant::now() < end {
        let (req, counts) = op.next(client.endpoint());
        let method = req.method().clone();
        // Timed from here: building the request is the client's cost, not the server's.
        let start = Instant::now();
        let result = client.exchange(req, op.keep_body()).await;
        let done = Instant::now();
        let in_window = counts && done >= warm_end && done <= end;
        match result {
            Ok(reply) if reply.status.is_success() => {
                op.succeeded(&reply);
                if let Some(t) = &ticker
                    && counts
                {
                    t.ok(done - start);
                }
                if in_window {
                    out.lat.record(done - start);
                    out.ok += 1;
                    out.bytes += reply.body_len as u64;
                }
            }
            Ok(reply) => {
                op.failed();
                if let Some(t) = &ticker {
                    t.failed();
                }
                out.errors.status(reply.status.as_u16(), || {
                    describe_failure(&method, "request", &reply)
                });
            }
            Err(Failure::Timeout) => {
                op.failed();
                if let Some(t) = &ticker {
                    t.failed();
                }
                out.errors
                    .timeout(|| format!("{method}: no response within the timeout"));
            }
            Err(Failure::Transport(e)) => {
                op.failed();
                if let Some(t) = &ticker {
                    t.failed();
                }
                out.errors.transport(|| format!("{method}: {e}"));
                // Do not spin on a server that is gone.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    Ok(out)
}

impl Bench {
    /// Runs one client per op for warm-up + duration and sums up.
    async fn run_load<O: Op>(
        &self,
        scenario: &'static str,
        ops: Vec<O>,
    ) -> anyhow::Result<LoadReport> {
        let pool = self.ep.h2_pool(self.args.connections as usize).await?;
        let mut clients = Vec::with_capacity(ops.len());
        for i in 0..ops.len() {
            clients.push(self.ep.client(pool.get(i % pool.len().max(1))).await?);
        }
        let start = Instant::now();
        let warm_end = start + self.args.warmup;
        let end = warm_end + self.args.duration;
        let ticker = self.args.progress.then(|| Arc::new(Ticker::default()));
        let printer = ticker.as_ref().map(|t| t.spawn_printer(scenario, start));
        let tasks: Vec<_> = clients
            .into_iter()
            .zip(ops)
            .map(|(c, op)| tokio::spawn(worker(c, op, warm_end, end, ticker.clone())))
            .collect();
        sleep_until(warm_end).await;
        let cpu = CpuMeter::start(self.args.server_pid, self.args.server_data_dir.as_deref());
        sleep_until(end).await;
        let cpu = cpu.stop();
        if let Some(p) = printer {
            p.abort();
        }
        let mut lat = Latency::new()?;
        let (mut ok, mut bytes, mut errors) = (0, 0, Errors::default());
        for t in tasks {
            let w = t.await.context("load worker")??;
            lat.merge(&w.lat)?;
            ok += w.ok;
            bytes += w.bytes;
            errors.merge(&w.errors);
        }
        let secs = self.args.duration.as_secs_f64().max(1e-9);
        Ok(LoadReport {
            scenario,
            ops_per_s: round3(ok as f64 / secs),
            ok,
            failed: errors.total,
            latency: lat.summary(),
            histogram: lat,
            errors,
            response_mib_per_s: round3(bytes as f64 / secs / (1024.0 * 1024.0)),
            concurrency: self.args.concurrency,
            duration_s: secs,
            cpu,
            list_items: None,
            list_encoding: None,
            list_bytes: None,
        })
    }

    /// `create`: every client POSTs new ConfigMaps.
    pub async fn create(&self) -> anyhow::Result<LoadReport> {
        let uri = self.ep.uri(&self.collection(&self.args.namespace))?;
        let ops = (0..self.args.concurrency)
            .map(|w| CreateOp {
                uri: uri.clone(),
                tpl: self.tpl.clone(),
                prefix: format!("c-{}-{w:04}-", self.run_id),
                name: String::with_capacity(32),
                seq: 0,
            })
            .collect();
        self.run_load("create", ops).await
    }

    /// Creates `--objects` objects named `<letter>-<run>-<i>`; returns names and versions.
    async fn working_set(&self, letter: char) -> anyhow::Result<(Vec<String>, Vec<u64>)> {
        let n = self.args.objects.max(self.args.concurrency) as usize;
        let names: Arc<Vec<String>> = Arc::new(
            (0..n)
                .map(|i| format!("{letter}-{}-{i:07}", self.run_id))
                .collect(),
        );
        let rvs = self
            .populate(
                &self.args.namespace,
                names.clone(),
                self.args.concurrency as usize,
            )
            .await?;
        Ok((names.to_vec(), rvs))
    }

    fn object_uri(&self, name: &str) -> anyhow::Result<Uri> {
        self.ep
            .uri(&format!("{}/{name}", self.collection(&self.args.namespace)))
    }

    /// `get`: GET of existing objects.
    pub async fn get(&self) -> anyhow::Result<LoadReport> {
        let (names, _) = self.working_set('g').await?;
        let uris = Arc::new(
            names
                .iter()
                .map(|n| self.object_uri(n))
                .collect::<anyhow::Result<Vec<_>>>()?,
        );
        let c = self.args.concurrency as usize;
        let ops = (0..c)
            .map(|w| GetOp {
                uris: uris.clone(),
                i: w * uris.len() / c,
            })
            .collect();
        self.run_load("get", ops).await
    }

    /// `update`: PUT with the current resourceVersion; each client owns its objects.
    pub async fn update(&self) -> anyhow::Result<LoadReport> {
        let (names, rvs) = self.working_set('u').await?;
        let c = self.args.concurrency as usize;
        let mut ops: Vec<UpdateOp> = (0..c)
            .map(|_| UpdateOp {
                tpl: self.tpl.clone(),
                objs: Vec::new(),
                i: 0,
                seq: 0,
            })
            .collect();
        for (i, (name, rv)) in names.into_iter().zip(rvs).enumerate() {
            if let Some(op) = ops.get_mut(i % c) {
                op.objs.push(Owned {
                    uri: self.object_uri(&name)?,
                    name,
                    rv,
                    stale: false,
                });
            }
        }
        self.run_load("update", ops).await
    }

    /// `apply`: server-side apply (manager `wasmgate-bench`) of existing objects, each
    /// client its own, as `update` does with PUT.
    pub async fn apply(&self) -> anyhow::Result<LoadReport> {
        let (names, _) = self.working_set('a').await?;
        let c = self.args.concurrency as usize;
        let mut ops: Vec<ApplyOp> = (0..c)
            .map(|_| ApplyOp {
                tpl: self.tpl.clone(),
                objs: Vec::new(),
                i: 0,
                seq: 0,
            })
            .collect();
        for (i, name) in names.into_iter().enumerate() {
            let uri = self.ep.uri(&format!(
                "{}/{name}?fieldManager=wasmgate-bench",
                self.collection(&self.args.namespace)
            ))?;
            if let Some(op) = ops.get_mut(i % c) {
                op.objs.push((name, uri));
            }
        }
        self.run_load("apply", ops).await
    }

    /// `list`: LIST of a collection of `--list-size` objects, in namespace `<ns>-list`
    /// (emptied and refilled first, so the collection has exactly that many).
    pub async fn list(&self) -> anyhow::Result<LoadReport> {
        let ns = format!("{}-list", self.args.namespace);
        let mut ctl = self.ep.client(None).await?;
        self.ensure_namespace(&mut ctl, &ns).await?;
        let coll = self.collection(&ns);
        let r = self.call(&mut ctl, Method::DELETE, &coll, None).await?;
        if !r.status.is_success() {
            anyhow::bail!(
                "emptying {ns}: {}",
                describe_failure(&Method::DELETE, &coll, &r)
            );
        }
        let n = self.args.list_size as usize;
        let names: Arc<Vec<String>> = Arc::new(
            (0..n)
                .map(|i| format!("l-{}-{i:07}", self.run_id))
                .collect(),
        );
        self.populate(&ns, names, self.args.concurrency as usize)
            .await?;
        let path = match self.args.list_limit.unwrap_or(self.args.list_size) {
            0 => coll.clone(),
            limit => format!("{coll}?limit={limit}"),
        };
        let (encoding, accept) = if self.args.list_protobuf {
            ("protobuf", Some(PROTOBUF_ACCEPT))
        } else if self.args.list_table {
            ("table", Some(TABLE_ACCEPT))
        } else {
            ("json", None)
        };
        // Check the collection once, in the encoding measured: warn when the list does
        // not return exactly the objects just made (the run goes on).
        let mut req = self
            .ep
            .request(Method::GET, self.ep.uri(&path)?, bytes::Bytes::new());
        if let Some(accept) = accept {
            req.headers_mut()
                .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
        }
        let r = ctl
            .exchange(req, true)
            .await
            .map_err(|e| anyhow::anyhow!("GET {path}: {e}"))?;
        if !r.status.is_success() {
            anyhow::bail!("{}", describe_failure(&Method::GET, &path, &r));
        }
        let v: serde_json::Value = if self.args.list_protobuf {
            if !r.body.starts_with(&wasmgate_apimachinery::protobuf::MAGIC) {
                anyhow::bail!("GET {path} in protobuf: the reply is not protobuf");
            }
            wasmgate_apimachinery::protobuf::decode(&r.body).context("protobuf list response")?
        } else {
            serde_json::from_slice(&r.body).context("list response")?
        };
        let items = v["items"].as_array().map_or(0, Vec::len) as u64;
        let list_bytes = r.body.len() as u64;
        let want = match self.args.list_limit {
            Some(l) if l > 0 => n.min(l as usize),
            _ => n,
        };
        if items != want as u64 {
            eprintln!("warning: list of {ns} returned {items} items, expected {want}");
        }
        let uri = self.ep.uri(&path)?;
        let ops = (0..self.args.concurrency)
            .map(|_| ListOp {
                uri: uri.clone(),
                accept,
            })
            .collect();
        let mut report = self.run_load("list", ops).await?;
        report.list_items = Some(items);
        report.list_encoding = Some(encoding);
        report.list_bytes = Some(list_bytes);
        Ok(report)
    }
}

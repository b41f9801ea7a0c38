//! The benchmark's shared context: endpoint, parameters, run id, and setup helpers
//! (namespaces, pre-created objects, the webhook, policy and Wasm plugins a run binds).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, anyhow, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use rand::Rng as _;

use crate::cli::{Args, Kind};
use crate::client::{Client, Endpoint, Reply, describe_failure};
use crate::kubeconfig;
use crate::objects::{self, ObjectTemplate};
use crate::plugins::{self, Binding, Readiness};
use crate::watchline::parse_object;

/// Everything the scenarios share.
#[derive(Debug)]
pub struct Bench {
    /// The server.
    pub ep: Arc<Endpoint>,
    /// The server watchers connect to (`--watch-kubeconfig`; else `ep`).
    pub watch_ep: Arc<Endpoint>,
    /// The flags.
    pub args: Args,
    /// A fresh id in every object name of this run, so runs never collide.
    pub run_id: String,
    /// ConfigMap bodies.
    pub tpl: ObjectTemplate,
    /// The Wasm plugins bound for the run (`--plugins`, `--plugin-pair`), each with its
    /// `WasmPlugin` manifest.
    pub plugins: Vec<(Binding, serde_json::Value)>,
}

/// Nanoseconds since the Unix epoch, now.
pub fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// A short random id of lowercase letters and digits.
pub fn new_run_id() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..6)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

impl Bench {
    /// Reads the kubeconfig, checks the server answers and prepares the namespace.
    pub async fn new(args: Args) -> anyhow::Result<Self> {
        if !objects::is_dns_label(&args.namespace) || args.namespace.len() > 58 {
            bail!(
                "--namespace {:?} must be a DNS label (lowercase letters, digits, '-') of at most 58 characters",
                args.namespace
            );
        }
        // The plugins' modules are checked before anything is created.
        let plugins = plugins::bindings(&args)
            .map_err(anyhow::Error::msg)?
            .into_iter()
            .map(|b| {
                let path = plugins::module_path(&args.plugin_dist, b.module)?;
                let manifest = plugins::manifest(&b, &path);
                Ok((b, manifest))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let creds = kubeconfig::load(args.kubeconfig())?;
        let ep = Arc::new(Endpoint::new(&creds, args.http2, args.timeout).await?);
        let watch_ep = match &args.watch_kubeconfig {
            Some(path) => {
                let creds = kubeconfig::load(path)?;
                Arc::new(Endpoint::new(&creds, args.http2, args.timeout).await?)
            }
            None => ep.clone(),
        };
        let bench = Bench {
            ep,
            watch_ep,
            tpl: match args.kind {
                // N copies of the owner policy: the ConfigMaps carry the owner it asks for
                // (the pair's stamper sets it).
                Kind::Configmap if args.plugins.is_some() => {
                    ObjectTemplate::owned(args.object_size, plugins::OWNER)
                }
                Kind::Configmap => ObjectTemplate::new(args.object_size),
                Kind::Widget => ObjectTemplate::widget(args.object_size),
            },
            run_id: new_run_id(),
            plugins,
            args,
        };
        let mut c = bench
            .ep
            .client(None)
            .await
            .with_context(|| format!("cannot reach the server at {}", creds.server))?;
        let version = bench.call(&mut c, Method::GET, "/version", None).await?;
        if !version.status.is_success() {
            bail!("{}", describe_failure(&Method::GET, "/version", &version));
        }
        bench
            .ensure_namespace(&mut c, &bench.args.namespace)
            .await?;
        if bench.args.kind == Kind::Widget {
            bench.ensure_widget_crd(&mut c).await?;
        }
        if bench.args.webhook {
            if bench.args.kind != Kind::Widget {
                bail!("--webhook validates widgets: use it with --kind widget");
            }
            bench.install_webhook(&mut c).await?;
        }
        if bench.args.policy {
            if bench.args.kind != Kind::Widget {
                bail!("--policy validates widgets: use it with --kind widget");
            }
            bench.install_policy(&mut c).await?;
        }
        if !bench.plugins.is_empty()
            && let Err(e) = bench.install_plugins(&mut c).await
        {
            if let Err(e) = bench.clean_up().await {
                eprintln!("wasmgate-bench: cleaning up: {e:#}");
            }
            return Err(e);
        }
        Ok(bench)
    }

    /// How long the plugins may take to become Ready.
    const PLUGINS_READY_WITHIN: Duration = Duration::from_secs(30);

    /// Creates the run's `WasmPlugin`s (after removing every one an earlier run left) and
    /// waits until each is Ready; fails with the Ready condition of one that is refused or
    /// not Ready in time.
    async fn install_plugins(&self, c: &mut Client) -> anyhow::Result<()> {
        let leftovers = format!(
            "{}?labelSelector={}%3D{}",
            plugins::COLLECTION,
            plugins::MANAGED_BY.0.replace('/', "%2F"),
            plugins::MANAGED_BY.1
        );
        let r = self.call(c, Method::DELETE, &leftovers, None).await?;
        if !r.status.is_success() {
            bail!("{}", describe_failure(&Method::DELETE, &leftovers, &r));
        }
        for (b, manifest) in &self.plugins {
            let r = self
                .call(
                    c,
                    Method::POST,
                    plugins::COLLECTION,
                    Some(Bytes::from(manifest.to_string())),
                )
                .await?;
            if !r.status.is_success() {
                bail!(
                    "creating WasmPlugin {}: {}",
                    b.name,
                    describe_failure(&Method::POST, plugins::COLLECTION, &r)
                );
            }
        }
        let deadline = tokio::time::Instant::now() + Self::PLUGINS_READY_WITHIN;
        for (b, _) in &self.plugins {
            let path = format!("{}/{}", plugins::COLLECTION, b.name);
            loop {
                let r = self.call(c, Method::GET, &path, None).await?;
                if !r.status.is_success() {
                    bail!("{}", describe_failure(&Method::GET, &path, &r));
                }
                let obj: serde_json::Value =
                    serde_json::from_slice(&r.body).context("WasmPlugin is not JSON")?;
                match plugins::readiness(&obj) {
                    Readiness::Ready => break,
                    Readiness::Failed(why) => bail!("WasmPlugin {} is not Ready: {why}", b.name),
                    Readiness::Pending(why) if tokio::time::Instant::now() >= deadline => bail!(
                        "WasmPlugin {} not Ready within {:?}: {why}",
                        b.name,
                        Self::PLUGINS_READY_WITHIN
                    ),
                    Readiness::Pending(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
        Ok(())
    }

    /// The policy and binding `--policy` installs (examples/policies/widgets.yaml).
    const POLICY: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    const POLICY_BINDING: &str =
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

    /// Creates the example policy and its binding (replacing ones left by an earlier run).
    async fn install_policy(&self, c: &mut Client) -> anyhow::Result<()> {
        const DOCS: &str = include_str!("../../../examples/policies/widgets.yaml");
        for (collection, doc) in [Self::POLICY, Self::POLICY_BINDING]
            .into_iter()
            .zip(DOCS.split("\n---\n"))
        {
            self.call(c, Method::DELETE, &format!("{collection}/widgets"), None)
                .await?;
            let mut req = self.ep.request(
                Method::POST,
                self.ep.uri(collection)?,
                Bytes::from(doc.to_owned()),
            );
            req.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/yaml"),
            );
            let r = c
                .exchange(req, true)
                .await
                .map_err(|e| anyhow!("POST {collection}: {e}"))?;
            if !r.status.is_success() {
                bail!("{}", describe_failure(&Method::POST, collection, &r));
            }
        }
        eprintln!("wasmgate-bench: widgets validated by the ValidatingAdmissionPolicy widgets");
        Ok(())
    }

    /// The configuration `--webhook` installs.
    const WEBHOOK_CONFIGURATION: &str =
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/wasmgate-bench";

    /// Starts the webhook fixture and points a ValidatingWebhookConfiguration for widgets at
    /// it (replacing one left by an earlier run).
    async fn install_webhook(&self, c: &mut Client) -> anyhow::Result<()> {
        let hook = wasmgate_fixtures::Webhook::start()
            .await
            .map_err(|e| anyhow!("starting the webhook: {e}"))?;
        let config = serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "wasmgate-bench"},
            "webhooks": [{
                "name": "widgets.bench.wasmgate.dev",
                "clientConfig": hook.client_config("/widgets/validate"),
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["example.com"], "apiVersions": ["*"], "resources": ["widgets"]}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        });
        self.call(c, Method::DELETE, Self::WEBHOOK_CONFIGURATION, None)
            .await?;
        let path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
        let r = self
            .call(c, Method::POST, path, Some(Bytes::from(config.to_string())))
            .await?;
        if !r.status.is_success() {
            bail!("{}", describe_failure(&Method::POST, path, &r));
        }
        eprintln!(
            "wasmgate-bench: widgets validated by the webhook at {}",
            hook.url("/widgets/validate")
        );
        Ok(())
    }

    /// Removes what the run installed (`--webhook`, `--policy`, `--plugins`,
    /// `--plugin-pair`).
    pub async fn clean_up(&self) -> anyhow::Result<()> {
        if self.args.webhook {
            let mut c = self.ep.client(None).await?;
            self.call(&mut c, Method::DELETE, Self::WEBHOOK_CONFIGURATION, None)
                .await?;
        }
        if self.args.policy {
            let mut c = self.ep.client(None).await?;
            for collection in [Self::POLICY_BINDING, Self::POLICY] {
                self.call(
                    &mut c,
                    Method::DELETE,
                    &format!("{collection}/widgets"),
                    None,
                )
                .await?;
            }
        }
        if !self.plugins.is_empty() {
            let mut c = self.ep.client(None).await?;
            for (b, _) in &self.plugins {
                let path = format!("{}/{}", plugins::COLLECTION, b.name);
                let r = self.call(&mut c, Method::DELETE, &path, None).await?;
                if !r.status.is_success() && r.status != StatusCode::NOT_FOUND {
                    bail!("{}", describe_failure(&Method::DELETE, &path, &r));
                }
            }
        }
        Ok(())
    }

    /// The collection path of the benchmarked kind in namespace `ns`.
    pub fn collection(&self, ns: &str) -> String {
        match self.args.kind {
            Kind::Configmap => format!("/api/v1/namespaces/{ns}/configmaps"),
            Kind::Widget => format!("/apis/example.com/v1/namespaces/{ns}/widgets"),
        }
    }

    /// Creates the example Widget CRD if it is missing, and waits until it serves.
    async fn ensure_widget_crd(&self, client: &mut Client) -> anyhow::Result<()> {
        const CRD: &str = include_str!("../../../examples/crds/widgets.yaml");
        let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        let mut req = self.ep.request(
            Method::POST,
            self.ep.uri(crds)?,
            Bytes::from_static(CRD.as_bytes()),
        );
        req.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/yaml"),
        );
        let r = client
            .exchange(req, true)
            .await
            .map_err(|e| anyhow!("POST {crds}: {e}"))?;
        if !r.status.is_success() && r.status.as_u16() != 409 {
            bail!("{}", describe_failure(&Method::POST, crds, &r));
        }
        let probe = self.collection(&self.args.namespace);
        for _ in 0..100 {
            if self
                .call(client, Method::GET, &probe, None)
                .await?
                .status
                .is_success()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("the Widget CRD did not become served")
    }

    /// One setup request; transport failures are errors, statuses are the caller's.
    pub async fn call(
        &self,
        client: &mut Client,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Reply> {
        let req = self
            .ep
            .request(method.clone(), self.ep.uri(path)?, body.unwrap_or_default());
        client
            .exchange(req, true)
            .await
            .map_err(|e| anyhow!("{method} {path}: {e}"))
    }

    /// Creates namespace `ns` unless it exists; fails if it is being deleted.
    pub async fn ensure_namespace(&self, c: &mut Client, ns: &str) -> anyhow::Result<()> {
        let r = self
            .call(
                c,
                Method::POST,
                "/api/v1/namespaces",
                Some(objects::namespace(ns)),
            )
            .await?;
        match r.status {
            s if s.is_success() => Ok(()),
            StatusCode::CONFLICT => {
                let path = format!("/api/v1/namespaces/{ns}");
                let r = self.call(c, Method::GET, &path, None).await?;
                if !r.status.is_success() {
                    bail!("{}", describe_failure(&Method::GET, &path, &r));
                }
                let v: serde_json::Value =
                    serde_json::from_slice(&r.body).context("namespace is not JSON")?;
                if v["status"]["phase"] == "Terminating" {
                    bail!("namespace {ns} is being deleted; wait, or use another --namespace");
                }
                Ok(())
            }
            _ => bail!(
                "{}",
                describe_failure(&Method::POST, "/api/v1/namespaces", &r)
            ),
        }
    }

    /// Creates ConfigMaps `names` in `ns` with `concurrency` clients; returns each one's
    /// resourceVersion. Any failure fails the setup.
    pub async fn populate(
        &self,
        ns: &str,
        names: Arc<Vec<String>>,
        concurrency: usize,
    ) -> anyhow::Result<Vec<u64>> {
        let path = self.collection(ns);
        let uri = self.ep.uri(&path)?;
        let next = Arc::new(AtomicUsize::new(0));
        let pool = self.ep.h2_pool(self.args.connections as usize).await?;
        let mut tasks = Vec::new();
        for i in 0..concurrency.min(names.len()).max(1) {
            let mut client = self.ep.client(pool.get(i % pool.len().max(1))).await?;
            let (names, next, uri, tpl, path) = (
                names.clone(),
                next.clone(),
                uri.clone(),
                self.tpl.clone(),
                path.clone(),
            );
            tasks.push(tokio::spawn(async move {
                let mut out = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(name) = names.get(i) else { break };
                    let req = client.endpoint().request(
                        Method::POST,
                        uri.clone(),
                        tpl.create(name, unix_nanos()),
                    );
                    let r = client
                        .exchange(req, true)
                        .await
                        .map_err(|e| anyhow!("creating {name}: {e}"))?;
                    if !r.status.is_success() {
                        bail!("setup: {}", describe_failure(&Method::POST, &path, &r));
                    }
                    let rv = parse_object(&r.body)
                        .ok()
                        .and_then(|o| o.metadata.revision())
                        .ok_or_else(|| {
                            anyhow!("create response for {name} has no resourceVersion")
                        })?;
                    out.push((i, rv));
                }
                Ok(out)
            }));
        }
        let mut rvs = vec![0; names.len()];
        for t in tasks {
            for (i, rv) in t.await.context("setup task")?? {
                if let Some(slot) = rvs.get_mut(i) {
                    *slot = rv;
                }
            }
        }
        Ok(rvs)
    }
}

/// Sleeps until `deadline` (a no-op when it has passed).
pub async fn sleep_until(deadline: std::time::Instant) {
    tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await;
}

//! # wasmgate-metrics
//!
//! Prometheus metrics (`GET /metrics`, OpenMetrics text), with the `prometheus-client`
//! crate.
//!
//! * kube-apiserver's, under kube's names, labels, buckets and label values, so that
//!   dashboards and alerts written for kube read them (`OBS-01`, `OBS-02`): the request
//!   metrics ([`requests`]), the watch metrics ([`watches`]), the store's under etcd's
//!   names (`storage`), and admission (`apiserver_admission_step_*`, `_controller_*`
//!   for the Wasm plugins, `_webhook_*`). Help texts carry kube's stability class
//!   (`[STABLE]`, `[ALPHA]`).
//! * Wasmgate's own (`wasmgate_*`): per-plugin calls, denials, errors by cause and call
//!   latency, instances in use and the waits for them (`plugin_instances`);
//!   per-webhook calls by outcome and latency.
//!
//! ## Layout
//! * [`requests`]: `apiserver_request_total`, `apiserver_request_duration_seconds`,
//!   `apiserver_longrunning_requests`, `apiserver_current_inflight_requests`.
//! * [`watches`]: `apiserver_registered_watchers`, `apiserver_watch_events_total`,
//!   `apiserver_watch_events_sizes`.
//! * `storage`: `etcd_request_duration_seconds` and friends, `apiserver_storage_objects`.
//! * `plugin_instances`: each plugin's share of instances, its waits, its dropped log
//!   lines.
//! * `buckets`: the lock-free histogram the per-request metrics use.

mod buckets;
mod plugin_instances;
pub mod requests;
mod storage;
pub mod watches;

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    plugin: String,
    hook: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    plugin: String,
    hook: &'static str,
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
    /// `admit` (mutating) or `validating`, as kube's webhook metrics name them.
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookOutcomeLabels {
    webhook: String,
    r#type: &'static str,
    /// `allowed`, `denied`, or why it gave no answer (`call`, `invalid-response`).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabels {
    plugin: String,
}

/// `apiserver_admission_step_admission_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabels {
    /// `admit` or `validate`.
    r#type: &'static str,
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT`.
    operation: &'static str,
    rejected: &'static str,
}

/// `apiserver_admission_controller_admission_duration_seconds` (a Wasm plugin) and
/// `apiserver_admission_webhook_admission_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamedStepLabels {
    name: String,
    /// `admit` or `validate` (controllers); `admit` or `validating` (webhooks), as kube.
    r#type: &'static str,
    operation: &'static str,
    rejected: &'static str,
}

/// kube's buckets of the admission latencies (seconds).
const ADMISSION_BOUNDS: [f64; 6] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5];

fn admission_histogram() -> Histogram {
    Histogram::new(ADMISSION_BOUNDS)
}

/// An admission step, as kube's admission metrics name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Mutating.
    Admit,
    /// Validating.
    Validate,
}

/// Every metric the gateway exports.
pub struct Metrics {
    registry: Registry,
    /// Request metrics, recorded by the request stack.
    pub requests: Arc<requests::Requests>,
    /// Watch metrics, recorded by the watches.
    pub watches: Arc<watches::Watches>,
    /// The store's metrics, read at each scrape.
    storage: Arc<storage::StorageCollector>,
    /// The plugins' instances, read at each scrape.
    plugin_instances: Arc<plugin_instances::PluginInstancesCollector>,
    admission_step: Family<StepLabels, Histogram>,
    admission_controller: Family<NamedStepLabels, Histogram>,
    admission_webhook: Family<NamedStepLabels, Histogram>,
    calls: Family<CallLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    denials: Family<PluginLabels, Counter>,
    ignored: Family<PluginLabels, Counter>,
    latency: Family<CallLabels, Histogram>,
    webhook_calls: Family<WebhookOutcomeLabels, Counter>,
    webhook_latency: Family<WebhookLabels, Histogram>,
}

fn latency_histogram() -> Histogram {
    // 10 µs to ~5 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.00001, 2.5, 15,
    ))
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut root = Registry::default();
        let requests = Arc::new(requests::Requests::default());
        root.register_collector(Box::new(requests::RequestsCollector(requests.clone())));
        let watches = Arc::new(watches::Watches::default());
        root.register_collector(Box::new(watches::WatchesCollector(watches.clone())));
        let storage = Arc::new(storage::StorageCollector::default());
        root.register_collector(Box::new(storage.clone()));
        let admission_step =
            Family::<StepLabels, Histogram>::new_with_constructor(admission_histogram as fn() -> _);
        root.register(
            "apiserver_admission_step_admission_duration_seconds",
            "[STABLE] Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).",
            admission_step.clone(),
        );
        let admission_controller = Family::<NamedStepLabels, Histogram>::new_with_constructor(
            admission_histogram as fn() -> _,
        );
        root.register(
            "apiserver_admission_controller_admission_duration_seconds",
            "[STABLE] Admission controller latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit). Wasmgate: the Wasm admission plugins, by WasmPlugin name.",
            admission_controller.clone(),
        );
        let admission_webhook = Family::<NamedStepLabels, Histogram>::new_with_constructor(
            admission_histogram as fn() -> _,
        );
        root.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
            admission_webhook.clone(),
        );
        let registry = root.sub_registry_with_prefix("wasmgate");
        let calls = Family::<CallLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let denials = Family::<PluginLabels, Counter>::default();
        let ignored = Family::<PluginLabels, Counter>::default();
        let latency =
            Family::<CallLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        registry.register("plugin_calls", "Calls of Wasm plugin hooks", calls.clone());
        registry.register(
            "plugin_errors",
            "Failed calls of Wasm plugin hooks, by cause (trap, timeout, out_of_memory, malformed, output_too_large)",
            errors.clone(),
        );
        registry.register(
            "plugin_denials",
            "Requests denied by an admission plugin",
            denials.clone(),
        );
        registry.register(
            "plugin_failures_ignored",
            "Plugin failures let through by failurePolicy Ignore",
            ignored.clone(),
        );
        registry.register(
            "plugin_call_duration_seconds",
            "Duration of Wasm plugin calls, instantiation included",
            latency.clone(),
        );
        let plugin_instances = Arc::new(plugin_instances::PluginInstancesCollector::default());
        registry.register_collector(Box::new(plugin_instances.clone()));
        let webhook_calls = Family::<WebhookOutcomeLabels, Counter>::default();
        let webhook_latency = Family::<WebhookLabels, Histogram>::new_with_constructor(
            latency_histogram as fn() -> _,
        );
        registry.register(
            "webhook_calls",
            "Calls of admission webhooks, by outcome (allowed, denied, call, invalid-response)",
            webhook_calls.clone(),
        );
        registry.register(
            "webhook_call_duration_seconds",
            "Duration of admission webhook calls, connection included",
            webhook_latency.clone(),
        );
        Metrics {
            registry: root,
            requests,
            watches,
            storage,
            plugin_instances,
            admission_step,
            admission_controller,
            admission_webhook,
            calls,
            errors,
            denials,
            ignored,
            latency,
            webhook_calls,
            webhook_latency,
        }
    }

    /// One call of `hook` of `plugin` that took `took`; `cause` when it failed.
    pub fn plugin_call(
        &self,
        plugin: &str,
        hook: &'static str,
        took: Duration,
        cause: Option<&'static str>,
    ) {
        let l = CallLabels {
            plugin: plugin.to_owned(),
            hook,
        };
        self.calls.get_or_create(&l).inc();
        self.latency.get_or_create(&l).observe(took.as_secs_f64());
        if let Some(cause) = cause {
            self.errors
                .get_or_create(&ErrorLabels {
                    plugin: plugin.to_owned(),
                    hook,
                    cause,
                })
                .inc();
        }
    }

    pub fn plugin_denial(&self, plugin: &str) {
        self.denials
            .get_or_create(&PluginLabels {
                plugin: plugin.to_owned(),
            })
            .inc();
    }

    pub fn plugin_failure_ignored(&self, plugin: &str) {
        self.ignored
            .get_or_create(&PluginLabels {
                plugin: plugin.to_owned(),
            })
            .inc();
    }

    /// One admission step (every mutating plugin and webhook, or every validating one)
    /// of an `operation` (`CREATE`, ...) that took `took`; `rejected` when it refused the
    /// request.
    pub fn admission_step(
        &self,
        step: Step,
        operation: &'static str,
        took: Duration,
        rejected: bool,
    ) {
        self.admission_step
            .get_or_create(&StepLabels {
                r#type: step.kube_type(),
                operation,
                rejected: if rejected { "true" } else { "false" },
            })
            .observe(took.as_secs_f64());
    }

    /// One admission by Wasm plugin `plugin` (kube's admission controller metric).
    pub fn admission_controller(
        &self,
        plugin: &str,
        step: Step,
        operation: &'static str,
        took: Duration,
        rejected: bool,
    ) {
        self.admission_controller
            .get_or_create(&NamedStepLabels {
                name: plugin.to_owned(),
                r#type: step.kube_type(),
                operation,
                rejected: if rejected { "true" } else { "false" },
            })
            .observe(took.as_secs_f64());
    }

    /// One call of an admission webhook (`mutating` or validating) that took `took`,
    /// for an `operation`; `rejected` when the request was refused for it (a denial, or
    /// a failure under `failurePolicy: Fail`).
    pub fn webhook_call(
        &self,
        webhook: &str,
        mutating: bool,
        took: Duration,
        outcome: &'static str,
        operation: &'static str,
        rejected: bool,
    ) {
        let r#type = if mutating { "admit" } else { "validating" };
        self.admission_webhook
            .get_or_create(&NamedStepLabels {
                name: webhook.to_owned(),
                r#type,
                operation,
                rejected: if rejected { "true" } else { "false" },
            })
            .observe(took.as_secs_f64());
        self.webhook_latency
            .get_or_create(&WebhookLabels {
                webhook: webhook.to_owned(),
                r#type,
            })
            .observe(took.as_secs_f64());
        self.webhook_calls
            .get_or_create(&WebhookOutcomeLabels {
                webhook: webhook.to_owned(),
                r#type,
                outcome,
            })
            .inc();
    }

    /// The exposition text (the store's counters and objects of the served `types`, and
    /// the instances of the `plugins` served, read first).
    pub async fn render(
        &self,
        store: &wasmgate_storage::Store,
        types: &wasmgate_registry::Catalog,
        plugins: Vec<wasmgate_plugin_runtime::InstanceStats>,
    ) -> String {
        self.storage.refresh(store, types).await;
        self.plugin_instances.refresh(plugins);
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!("encoding metrics: {e}");
        }
        out
    }
}

/// kube's name of an admission operation.
pub fn operation_name(op: wasmgate_plugin_runtime::wit::Operation) -> &'static str {
    use wasmgate_plugin_runtime::wit::Operation;
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

impl Step {
    fn kube_type(self) -> &'static str {
        match self {
            Step::Admit => "admit",
            Step::Validate => "validate",
        }
    }
}

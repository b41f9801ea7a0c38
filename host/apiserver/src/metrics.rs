//! Prometheus metrics (`GET /metrics`, text exposition format), with the
//! `prometheus-client` crate: per-plugin calls, denials, errors by cause and call latency;
//! per-webhook calls by outcome and latency.

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

/// Every metric the gateway exports.
pub(crate) struct Metrics {
    registry: Registry,
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

impl Metrics {
    pub(crate) fn new() -> Metrics {
        let mut registry = Registry::with_prefix("wasmgate");
        let calls = Family::<CallLabels, Counter>::default();
        let errors = Family::<ErrorLabels, Counter>::default();
        let denials = Family::<PluginLabels, Counter>::default();
        let ignored = Family::<PluginLabels, Counter>::default();
        let latency =
            Family::<CallLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
        registry.register("plugin_calls", "Calls of Wasm plugin hooks", calls.clone());
        registry.register(
            "plugin_errors",
            "Failed calls of Wasm plugin hooks, by cause (trap, timeout, out_of_memory, malformed)",
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
            registry,
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
    pub(crate) fn plugin_call(
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

    pub(crate) fn plugin_denial(&self, plugin: &str) {
        self.denials
            .get_or_create(&PluginLabels {
                plugin: plugin.to_owned(),
            })
            .inc();
    }

    pub(crate) fn plugin_failure_ignored(&self, plugin: &str) {
        self.ignored
            .get_or_create(&PluginLabels {
                plugin: plugin.to_owned(),
            })
            .inc();
    }

    /// One call of an admission webhook (`mutating` or validating) that took `took`.
    pub(crate) fn webhook_call(
        &self,
        webhook: &str,
        mutating: bool,
        took: Duration,
        outcome: &'static str,
    ) {
        let r#type = if mutating { "admit" } else { "validating" };
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

    /// The exposition text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::warn!("encoding metrics: {e}");
        }
        out
    }
}

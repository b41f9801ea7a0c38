//! Wasm plugins bound to API groups (`WasmPlugin`, group `wasmgate.dev`).
//!
//! - `crd`: the `WasmPlugin` type itself, a CRD the gateway installs at start.
//! - `controller`: watches `WasmPlugin` objects, loads their modules off the request path
//!   (compile, link against the contract, self-test), swaps them in atomically and reports
//!   in `status`; follows module files (events, and a slower poll) so that a new content
//!   is served within about a second (what triggers a reload: `controller`'s docs).
//! - `validation`: what admission checks of a `WasmPlugin` beyond its schema (`422`).
//! - `dir`: `--plugin-dir`, the quick-start path: `WasmPlugin` manifests next to their
//!   `.wasm` files, applied through the API.
//! - [`Plugins`]: what requests read: the current bindings, in order.
//!
//! Requests take a snapshot of the bindings ([`Plugins::snapshot`]): a swap never affects
//! a request in flight, which finishes on the version it started with.

pub mod controller;
pub mod crd;
pub mod dir;
pub mod upload;
pub mod validation;

use std::sync::{Arc, RwLock};

use serde_json::Value;
use wasmgate_apimachinery::selectors::LabelSelector;
use wasmgate_plugin_runtime::{Plugin, Runtime, RuntimeConfig};

/// What a binding does when its plugin fails (trap, timeout, out of memory, malformed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

/// Admission operations, as `WasmPlugin.spec.operations` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Create,
    Update,
    Delete,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Create => "CREATE",
            Op::Update => "UPDATE",
            Op::Delete => "DELETE",
        }
    }
}

/// One served `WasmPlugin`: its filters and the loaded plugin version.
pub struct Binding {
    pub name: String,
    groups: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
    pub namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
    pub hooks: wasmgate_plugin_runtime::Hooks,
    order: i64,
    pub failure_policy: FailurePolicy,
    pub plugin: Arc<Plugin>,
}

impl Binding {
    /// Runs one call of `hook`, timed and counted in the metrics, in a tracing span.
    pub async fn call<T>(
        &self,
        metrics: &crate::metrics::Metrics,
        hook: &'static str,
        call: impl std::future::Future<Output = Result<T, wasmgate_plugin_runtime::CallError>>,
    ) -> Result<T, wasmgate_plugin_runtime::CallError> {
        use tracing::Instrument as _;
        let started = std::time::Instant::now();
        let r = call
            .instrument(tracing::debug_span!("plugin", plugin = %self.name, hook))
            .await;
        metrics.plugin_call(
            &self.name,
            hook,
            started.elapsed(),
            r.as_ref()
                .err()
                .map(wasmgate_plugin_runtime::CallError::cause),
        );
        r
    }

    fn serves_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == "*" || g == group)
    }

    /// Whether the admission hooks see this request (all but the namespace selector,
    /// which needs the namespace: [`Binding::namespace_selector`]).
    pub fn admits(
        &self,
        group: &str,
        resource: &str,
        subresource: Option<&str>,
        op: Op,
        labels: Option<&serde_json::Map<String, Value>>,
    ) -> bool {
        if !self.serves_group(group) {
            return false;
        }
        let res_ok = self.resources.is_empty()
            || self.resources.iter().any(|r| match subresource {
                None => r == "*" || r == resource,
                Some(sub) => {
                    r == "*/*"
                        || r.split_once('/').is_some_and(|(a, b)| {
                            (a == resource || a == "*") && (b == sub || b == "*")
                        })
                }
            });
        let op_ok = self.operations.is_empty()
            || self.operations.iter().any(|o| o == "*" || o == op.name());
        res_ok
            && op_ok
            && self
                .object_selector
                .as_ref()
                .is_none_or(|s| s.matches(labels))
    }
}

/// The bindings every request reads, and the runtime that loads plugins (created with the
/// first plugin: a gateway without plugins never starts wasmtime).
pub struct Plugins {
    bindings: RwLock<Arc<Vec<Arc<Binding>>>>,
    runtime: std::sync::OnceLock<Result<Arc<Runtime>, String>>,
    cache_dir: Option<std::path::PathBuf>,
    /// Bumped after every change of the bindings.
    pub changed: tokio::sync::watch::Sender<u64>,
}

impl Plugins {
    pub fn new(cache_dir: Option<std::path::PathBuf>) -> Plugins {
        Plugins {
            bindings: RwLock::new(Arc::new(Vec::new())),
            runtime: std::sync::OnceLock::new(),
            cache_dir,
            changed: tokio::sync::watch::Sender::new(0),
        }
    }

    /// The bindings now, in order (by `order`, then name).
    pub fn snapshot(&self) -> Arc<Vec<Arc<Binding>>> {
        self.bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The binding that serves `resource` of `group` with `hook`, first in order.
    pub fn for_resource(
        &self,
        group: &str,
        resource: &str,
        hook: impl Fn(&wasmgate_plugin_runtime::Hooks) -> bool,
    ) -> Option<Arc<Binding>> {
        self.snapshot()
            .iter()
            .find(|b| {
                b.serves_group(group)
                    && (b.resources.is_empty()
                        || b.resources.iter().any(|r| r == "*" || r == resource))
                    && hook(&b.hooks)
            })
            .cloned()
    }

    /// The binding named `name` (conversion: `wasm://name`).
    pub fn named(&self, name: &str) -> Option<Arc<Binding>> {
        self.snapshot().iter().find(|b| b.name == name).cloned()
    }

    fn runtime(&self) -> Result<Arc<Runtime>, String> {
        self.runtime
            .get_or_init(|| {
                Runtime::new(RuntimeConfig {
                    cache_dir: self.cache_dir.clone(),
                })
                .map(Arc::new)
            })
            .clone()
    }

    /// Puts `binding` in place of the one with its name (or adds it).
    fn put(&self, binding: Binding) {
        self.replace(|v| {
            v.retain(|b| b.name != binding.name);
            v.push(Arc::new(binding));
        });
    }

    fn remove(&self, name: &str) {
        self.replace(|v| v.retain(|b| b.name != name));
    }

    fn replace(&self, f: impl FnOnce(&mut Vec<Arc<Binding>>)) {
        {
            let mut guard = self.bindings.write().unwrap_or_else(|p| p.into_inner());
            let mut v: Vec<Arc<Binding>> = guard.as_ref().clone();
            f(&mut v);
            v.sort_by(|a, b| (a.order, &a.name).cmp(&(b.order, &b.name)));
            *guard = Arc::new(v);
        }
        self.changed.send_modify(|n| *n += 1);
    }
}

//! The run's summary: one JSON line with the parameters and every scenario's numbers.

use serde::Serialize;

use crate::cli::Args;
use crate::connections::ConnectionsReport;
use crate::load::LoadReport;
use crate::plugins::{self, Binding};
use crate::watch::WatchReport;

/// One scenario's result.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ScenarioReport {
    /// create, get, update, list.
    Load(LoadReport),
    /// watch.
    Watch(WatchReport),
    /// connections.
    Connections(ConnectionsReport),
}

impl ScenarioReport {
    /// The scenario's name.
    pub fn name(&self) -> &'static str {
        match self {
            ScenarioReport::Load(r) => r.scenario,
            ScenarioReport::Watch(r) => r.scenario,
            ScenarioReport::Connections(r) => r.scenario,
        }
    }
}

impl std::fmt::Display for ScenarioReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScenarioReport::Load(r) => r.fmt(f),
            ScenarioReport::Watch(r) => r.fmt(f),
            ScenarioReport::Connections(r) => r.fmt(f),
        }
    }
}

/// The parameters, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// The server's `host:port`.
    pub server: String,
    /// `http/1.1` or `h2`.
    pub protocol: &'static str,
    /// HTTP/2 connections per role (HTTP/2 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections: Option<u32>,
    /// Clients of the load scenarios.
    pub concurrency: u32,
    /// The kind created (`configmap` or `widget`).
    pub kind: crate::cli::Kind,
    /// Payload bytes per object.
    pub object_size: usize,
    /// Measured seconds per scenario.
    pub duration_s: f64,
    /// Warm-up seconds per scenario.
    pub warmup_s: f64,
    /// Watchers.
    pub watchers: u32,
    /// Watch-scenario creates per second.
    pub rate: f64,
    /// Watch-scenario writer concurrency.
    pub watch_writers: u32,
    /// Objects for get/update.
    pub objects: u32,
    /// Listed collection size.
    pub list_size: u32,
    /// The limit of list requests, when not --list-size (0: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list_limit: Option<u32>,
    /// Lists asked for as Tables.
    pub list_table: bool,
    /// Namespace.
    pub namespace: String,
    /// Client runtime threads.
    pub client_threads: u32,
    /// Request timeout in seconds.
    pub timeout_s: f64,
    /// Wasm plugins bound to the created kind (`--plugins`, `--plugin-pair`).
    #[serde(skip_serializing_if = "is_zero")]
    pub plugins: usize,
    /// Their names, modules and hooks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plugin_bindings: Vec<Binding>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Params {
    /// The parameters of `args`, against `server`.
    pub fn new(args: &Args, server: String) -> Self {
        let plugin_bindings = plugins::bindings(args).unwrap_or_default();
        Params {
            server,
            protocol: if args.http2 { "h2" } else { "http/1.1" },
            connections: args.http2.then_some(args.connections),
            concurrency: args.concurrency,
            kind: args.kind,
            object_size: args.object_size,
            duration_s: args.duration.as_secs_f64(),
            warmup_s: args.warmup.as_secs_f64(),
            watchers: args.watchers,
            rate: args.rate,
            watch_writers: args.watch_writers,
            objects: args.objects,
            list_size: args.list_size,
            list_limit: args.list_limit,
            list_table: args.list_table,
            namespace: args.namespace.clone(),
            client_threads: args.client_threads,
            timeout_s: args.timeout.as_secs_f64(),
            plugins: plugin_bindings.len(),
            plugin_bindings,
        }
    }
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Always `wasmgate-bench`.
    pub tool: &'static str,
    /// The run id in every object name.
    pub run_id: String,
    /// Parameters.
    pub params: Params,
    /// Results by scenario name, in the order run.
    pub scenarios: serde_json::Map<String, serde_json::Value>,
    /// Scenarios that failed to run, with the reason.
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub failed_scenarios: serde_json::Map<String, serde_json::Value>,
    /// With several `--kubeconfig`s: each replica's own results (then `scenarios` holds
    /// their aggregate, and `params.server` every server, comma-separated).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaSummary>,
}

/// One replica's results in a run that drove several at once.
#[derive(Debug, Clone, Serialize)]
pub struct ReplicaSummary {
    /// The replica's `host:port`.
    pub server: String,
    /// The run id in the names of the objects created through it.
    pub run_id: String,
    /// Results by scenario name.
    pub scenarios: serde_json::Map<String, serde_json::Value>,
}

impl ReplicaSummary {
    /// An empty one for `server`.
    pub fn new(server: String, run_id: String) -> Self {
        ReplicaSummary {
            server,
            run_id,
            scenarios: serde_json::Map::new(),
        }
    }

    /// Adds a scenario's result.
    pub fn add(&mut self, r: &ScenarioReport) -> anyhow::Result<()> {
        self.scenarios
            .insert(r.name().to_owned(), serde_json::to_value(r)?);
        Ok(())
    }
}

impl Summary {
    /// An empty summary.
    pub fn new(run_id: String, params: Params) -> Self {
        Summary {
            tool: "wasmgate-bench",
            run_id,
            params,
            scenarios: serde_json::Map::new(),
            failed_scenarios: serde_json::Map::new(),
            replicas: Vec::new(),
        }
    }

    /// Adds a scenario's result.
    pub fn add(&mut self, r: &ScenarioReport) -> anyhow::Result<()> {
        self.scenarios
            .insert(r.name().to_owned(), serde_json::to_value(r)?);
        Ok(())
    }

    /// Records a scenario that could not run.
    pub fn add_failure(&mut self, name: &str, error: &anyhow::Error) {
        self.failed_scenarios.insert(
            name.to_owned(),
            serde_json::Value::String(format!("{error:#}")),
        );
    }

    /// The one-line JSON form.
    pub fn to_line(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    /// Issue 26: the JSON line counts and names the plugins bound, and says nothing of
    /// plugins when none are.
    #[test]
    fn params_name_the_plugins() {
        let args = Args::try_parse_from(["b", "--scenario", "create", "--plugin-pair"]).unwrap();
        let v = serde_json::to_value(Params::new(&args, "s".into())).unwrap();
        assert_eq!(v["plugins"], 2);
        assert_eq!(
            v["plugin_bindings"],
            serde_json::json!([
                {"name": "bench-stamper", "module": "stamper.wasm", "hooks": ["mutate"],
                 "isolation": "PerRequest"},
                {"name": "bench-owner-policy", "module": "owner_policy.wasm", "hooks": ["validate"],
                 "isolation": "PerRequest"},
            ])
        );
        let args = Args::try_parse_from(["b", "--scenario", "create"]).unwrap();
        let v = serde_json::to_value(Params::new(&args, "s".into())).unwrap();
        assert!(v.get("plugins").is_none() && v.get("plugin_bindings").is_none());
    }
}

//! Wasm plugins bound for a run (`--plugins N`, `--plugin-pair`; issue 26): which
//! `WasmPlugin` objects the flags ask for, their manifests, and reading their readiness.
//! [`crate::bench::Bench`] creates them, waits for them and deletes them.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::cli::{Args, Hook, Kind, Scenario};

/// The `WasmPlugin` collection.
pub const COLLECTION: &str = "/apis/wasmgate.dev/v1alpha1/wasmplugins";

/// The label on every `WasmPlugin` the bench creates (so that an earlier run's leftovers
/// are found and removed).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wasmgate-bench");

/// The owner label the ConfigMaps of `--kind configmap --plugins N` carry, for the
/// owner-policy plugin to allow them.
pub const OWNER: &str = "wasmgate-bench";

/// Wall-clock limit of one plugin call (`timeoutMilliseconds`): above the gateway's
/// default of 100 ms, so that a loaded machine's queueing does not turn into failures.
pub const TIMEOUT_MS: u32 = 1000;

/// One `WasmPlugin` the run binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Binding {
    /// Its name.
    pub name: String,
    /// The module's file name in `--plugin-dist`.
    pub module: &'static str,
    /// The API group it is bound to.
    #[serde(skip)]
    pub group: &'static str,
    /// The resource it is bound to.
    #[serde(skip)]
    pub resource: &'static str,
    /// Its hooks.
    pub hooks: Vec<&'static str>,
    /// Its `spec.isolation` (`PerRequest`, `Reused`).
    pub isolation: &'static str,
}

/// The bindings the flags ask for (none without `--plugins` and `--plugin-pair`), or why
/// the flags do not go together.
pub fn bindings(args: &Args) -> Result<Vec<Binding>, String> {
    if args.plugins.is_none() && !args.plugin_pair {
        return Ok(Vec::new());
    }
    if args.scenario != Scenario::Create {
        return Err("--plugins and --plugin-pair bind plugins for --scenario create".into());
    }
    let one = |name: &str, module, group, resource, hooks: &[Hook]| {
        let mut hooks = hooks.to_vec();
        hooks.sort_unstable();
        hooks.dedup();
        Binding {
            name: name.to_owned(),
            module,
            group,
            resource,
            hooks: hooks.into_iter().map(Hook::name).collect(),
            isolation: args.plugin_isolation.spec(),
        }
    };
    if args.plugin_pair {
        if args.kind != Kind::Configmap {
            return Err("--plugin-pair binds plugins to configmaps: use --kind configmap".into());
        }
        return Ok(vec![
            one(
                "bench-stamper",
                "stamper.wasm",
                "",
                "configmaps",
                &[Hook::Mutate],
            ),
            one(
                "bench-owner-policy",
                "owner_policy.wasm",
                "",
                "configmaps",
                &[Hook::Validate],
            ),
        ]);
    }
    let (module, group, resource) = match args.kind {
        Kind::Widget => ("widgets.wasm", "example.com", "widgets"),
        Kind::Configmap => ("owner_policy.wasm", "", "configmaps"),
    };
    if args.kind == Kind::Configmap && args.plugin_hooks != [Hook::Validate] {
        return Err(
            "--plugin-hooks: the owner-policy plugin of --kind configmap only validates".into(),
        );
    }
    let n = args.plugins.unwrap_or(0);
    Ok((0..n)
        .map(|i| {
            one(
                &format!("bench-validate-{i}"),
                module,
                group,
                resource,
                &args.plugin_hooks,
            )
        })
        .collect())
}

/// The absolute path of `module` in `dist`, which must exist.
pub fn module_path(dist: &Path, module: &str) -> anyhow::Result<PathBuf> {
    let hint = "build the plugins with `bash plugins/build.sh`, or point --plugin-dist at them";
    let dir = std::fs::canonicalize(dist)
        .with_context(|| format!("plugin directory {}: {hint}", dist.display()))?;
    let path = dir.join(module);
    if !path.is_file() {
        bail!("plugin module {} is missing: {hint}", path.display());
    }
    Ok(path)
}

/// The `WasmPlugin` of `b`, its module at `path`.
pub fn manifest(b: &Binding, path: &Path) -> Value {
    json!({
        "apiVersion": "wasmgate.dev/v1alpha1",
        "kind": "WasmPlugin",
        "metadata": {"name": b.name, "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        "spec": {
            "module": {"path": path},
            "groups": [b.group],
            "resources": [b.resource],
            "hooks": b.hooks,
            "failurePolicy": "Fail",
            "timeoutMilliseconds": TIMEOUT_MS,
            "isolation": b.isolation,
        },
    })
}

/// Where a `WasmPlugin` stands, from its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Served, at its current generation.
    Ready,
    /// Refused at its current generation: the condition's reason and message.
    Failed(String),
    /// Not loaded yet (no condition, or one for an earlier generation).
    Pending(String),
}

/// The readiness of the `WasmPlugin` `obj`.
pub fn readiness(obj: &Value) -> Readiness {
    let cond = obj["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"));
    let Some(cond) = cond else {
        return Readiness::Pending("no Ready condition yet".into());
    };
    let text = format!(
        "Ready={} {}: {}",
        cond["status"].as_str().unwrap_or("?"),
        cond["reason"].as_str().unwrap_or(""),
        cond["message"].as_str().unwrap_or("")
    );
    if cond["observedGeneration"] != obj["metadata"]["generation"] {
        Readiness::Pending(format!("{text} (for an earlier generation)"))
    } else if cond["status"] == "True" {
        Readiness::Ready
    } else {
        Readiness::Failed(text)
    }
}

/// The bindings in a line: `name (module: hooks)` each, the middle ones left out when
/// there are many.
pub fn describe(bindings: &[Binding]) -> String {
    let one = |b: &Binding| format!("{} ({}: {})", b.name, b.module, b.hooks.join(","));
    let mut parts: Vec<String> = bindings.iter().map(one).collect();
    if parts.len() > 4 {
        let last = parts.pop().unwrap_or_default();
        parts.truncate(2);
        parts.push("...".into());
        parts.push(last);
    }
    let on = bindings.first().map_or(String::new(), |b| match b.group {
        "" => format!(" on {}", b.resource),
        g => format!(" on {}.{g}", b.resource),
    });
    format!("{} bound{on}: {}", bindings.len(), parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    fn parse(flags: &[&str]) -> Result<Vec<Binding>, String> {
        let args = Args::try_parse_from(["b"].iter().chain(flags)).map_err(|e| e.to_string())?;
        bindings(&args)
    }

    #[test]
    fn no_flags_no_plugins() {
        assert_eq!(parse(&[]), Ok(Vec::new()));
        assert_eq!(parse(&["--kind", "widget", "--webhook"]), Ok(Vec::new()));
    }

    /// Issue 26: N copies of the kind's validating plugin.
    #[test]
    fn n_validating_copies() {
        let b = parse(&["--scenario", "create", "--kind", "widget", "--plugins", "3"]).unwrap();
        let names: Vec<_> = b.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["bench-validate-0", "bench-validate-1", "bench-validate-2"]
        );
        assert!(b.iter().all(|b| b.module == "widgets.wasm"
            && b.group == "example.com"
            && b.resource == "widgets"
            && b.hooks == ["validate"]));
        let b = parse(&["--scenario", "create", "--plugins", "1"]).unwrap();
        assert_eq!(
            (b[0].module, b[0].group, b[0].resource),
            ("owner_policy.wasm", "", "configmaps")
        );
        let b = parse(&[
            "--scenario",
            "create",
            "--kind",
            "widget",
            "--plugins",
            "1",
            "--plugin-hooks",
            "validate,mutate,validate",
        ])
        .unwrap();
        assert_eq!(b[0].hooks, ["mutate", "validate"]);
    }

    /// Issue 26: the pair is a stamper and an owner policy on configmaps.
    #[test]
    fn the_pair() {
        let b = parse(&["--scenario", "create", "--plugin-pair"]).unwrap();
        let got: Vec<_> = b
            .iter()
            .map(|b| (b.name.as_str(), b.module, b.hooks.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("bench-stamper", "stamper.wasm", vec!["mutate"]),
                ("bench-owner-policy", "owner_policy.wasm", vec!["validate"]),
            ]
        );
        assert!(
            b.iter()
                .all(|b| b.group.is_empty() && b.resource == "configmaps")
        );
    }

    /// Issue 26: flags that do not go together are refused before anything is created.
    #[test]
    fn refused_combinations() {
        for flags in [
            &["--scenario", "create", "--plugin-pair", "--plugins", "2"][..],
            &["--scenario", "create", "--plugin-hooks", "mutate"],
            &["--scenario", "create", "--plugins", "0"],
            &["--plugins", "2"],
            &["--scenario", "get", "--plugin-pair"],
            &["--scenario", "create", "--kind", "widget", "--plugin-pair"],
            &[
                "--scenario",
                "create",
                "--plugins",
                "1",
                "--plugin-hooks",
                "mutate",
            ],
            &[
                "--scenario",
                "create",
                "--kind",
                "widget",
                "--plugins",
                "1",
                "--plugin-hooks",
                "print",
            ],
        ] {
            assert!(parse(flags).is_err(), "{flags:?}");
        }
    }

    /// Issue 26: the manifest follows wasmplugins.crd.yaml.
    #[test]
    fn manifests() {
        let b = &parse(&["--scenario", "create", "--plugin-pair"]).unwrap()[0];
        let m = manifest(b, Path::new("/d/stamper.wasm"));
        assert_eq!(
            m,
            json!({
                "apiVersion": "wasmgate.dev/v1alpha1",
                "kind": "WasmPlugin",
                "metadata": {"name": "bench-stamper", "labels": {"app.kubernetes.io/managed-by": "wasmgate-bench"}},
                "spec": {
                    "module": {"path": "/d/stamper.wasm"},
                    "groups": [""],
                    "resources": ["configmaps"],
                    "hooks": ["mutate"],
                    "failurePolicy": "Fail",
                    "timeoutMilliseconds": 1000,
                    "isolation": "PerRequest",
                },
            })
        );
        let reused = parse(&[
            "--scenario",
            "create",
            "--plugins",
            "1",
            "--plugin-isolation",
            "reused",
        ])
        .unwrap();
        assert_eq!(
            manifest(&reused[0], Path::new("/w.wasm"))["spec"]["isolation"],
            "Reused"
        );
    }

    #[test]
    fn module_paths_are_absolute_and_must_exist() {
        let dir = std::env::temp_dir().join(format!("wasmgate-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("m.wasm"), b"").unwrap();
        let p = module_path(&dir, "m.wasm").unwrap();
        assert!(p.is_absolute() && p.ends_with("m.wasm"));
        let e = module_path(&dir, "other.wasm").unwrap_err().to_string();
        assert!(e.contains("bash plugins/build.sh"), "{e}");
        let e = format!(
            "{:#}",
            module_path(&dir.join("nope"), "m.wasm").unwrap_err()
        );
        assert!(e.contains("bash plugins/build.sh"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn readiness_of_a_status() {
        let obj =
            |cond: Value| json!({"metadata": {"generation": 2}, "status": {"conditions": [cond]}});
        assert!(matches!(readiness(&json!({})), Readiness::Pending(_)));
        let ready = json!({"type": "Ready", "status": "True", "observedGeneration": 2});
        assert_eq!(readiness(&obj(ready)), Readiness::Ready);
        let old = json!({"type": "Ready", "status": "True", "observedGeneration": 1});
        assert!(matches!(readiness(&obj(old)), Readiness::Pending(_)));
        let failed = json!({"type": "Ready", "status": "False", "observedGeneration": 2,
            "reason": "HookNotImplemented", "message": "the module does not implement \"mutate\""});
        assert_eq!(
            readiness(&obj(failed)),
            Readiness::Failed(
                "Ready=False HookNotImplemented: the module does not implement \"mutate\"".into()
            )
        );
    }

    #[test]
    fn descriptions() {
        let pair = parse(&["--scenario", "create", "--plugin-pair"]).unwrap();
        assert_eq!(
            describe(&pair),
            "2 bound on configmaps: bench-stamper (stamper.wasm: mutate), bench-owner-policy (owner_policy.wasm: validate)"
        );
        let many = parse(&[
            "--scenario",
            "create",
            "--kind",
            "widget",
            "--plugins",
            "10",
        ])
        .unwrap();
        assert_eq!(
            describe(&many),
            "10 bound on widgets.example.com: bench-validate-0 (widgets.wasm: validate), bench-validate-1 (widgets.wasm: validate), ..., bench-validate-9 (widgets.wasm: validate)"
        );
    }
}

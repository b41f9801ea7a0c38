//! `wasmgate plugin run`: one request through a module's hooks, with the gateway's runtime
//! (`wasmgate-plugin-runtime`, the same sandbox and limits), no gateway. The engine here is
//! shared with `plugin test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::Value;
use wasmgate_plugin_runtime::{Limits, Plugin, Runtime, RuntimeConfig, wit};

use super::review::{self, Admitted, Request};
use super::{Failure, Hook, LoadArgs, usage};

/// `wasmgate plugin run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The component (.wasm)
    module: PathBuf,
    /// The request, YAML or JSON: an admission.k8s.io/v1 AdmissionReview (the admission
    /// hooks), an apiextensions.k8s.io/v1 ConversionReview (convert), one object (a
    /// create of it, for the admission hooks), or a List of objects (print)
    #[arg(long, value_name = "FILE")]
    request: PathBuf,
    /// The hook to run [default: for an AdmissionReview or an object, mutate then
    /// validate as the gateway runs them (those the module implements); for a
    /// ConversionReview, convert; for a list, print]
    #[arg(long, value_enum)]
    hook: Option<Hook>,
    #[command(flatten)]
    load: LoadArgs,
}

pub(crate) fn main(a: &RunArgs) -> Result<ExitCode, Failure> {
    let text = std::fs::read_to_string(&a.request)
        .map_err(|e| usage(format_args!("reading {}: {e}", a.request.display())))?;
    let req =
        review::decode(&text).map_err(|e| usage(format_args!("{}: {e}", a.request.display())))?;
    let engine = Engine::load(&a.module, &a.load)?;
    let answer = engine.block_on(execute(&engine.plugin, req, a.hook))?;
    for (hook, took) in &answer.calls {
        eprintln!("wasmgate plugin: {hook} took {}", millis(*took));
    }
    eprintln!("wasmgate plugin: {}", answer.summary);
    let out = serde_json::to_string_pretty(&answer.review).map_err(usage)?;
    println!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// `1.234 ms`.
pub(crate) fn millis(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// A loaded module and what it runs on. The [`Runtime`] stays alive as long as the
/// plugin: its epoch clock is what stops a call at its deadline.
pub(crate) struct Engine {
    tokio: tokio::runtime::Runtime,
    _runtime: Runtime,
    pub plugin: Plugin,
}

impl Engine {
    /// Reads, compiles and self-tests `module` under `load`'s limits and config (a
    /// `Failure::Plugin` when the module cannot be served), and says so on stderr with
    /// the time it took.
    pub(crate) fn load(module: &Path, load: &LoadArgs) -> Result<Engine, Failure> {
        init_logging();
        let bytes = super::read_module(module)?;
        let config = match &load.config {
            Some(c) => {
                let v: Value = serde_json::from_str(c)
                    .map_err(|e| usage(format_args!("--config is not JSON: {e}")))?;
                v.to_string()
            }
            None => "{}".to_owned(),
        };
        #[allow(
            clippy::needless_update,
            reason = "any other limit is the gateway's default, as for a WasmPlugin"
        )]
        let limits = Limits {
            timeout: Duration::from_millis(load.timeout_ms),
            memory_bytes: load.memory_mib.saturating_mul(1 << 20),
            ..Limits::default()
        };
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| usage(format_args!("starting the async runtime: {e}")))?;
        let runtime = Runtime::new(RuntimeConfig::default())
            .map_err(|e| usage(format_args!("starting the plugin runtime: {e}")))?;
        let name = module
            .file_stem()
            .map(|s| s.to_string_lossy().replace('_', "-"))
            .unwrap_or_else(|| "plugin".into());
        let started = Instant::now();
        let plugin = tokio
            .block_on(runtime.load(&name, &bytes, limits, &config))
            .map_err(|e| match e {
                wasmgate_plugin_runtime::LoadError::Limits(m) => usage(m),
                e => Failure::Plugin(format!("{} cannot be served: {e}", module.display())),
            })?;
        let info = plugin.plugin_info();
        eprintln!(
            "wasmgate plugin: loaded {} ({} {}, hooks {}, sha256 {}) in {}",
            module.display(),
            info.name,
            info.version,
            plugin.hooks().names().join(","),
            plugin.digest(),
            millis(started.elapsed())
        );
        Ok(Engine {
            tokio,
            _runtime: runtime,
            plugin,
        })
    }

    pub(crate) fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.tokio.block_on(f)
    }
}

/// Plugin logs (the SDK's `log`, and stdout/stderr as the runtime routes them) on stderr,
/// as the gateway logs them: `RUST_LOG` filters them [default: info].
fn init_logging() {
    let filter = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
        .with_writer(std::io::stderr)
        .try_init();
}

/// The answer to one request.
pub(crate) struct Answer {
    /// The review (or Table) JSON.
    pub review: Value,
    /// Each hook called and how long it took.
    pub calls: Vec<(&'static str, Duration)>,
    /// One line: what the answer was.
    pub summary: String,
}

/// Runs `hook` (or the hooks the request calls for) on `req`. A plugin failure is a
/// `Failure::Plugin`; a request that does not fit the hook, or a hook the module does
/// not implement, a `Failure::Usage`.
pub(crate) async fn execute(
    plugin: &Plugin,
    req: Request,
    hook: Option<Hook>,
) -> Result<Answer, Failure> {
    let has = plugin.hooks();
    let implemented = |h: Hook| match h {
        Hook::Mutate => has.mutate,
        Hook::Validate => has.validate,
        Hook::Convert => has.convert,
        Hook::Print => has.print,
    };
    let admission_hooks = |hook: Option<Hook>| -> Result<Vec<Hook>, Failure> {
        let hooks: Vec<Hook> = match hook {
            Some(h) => vec![h],
            None => [Hook::Mutate, Hook::Validate]
                .into_iter()
                .filter(|h| implemented(*h))
                .collect(),
        };
        if hooks.is_empty() {
            return Err(not_implemented(plugin, "mutate nor validate"));
        }
        Ok(hooks)
    };
    let check = |h: Hook| {
        if implemented(h) {
            Ok(())
        } else {
            Err(not_implemented(plugin, h.name()))
        }
    };
    // A list is for the printer unless a hook says otherwise.
    let hook = match (&req, hook) {
        (Request::Objects { list: true, .. }, None) => Some(Hook::Print),
        (_, h) => h,
    };
    match (req, hook) {
        (
            Request::Admission {
                api_version,
                request,
            },
            None | Some(Hook::Mutate | Hook::Validate),
        ) => {
            let hooks = admission_hooks(hook)?;
            hooks.iter().try_for_each(|h| check(*h))?;
            admit(plugin, &api_version, *request, &hooks).await
        }
        (Request::Admission { request, .. }, Some(Hook::Print)) => {
            let obj = request.object.or(request.old_object).unwrap_or_default();
            let obj: Value = serde_json::from_str(&obj).unwrap_or(Value::Null);
            if obj.is_null() {
                return Err(usage("the AdmissionReview has no object to print"));
            }
            check(Hook::Print)?;
            print(plugin, vec![obj]).await
        }
        (
            Request::Conversion {
                api_version,
                request,
            },
            None | Some(Hook::Convert),
        ) => {
            check(Hook::Convert)?;
            convert(plugin, &api_version, request).await
        }
        (Request::Objects { items, .. }, None | Some(Hook::Mutate | Hook::Validate)) => {
            let [obj] = <[Value; 1]>::try_from(items).map_err(|items| {
                usage(format_args!(
                    "the admission hooks take one object, not {}",
                    items.len()
                ))
            })?;
            let hooks = admission_hooks(hook)?;
            hooks.iter().try_for_each(|h| check(*h))?;
            let request = review::create_request(obj).map_err(usage)?;
            admit(plugin, "admission.k8s.io/v1", request, &hooks).await
        }
        (Request::Objects { items, .. }, Some(Hook::Print)) => {
            check(Hook::Print)?;
            print(plugin, items).await
        }
        (Request::Conversion { .. }, Some(h)) => Err(usage(format_args!(
            "a ConversionReview is for convert, not {}",
            h.name()
        ))),
        (_, Some(Hook::Convert)) => Err(usage(
            "convert takes a ConversionReview (it names the desiredAPIVersion)",
        )),
    }
}

fn not_implemented(plugin: &Plugin, what: &str) -> Failure {
    let has = plugin.hooks().names();
    usage(format_args!(
        "the module does not implement {what} (it implements {})",
        if has.is_empty() {
            "none".to_owned()
        } else {
            has.join(", ")
        }
    ))
}

fn failed(hook: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Plugin(format!("{hook} failed: {e}"))
}

/// The admission hooks in order, as the gateway runs them: each mutation applies to the
/// object the next hook sees; a denial ends the chain.
async fn admit(
    plugin: &Plugin,
    api_version: &str,
    mut request: wit::AdmissionRequest,
    hooks: &[Hook],
) -> Result<Answer, Failure> {
    let original: Option<Value> = match &request.object {
        Some(o) => Some(serde_json::from_str(o).map_err(usage)?),
        None => None,
    };
    let mut current = original.clone();
    let mut own_patch: Option<Value> = None;
    let mut out = Admitted {
        allowed: true,
        ..Admitted::default()
    };
    let mut calls = Vec::new();
    for hook in hooks {
        let started = Instant::now();
        let r = match hook {
            Hook::Mutate => plugin.mutate(&request).await,
            _ => plugin.validate(&request).await,
        };
        calls.push((hook.name(), started.elapsed()));
        let resp = r.map_err(|e| failed(hook.name(), e))?;
        out.warnings.extend(resp.warnings);
        out.audit_annotations.extend(resp.audit_annotations);
        if !resp.allowed {
            out.allowed = false;
            out.status = resp.status;
            break;
        }
        if let (Hook::Mutate, Some(m)) = (hook, &resp.mutation) {
            let Some(obj) = &current else {
                return Err(failed(
                    "mutate",
                    "it changed the object of a request that has none",
                ));
            };
            let (new, patch) = review::apply_mutation(obj, m).map_err(|e| failed("mutate", e))?;
            own_patch = matches!(m, wit::Mutation::JsonPatch(_)).then_some(patch);
            request.object = Some(new.to_string());
            current = Some(new);
        }
    }
    if out.allowed && current != original {
        // One mutating hook that answered a patch: its own operations; else the
        // difference.
        out.patch = match (own_patch, &original, &current) {
            (Some(p), _, _) => Some(p),
            (None, Some(a), Some(b)) => serde_json::to_value(json_patch::diff(a, b)).ok(),
            _ => None,
        };
    }
    let summary = if out.allowed {
        format!(
            "allowed{}",
            if out.patch.is_some() {
                ", with a patch"
            } else {
                ""
            }
        )
    } else {
        let s = out.status.as_ref();
        format!(
            "denied ({}): {}",
            s.map_or(403, |s| if s.code == 0 { 403 } else { s.code }),
            s.map_or("", |s| s.message.as_str())
        )
    };
    Ok(Answer {
        review: review::admission_review(api_version, &request.uid, &out),
        calls,
        summary,
    })
}

async fn convert(
    plugin: &Plugin,
    api_version: &str,
    request: wit::ConversionRequest,
) -> Result<Answer, Failure> {
    let started = Instant::now();
    let r = plugin.convert(&request).await;
    let calls = vec![("convert", started.elapsed())];
    let result = match r.map_err(|e| failed("convert", e))? {
        Ok(objects) => Ok(objects
            .iter()
            .map(|o| serde_json::from_str::<Value>(o))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed("convert", format_args!("an object is not JSON: {e}")))?),
        Err(s) => Err(s),
    };
    let summary = match &result {
        Ok(o) => format!("converted {} objects", o.len()),
        Err(s) => format!("refused ({}): {}", s.code, s.message),
    };
    Ok(Answer {
        review: review::conversion_review(api_version, &request.uid, &result),
        calls,
        summary,
    })
}

async fn print(plugin: &Plugin, objects: Vec<Value>) -> Result<Answer, Failure> {
    let first = objects.first().cloned().unwrap_or(Value::Null);
    let api_version = first["apiVersion"].as_str().unwrap_or("");
    let kind = first["kind"].as_str().unwrap_or("");
    if objects
        .iter()
        .any(|o| o["apiVersion"] != first["apiVersion"] || o["kind"] != first["kind"])
    {
        return Err(usage(
            "the objects to print are not all of one apiVersion and kind",
        ));
    }
    let started = Instant::now();
    let columns = plugin
        .columns(api_version, kind)
        .await
        .map_err(|e| failed("print (columns)", e))?;
    let mut calls = vec![("print (columns)", started.elapsed())];
    let texts: Vec<String> = objects.iter().map(Value::to_string).collect();
    let started = Instant::now();
    let rows = plugin
        .rows(api_version, kind, &texts)
        .await
        .map_err(|e| failed("print (rows)", e))?;
    calls.push(("print (rows)", started.elapsed()));
    let (review, summary) = match &rows {
        Ok(rows) => {
            let cells = rows
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|c| serde_json::from_str::<Value>(c))
                        .collect::<Result<Vec<_>, _>>()
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| failed("print (rows)", format_args!("a cell is not JSON: {e}")))?;
            (
                review::table(&columns, Ok(cells), &objects),
                format!("{} columns, {} rows", columns.len(), rows.len()),
            )
        }
        Err(s) => (
            review::table(&columns, Err(s), &objects),
            format!("refused ({}): {}", s.code, s.message),
        ),
    };
    Ok(Answer {
        review,
        calls,
        summary,
    })
}

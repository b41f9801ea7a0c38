//! `wasmgate plugin build`: `cargo build --release --target wasm32-wasip2` of a plugin
//! crate, the component found from cargo's own artifact messages (so `CARGO_TARGET_DIR`,
//! `[lib] name` and workspaces are as cargo has them), copied next to the crate's
//! manifest and reported with its sha256.

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde_json::Value;

use super::{Failure, usage};

const TARGET: &str = "wasm32-wasip2";

/// `wasmgate plugin build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The plugin crate (the directory of its Cargo.toml)
    #[arg(long, value_name = "PATH", default_value = ".")]
    dir: PathBuf,
    /// More arguments for `cargo build` (after `--`), e.g. `-- --locked`
    #[arg(last = true, value_name = "CARGO_ARGS")]
    cargo_args: Vec<String>,
}

/// A component the build made.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Artifact {
    /// Where cargo put it.
    pub built: PathBuf,
    /// The manifest of its package.
    pub manifest: PathBuf,
}

pub(crate) fn main(a: &BuildArgs) -> Result<ExitCode, Failure> {
    let manifest = a.dir.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(usage(format_args!(
            "{} has no Cargo.toml (--dir names the plugin crate)",
            a.dir.display()
        )));
    }
    let dir = a
        .dir
        .canonicalize()
        .map_err(|e| usage(format_args!("{}: {e}", a.dir.display())))?;
    ensure_target()?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = Command::new(&cargo)
        .args(["build", "--release", "--target", TARGET])
        .arg("--message-format=json-render-diagnostics")
        .arg("--manifest-path")
        .arg(dir.join("Cargo.toml"))
        .args(&a.cargo_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| usage(format_args!("running {}: {e}", cargo.to_string_lossy())))?;
    let mut artifacts = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let line = line.map_err(usage)?;
            match serde_json::from_str::<Value>(&line) {
                Ok(msg) => artifacts.extend(artifact(&msg, &dir)),
                // Not a message (a build script's output): cargo's own stdout.
                Err(_) => println!("{line}"),
            }
        }
    }
    let status = child.wait().map_err(usage)?;
    if !status.success() {
        return Err(Failure::Plugin(format!("cargo build failed ({status})")));
    }
    if artifacts.is_empty() {
        return Err(Failure::Plugin(format!(
            "the build made no .wasm: the plugin's Cargo.toml needs\n  [lib]\n  crate-type = \
             [\"cdylib\", \"rlib\"]\n(cdylib is the component; rlib keeps `cargo test` working) \
             in {}",
            dir.join("Cargo.toml").display()
        )));
    }
    for art in &artifacts {
        let bytes = std::fs::read(&art.built)
            .map_err(|e| usage(format_args!("reading {}: {e}", art.built.display())))?;
        let digest = wasmgate_plugin_runtime::digest(&bytes);
        let pkg_dir = art.manifest.parent().unwrap_or(&dir);
        let file = art.built.file_name().unwrap_or_default();
        let copy = pkg_dir.join(file);
        copy_if_changed(&bytes, &copy)?;
        eprintln!(
            "wasmgate plugin: {} bytes, built as {}",
            bytes.len(),
            art.built.display()
        );
        if let Some(note) = manifest_note(pkg_dir, &copy) {
            eprintln!("wasmgate plugin: note: {note}");
        }
        println!("{digest}  {}", copy.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A `.wasm` of a `cdylib` of a package under `dir` in a cargo JSON message.
fn artifact(msg: &Value, dir: &Path) -> Option<Artifact> {
    if msg["reason"] != "compiler-artifact" {
        return None;
    }
    let kinds = msg["target"]["kind"].as_array()?;
    if !kinds.iter().any(|k| k == "cdylib") {
        return None;
    }
    let manifest = PathBuf::from(msg["manifest_path"].as_str()?);
    if !manifest.starts_with(dir) {
        return None;
    }
    let built = msg["filenames"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|f| f.ends_with(".wasm"))?;
    Some(Artifact {
        built: PathBuf::from(built),
        manifest,
    })
}

/// Adds the Rust target with rustup when it is missing (where there is no rustup, cargo
/// says what is missing).
fn ensure_target() -> Result<(), Failure> {
    let Ok(out) = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
    else {
        return Ok(());
    };
    if String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == TARGET)
    {
        return Ok(());
    }
    eprintln!("wasmgate plugin: rustup target add {TARGET}");
    let status = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .map_err(|e| usage(format_args!("running rustup: {e}")))?;
    if !status.success() {
        return Err(usage(format_args!("rustup target add {TARGET} failed")));
    }
    Ok(())
}

/// Writes `bytes` to `to` unless it holds them already, through a temporary file renamed
/// over it: a gateway following the file never reads half of it.
fn copy_if_changed(bytes: &[u8], to: &Path) -> Result<(), Failure> {
    if std::fs::read(to).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    let tmp = to.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, bytes)
        .and_then(|()| std::fs::rename(&tmp, to))
        .map_err(|e| usage(format_args!("writing {}: {e}", to.display())))
}

/// A note when no `WasmPlugin` manifest in `dir` names `module` (absolute, or relative to
/// the manifest).
fn manifest_note(dir: &Path, module: &Path) -> Option<String> {
    let mut named = Vec::new();
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if !matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Ok(v) = serde_saphyr::from_str::<Value>(&text) else {
            continue;
        };
        if v["kind"] != "WasmPlugin" {
            continue;
        }
        let Some(path) = v["spec"]["module"]["path"].as_str() else {
            continue;
        };
        if dir.join(path) == module {
            return None;
        }
        named.push(format!("{} names {path}", p.display()));
    }
    (!named.is_empty()).then(|| {
        format!(
            "{}, not {} (edit spec.module.path)",
            named.join("; "),
            module.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_component_is_the_wasm_of_a_cdylib_of_the_plugin() {
        let dir = Path::new("/p/my-policy");
        let msg = |kind: &str, manifest: &str, files: Value| {
            json!({
                "reason": "compiler-artifact",
                "manifest_path": manifest,
                "target": {"kind": [kind, "rlib"], "name": "my_policy"},
                "filenames": files,
            })
        };
        let wasm = "/t/wasm32-wasip2/release/my_policy.wasm";
        assert_eq!(
            artifact(
                &msg(
                    "cdylib",
                    "/p/my-policy/Cargo.toml",
                    json!(["/t/libmy_policy.rlib", wasm])
                ),
                dir
            ),
            Some(Artifact {
                built: wasm.into(),
                manifest: "/p/my-policy/Cargo.toml".into()
            })
        );
        // A dependency (the SDK), a library without cdylib, other messages: none.
        assert_eq!(
            artifact(&msg("cdylib", "/sdk/Cargo.toml", json!([wasm])), dir),
            None
        );
        assert_eq!(
            artifact(&msg("lib", "/p/my-policy/Cargo.toml", json!([wasm])), dir),
            None
        );
        assert_eq!(artifact(&json!({"reason": "build-finished"}), dir), None);
    }

    #[test]
    fn a_manifest_naming_another_module_is_noted() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("p.wasm");
        let write = |path: &str| {
            let yaml = format!(
                "apiVersion: wasmgate.dev/v1alpha1\nkind: WasmPlugin\nmetadata: {{name: p}}\n\
                 spec:\n  module: {{path: {path}}}\n  groups: [\"\"]\n"
            );
            std::fs::write(dir.path().join("p.yaml"), yaml).unwrap();
        };
        write(&module.display().to_string());
        assert_eq!(manifest_note(dir.path(), &module), None);
        write("p.wasm");
        assert_eq!(manifest_note(dir.path(), &module), None);
        write("/elsewhere/p.wasm");
        assert!(
            manifest_note(dir.path(), &module)
                .unwrap()
                .contains("/elsewhere/p.wasm")
        );
    }

    #[test]
    fn a_copy_is_renamed_into_place_and_skipped_when_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("m.wasm");
        copy_if_changed(b"one", &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"one");
        let mtime = std::fs::metadata(&to).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        copy_if_changed(b"one", &to).unwrap();
        assert_eq!(std::fs::metadata(&to).unwrap().modified().unwrap(), mtime);
        copy_if_changed(b"two", &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

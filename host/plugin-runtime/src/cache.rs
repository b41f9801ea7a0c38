//! Compiled components, once per content digest: in memory, and on disk when the runtime
//! has a cache directory (compiling takes 0.1-1 s, loading a compiled artifact ~0.1 ms).
//!
//! Artifacts are keyed by the module's sha256 and the engine's compatibility hash (the
//! wasmtime version and every setting that changes generated code), so a new wasmtime or
//! another configuration never loads an old artifact; one that fails to load is compiled
//! again. Only this runtime writes the directory (mode 0700 under the data dir): loading a
//! compiled artifact trusts its contents, so artifacts are never taken from users.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::LoadError;

/// Compiled components kept in memory at most (the oldest go first).
const KEEP_IN_MEMORY: usize = 64;

pub(crate) struct Cache {
    dir: Option<PathBuf>,
    /// The engine's compatibility hash, in hex.
    engine_key: String,
    memory: Mutex<Vec<(String, Component)>>,
}

impl Cache {
    pub(crate) fn new(dir: Option<PathBuf>, engine: &Engine) -> Cache {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        Cache {
            dir,
            engine_key: format!("{:016x}", h.finish()),
            memory: Mutex::new(Vec::new()),
        }
    }

    /// The compiled form of `bytes` (whose digest is `digest`).
    pub(crate) fn component(
        &self,
        engine: &Engine,
        digest: &str,
        bytes: &[u8],
    ) -> Result<Component, LoadError> {
        if let Some(c) = self.lookup(digest) {
            return Ok(c);
        }
        let component = match &self.dir {
            Some(dir) => self.via_disk(engine, dir, digest, bytes)?,
            None => compile(engine, bytes)?,
        };
        let mut mem = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        mem.retain(|(d, _)| d != digest);
        if mem.len() >= KEEP_IN_MEMORY {
            mem.remove(0);
        }
        mem.push((digest.to_owned(), component.clone()));
        Ok(component)
    }

    fn lookup(&self, digest: &str) -> Option<Component> {
        let mem = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        mem.iter()
            .find(|(d, _)| d == digest)
            .map(|(_, c)| c.clone())
    }

    fn via_disk(
        &self,
        engine: &Engine,
        dir: &Path,
        digest: &str,
        bytes: &[u8],
    ) -> Result<Component, LoadError> {
        let path = dir.join(format!("{digest}-{}.cwasm", self.engine_key));
        if path.exists() {
            match load(engine, &path) {
                Ok(c) => return Ok(c),
                Err(e) => {
                    tracing::warn!(path = %path.display(), "compiled plugin unusable, compiling again: {e:#}")
                }
            }
        }
        let compiled = engine
            .precompile_component(bytes)
            .map_err(|e| not_a_component(&e))?;
        if let Err(e) = store(dir, &path, &compiled) {
            tracing::warn!(path = %path.display(), "cannot keep the compiled plugin: {e}");
            return compile(engine, bytes);
        }
        load(engine, &path).map_err(|e| LoadError::NotAComponent(format!("{e:#}")))
    }
}

fn compile(engine: &Engine, bytes: &[u8]) -> Result<Component, LoadError> {
    Component::new(engine, bytes).map_err(|e| not_a_component(&e))
}

fn not_a_component(e: &wasmtime::Error) -> LoadError {
    // wasmparser's first line says what is wrong ("expected a component", "magic header
    // not detected", ...); the backtrace of causes adds nothing for a user.
    LoadError::NotAComponent(format!("{e:#}"))
}

#[allow(
    unsafe_code,
    reason = "deserializing a compiled artifact trusts it; only this runtime writes them, in a private directory"
)]
fn load(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was produced by `Engine::precompile_component` of an engine with
    // the same compatibility hash (it is in the file name), written by `store` below into
    // a directory only this process's user can write; wasmtime checks the header and the
    // engine settings again before using it.
    unsafe { Component::deserialize_file(engine, path) }
}

/// Writes an artifact atomically (a temporary file renamed into place).
fn store(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

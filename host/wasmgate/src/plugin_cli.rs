//! `wasmgate plugin`: tools for plugin authors, outside any gateway.
//!
//! ## Layout
//! * [`new`]: `plugin new` writes a standalone plugin crate from the templates in
//!   `plugin_cli/template/` (Cargo.toml, lib, native tests, `WasmPlugin` manifest,
//!   testdata, README).
//! * [`build`]: `plugin build` runs cargo for `wasm32-wasip2` and reports the component.
//! * [`review`]: request files (`AdmissionReview`, `ConversionReview`, objects) in, the
//!   matching review JSON out; pure, no runtime.
//! * [`run`]: `plugin run` calls a module's hooks with the gateway's own runtime
//!   (`wasmgate-plugin-runtime`) and limits.
//! * [`test`]: `plugin test` replays a directory of request / expected pairs.
//!
//! Exit codes: 0 done (a hook that ran and denied is done), 1 a plugin failure (it could
//! not be loaded, trapped, timed out, ran out of memory, answered something malformed) or
//! a failed test case, 2 a usage error (a file missing or unreadable, a request of the
//! wrong shape, a hook the module does not implement).

mod build;
mod new;
mod review;
mod run;
mod test;

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

/// The `wasmgate plugin` subcommands.
#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Write a new plugin crate (Rust, the wasmgate-sdk): Cargo.toml, src/lib.rs with the
    /// chosen hooks and their native tests, the WasmPlugin manifest NAME.yaml, testdata/
    /// for `plugin test`, and a README. It builds on its own, wherever it is.
    New(new::NewArgs),
    /// Build the plugin crate in --dir for wasm32-wasip2 (release; the Rust target is
    /// added with rustup when missing), copy the component next to the crate's
    /// Cargo.toml, where its manifest names it, and print its sha256 and path.
    Build(build::BuildArgs),
    /// Run a module's hook on a request file, with the gateway's runtime and limits, and
    /// print the answer as the matching review JSON (timings on stderr). Exit code 0 when
    /// the hook ran (allowed or denied), 1 when the plugin failed, 2 on usage errors.
    Run(run::RunArgs),
    /// Replay every DIR/NAME.request.{yaml,json} through a module and compare the answer
    /// with DIR/NAME.expected.{yaml,json} (as a subset: only the fields it has must
    /// match); a line per case and a summary. Exit code 1 when a case fails.
    Test(test::TestArgs),
}

/// Runs a `wasmgate plugin` subcommand; the exit code is the process's.
pub fn main(cmd: PluginCommand) -> ExitCode {
    let r = match cmd {
        PluginCommand::New(a) => new::main(&a),
        PluginCommand::Build(a) => build::main(&a),
        PluginCommand::Run(a) => run::main(&a),
        PluginCommand::Test(a) => test::main(&a),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wasmgate plugin: {e}");
            e.exit_code()
        }
    }
}

/// Why a `wasmgate plugin` command failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The command cannot do what it was asked (exit code 2).
    Usage(String),
    /// The plugin failed (exit code 1).
    Plugin(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Usage(m) | Failure::Plugin(m) => f.write_str(m),
        }
    }
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Usage(_) => ExitCode::from(2),
            Failure::Plugin(_) => ExitCode::from(1),
        }
    }
}

/// A usage error from anything displayable.
pub(crate) fn usage(e: impl std::fmt::Display) -> Failure {
    Failure::Usage(e.to_string())
}

/// The hooks of the `wasmgate:plugin` world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Hook {
    /// `admission.mutate`.
    Mutate,
    /// `admission.validate`.
    Validate,
    /// `conversion.convert`.
    Convert,
    /// `printer.columns` and `printer.rows`.
    Print,
}

impl Hook {
    /// The name in the WIT, the manifest and `export_plugin!`.
    pub fn name(self) -> &'static str {
        match self {
            Hook::Mutate => "mutate",
            Hook::Validate => "validate",
            Hook::Convert => "convert",
            Hook::Print => "print",
        }
    }
}

/// How a module is loaded for `plugin run` and `plugin test`: what a `WasmPlugin` spec
/// would give it.
#[derive(Debug, Clone, Args)]
pub(crate) struct LoadArgs {
    /// The plugin's config, as JSON (what the SDK's `config()` returns) [default: {}]
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
    /// Wall-clock limit of one call, as the WasmPlugin's timeoutMilliseconds (1..30000)
    #[arg(long, value_name = "N", default_value_t = 100)]
    timeout_ms: u64,
    /// Memory limit of one call, as the WasmPlugin's memoryLimitMiB (2..1024)
    #[arg(long, value_name = "N", default_value_t = 64)]
    memory_mib: u64,
}

/// A module file argument.
pub(crate) fn read_module(path: &Path) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| usage(format_args!("reading {}: {e}", path.display())))
}

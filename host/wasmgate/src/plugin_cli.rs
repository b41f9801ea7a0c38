//! `wasmgate plugin`: tools for plugin authors, outside any gateway.
//!
//! ## Layout
//! * [`new`]: `plugin new` writes a standalone plugin crate from the templates in
//!   `plugin_cli/template/` (Cargo.toml, lib, native tests, `WasmPlugin` manifest,
//!   testdata, README).
//! * [`build`]: `plugin build` runs cargo for `wasm32-wasip2` and reports the component.
//!
//! Exit codes: 0 done (a hook that ran and denied is done), 1 a plugin failure (it could
//! not be loaded, trapped, timed out, ran out of memory, answered something malformed) or
//! a failed test case, 2 a usage error (a file missing or unreadable, a request of the
//! wrong shape, a hook the module does not implement).

mod build;
mod new;

use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

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
}

/// Runs a `wasmgate plugin` subcommand; the exit code is the process's.
pub fn main(cmd: PluginCommand) -> ExitCode {
    let r = match cmd {
        PluginCommand::New(a) => new::main(&a),
        PluginCommand::Build(a) => build::main(&a),
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

//! `/version` (`GAP-01`). The minor version is 32: the kubectl on the machine image is a
//! dispatcher that runs its own 1.32 only for a server that reports minor 32
//! (KUBECTL-WIRE.md §0).

use serde_json::{Value, json};

/// The Kubernetes API version this server speaks.
pub const GIT_VERSION: &str = concat!("v1.32.0+wasmgate-", env!("CARGO_PKG_VERSION"));

/// The `/version` document.
pub fn info() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", other => other }),
    })
}

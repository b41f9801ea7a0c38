//! The Python `kubernetes` client (installed from PyPI by `tests/run.sh` into a venv named
//! by `WASMGATE_PYTHON`) against the real binary: the calls its users make, bodies without
//! kind included (issue 7). The scripts are under `tests/python/`.

use std::process::Command;
use std::time::Duration;

use wasmgate_e2e::{gateway_builder, run_with_timeout};

/// Runs `tests/python/SCRIPT` with the gateway's kubeconfig and `args`, and checks it
/// ends by printing `passed`.
fn run_script(script: &str, args: &[String], passed: &str) {
    let python = std::env::var("WASMGATE_PYTHON").unwrap_or_else(|_| "python3".into());
    let probe = Command::new(&python)
        .args(["-c", "import kubernetes"])
        .output()
        .unwrap_or_else(|e| panic!("running {python}: {e}"));
    assert!(
        probe.status.success(),
        "the Python kubernetes client is not installed for {python} (tests/run.sh installs it and sets WASMGATE_PYTHON): {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let gw = gateway_builder!().start();
    let mut cmd = Command::new(&python);
    cmd.arg(wasmgate_e2e::manifest_dir().join("python").join(script))
        .arg(gw.kubeconfig())
        .args(args);
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(passed),
        "{script} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn python_kubernetes_client_round_trip() {
    let root = wasmgate_e2e::manifest_dir().join("..");
    let crd = root
        .join("examples/crds/widgets.yaml")
        .display()
        .to_string();
    run_script("client_test.py", &[crd], "python client: all checks passed");
}

/// The Python client's EventsV1Api as kube-rs's `Recorder` / client-go's events
/// broadcaster use it (create, series patch, watch across groups, field selectors, 422;
/// `ISSUE-24.5`) and AuthenticationV1Api TokenReviews by an account bound to
/// `system:auth-delegator` (`AGG-09`).
#[test]
fn python_events_api_and_token_reviews() {
    run_script(
        "events_and_reviews_test.py",
        &[],
        "python events and reviews: all checks passed",
    );
}

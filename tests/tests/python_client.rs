//! The Python `kubernetes` client (installed from PyPI by `tests/run.sh` into a venv named
//! by `WASMGATE_PYTHON`) against the real binary: the calls its users make, bodies without
//! kind included (issue 7). The script is `tests/python/client_test.py`.

use std::process::Command;
use std::time::Duration;

use wasmgate_e2e::{gateway_builder, run_with_timeout};

#[test]
fn python_kubernetes_client_round_trip() {
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
    let root = wasmgate_e2e::manifest_dir()
        .join("..")
        .display()
        .to_string();
    let mut cmd = Command::new(&python);
    cmd.arg(format!("{root}/tests/python/client_test.py"))
        .arg(gw.kubeconfig())
        .arg(format!("{root}/examples/crds/widgets.yaml"));
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("python client: all checks passed"),
        "client_test.py failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Python client's EventsV1Api as kube-rs's `Recorder` / client-go's events
/// broadcaster use it (create, series patch, watch across groups, field selectors, 422;
/// `ISSUE-24.5`) and AuthenticationV1Api TokenReviews by an account bound to
/// `system:auth-delegator` (`AGG-09`). The script is `tests/python/events_and_reviews_test.py`.
#[test]
fn python_events_api_and_token_reviews() {
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
    let script = wasmgate_e2e::manifest_dir().join("python/events_and_reviews_test.py");
    let mut cmd = Command::new(&python);
    cmd.arg(script).arg(gw.kubeconfig());
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("python events and reviews: all checks passed"),
        "events_and_reviews_test.py failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

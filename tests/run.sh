#!/usr/bin/env bash
# Runs every test: unit tests, the engine and store contract suites, the in-process
# protocol tests and the end-to-end tests that drive a real gateway with kubectl.
# Installs what it needs; extra arguments go to `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null; then
  echo "Rust is required: https://rustup.rs" >&2
  exit 1
fi
if ! command -v kubectl >/dev/null; then
  echo "kubectl is required for the end-to-end tests (it is in the machine image at /usr/bin/kubectl)" >&2
  exit 1
fi
if ! command -v curl >/dev/null; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && $sudo_cmd apt-get install -y -qq curl
fi
# The Python `kubernetes` client for the end-to-end test that drives the gateway with it,
# in a venv outside the clone (kept between runs).
py_venv="${WASMGATE_PY_VENV:-$HOME/.cache/wasmgate-py}"
if ! "$py_venv/bin/python" -c 'import kubernetes' 2>/dev/null; then
  python3 -m venv "$py_venv"
  "$py_venv/bin/pip" install --quiet --disable-pip-version-check 'kubernetes>=31'
fi
export WASMGATE_PYTHON="$py_venv/bin/python"
cargo test --workspace --locked "$@"
# The plugin tutorial is a workspace of its own: its tests natively, then the component.
cargo test --locked --manifest-path examples/plugins/hello-admission/Cargo.toml
bash plugins/build.sh

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
# The Wasm plugins first (the tutorial, plugins/ and the hostile fixtures, for
# wasm32-wasip2): the runtime and end-to-end tests load the components just built.
bash plugins/build.sh
cargo test --workspace --locked "$@"
# The plugins are workspaces of their own: their tests run natively.
cargo test --locked --manifest-path examples/plugins/hello-admission/Cargo.toml
cargo test --locked --manifest-path plugins/Cargo.toml

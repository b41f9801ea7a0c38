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
cargo test --workspace --locked "$@"

#!/usr/bin/env bash
# Builds the Wasm plugins shipped with the repository for wasm32-wasip2 (release) and
# prints where each component is. Installs the Rust target if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/wasmgate-target}"
cargo build --locked --release --target wasm32-wasip2 \
  --manifest-path examples/plugins/hello-admission/Cargo.toml
for wasm in "$CARGO_TARGET_DIR"/wasm32-wasip2/release/*.wasm; do
  echo "built $wasm ($(wc -c < "$wasm") bytes)"
done

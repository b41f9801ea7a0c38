#!/usr/bin/env bash
# Builds the Wasm plugins of this repository for wasm32-wasip2 (release): the tutorial
# (examples/plugins/hello-admission), the shipped plugins and the test fixtures in
# plugins/. Installs the Rust target if it is missing and prints where each component is
# (plugins/dist/NAME.wasm).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup target list --installed | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/wasmgate-target}"
cargo build --locked --release --target wasm32-wasip2 \
  --manifest-path examples/plugins/hello-admission/Cargo.toml
cargo build --locked --release --target wasm32-wasip2 --manifest-path plugins/Cargo.toml
# Copied to plugins/dist/ (not in git), where examples/plugins/*.yaml and the tests find
# them.
mkdir -p plugins/dist
for name in hello_admission widgets core_policy stamper owner_policy hostile wrong_wit; do
  wasm="$CARGO_TARGET_DIR/wasm32-wasip2/release/$name.wasm"
  cp "$wasm" "plugins/dist/$name.wasm.tmp" && mv "plugins/dist/$name.wasm.tmp" "plugins/dist/$name.wasm"
  echo "built plugins/dist/$name.wasm ($(wc -c < "$wasm") bytes)"
done

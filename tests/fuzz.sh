#!/usr/bin/env bash
# Fuzzes the parsers that take client input (issue 12): request paths, label and field
# selectors, query parameters, JSON/YAML/Protobuf bodies, strategic merge patches.
# Usage: tests/fuzz.sh [SECONDS_PER_TARGET] (default 30). Needs a nightly toolchain
# (installed with rustup when missing) and cargo-fuzz (installed from crates.io).
# Prints each target's executions; exits non-zero on the first crash, leaving the input
# under host/apimachinery/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../host/apimachinery"
seconds="${1:-30}"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# Its own target directory: nightly and sanitizer builds would invalidate the stable one.
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/wasmgate-fuzz-target}"
for t in request_path selectors query_options decode patch; do
  log=$(mktemp)
  if ! cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" -rss_limit_mb=2048 >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz target $t FAILED" >&2
    exit 1
  fi
  runs=$(grep -oE 'Done [0-9]+ runs' "$log" | tail -1 || true)
  echo "fuzz target $t: ${runs:-no summary} in ${seconds}s, no crash"
  rm -f "$log"
done

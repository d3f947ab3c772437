#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time: `scripts/fuzz.sh [seconds per target]`
# (default 60). Seeds come from fuzz/corpus/<target>/ (kept in the repo); inputs found during
# the run go to a temporary directory, so the checkout stays clean. A crash keeps its input
# under $CARGO_TARGET_DIR/fuzz/artifacts/<target>/ and fails the script.
#
# cargo-fuzz needs nightly-only rustc flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain take
# them. No sanitizer (`-s none`): the fuzzed crates forbid unsafe code, so AddressSanitizer would
# add build time and find nothing; debug assertions (`-a`) turn on overflow checks.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.2 --locked
export RUSTC_BOOTSTRAP=1
target_dir="$(realpath -m "${CARGO_TARGET_DIR:-target}")/fuzz"
flags=(--sanitizer none --debug-assertions --target-dir "$target_dir")
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo fuzz build "${flags[@]}"
failed=0
for target in $(cargo fuzz list); do
  artifacts="$target_dir/artifacts/$target"
  mkdir -p "$work/$target" "$artifacts"
  log="$work/$target.log"
  if cargo fuzz run "${flags[@]}" "$target" "$work/$target" "fuzz/corpus/$target" -- \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" \
      >"$log" 2>&1; then
    echo "fuzz $target: $(grep -E '^Done [0-9]+ runs' "$log" || echo 'done')"
  else
    failed=1
    tail -n 40 "$log"
    echo "fuzz $target: FAILED; the input is in $artifacts/ (reproduce: cargo fuzz run $target <file>)"
  fi
done
exit "$failed"

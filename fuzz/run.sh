#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for SECONDS each, one after the other, starting from
# the committed seeds (fuzz/seeds/TARGET) plus the local corpus (fuzz/corpus/TARGET, not
# committed). Exits non-zero on the first crash, leak, timeout or out-of-memory; libFuzzer leaves
# the input in fuzz/artifacts/TARGET/.
#
# Usage: fuzz/run.sh SECONDS [TARGET...]
#   bash fuzz/run.sh 20                      # what CI runs
#   nice -n 15 bash fuzz/run.sh 540          # a long run (9 minutes per target)
# Needs cargo-fuzz (CI installs it under ~/.cache/sidecar-injector/cargo-fuzz) and a nightly
# compiler or RUSTC_BOOTSTRAP=1 (set here). The build goes to FUZZ_TARGET_DIR (default
# ~/.cache/sidecar-injector/fuzz-target, outside the checkout, so CI reuses it).
# Prints one line per target: executions, coverage (cov: edges, ft: features), corpus size.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:?usage: fuzz/run.sh SECONDS [TARGET...]}
shift
export RUSTC_BOOTSTRAP=1
export PATH="$HOME/.cache/sidecar-injector/cargo-fuzz/bin:$PATH"
target_dir=${FUZZ_TARGET_DIR:-$HOME/.cache/sidecar-injector/fuzz-target}
# Release with debug assertions (overflow checks, the YAML fast path's cross-check); safe Rust
# needs no AddressSanitizer, and without it the build and every execution are much faster.
flags=(-O -a -s none --target-dir "$target_dir")

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi

cargo fuzz build "${flags[@]}"
for target in "${targets[@]}"; do
  mkdir -p "corpus/$target" "artifacts/$target"
  log=$(mktemp)
  status=0
  timeout --kill-after=30 $((seconds + 120)) \
    cargo fuzz run "${flags[@]}" "$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$seconds" -max_len=32768 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 >"$log" 2>&1 || status=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 || true)
  runs=$(grep -E '^stat::number_of_executed_units:' "$log" | awk '{print $2}' | tail -n 1 || true)
  printf '%-18s %ss  executions %s  %s\n' "$target" "$seconds" "${runs:-?}" "${done_line:-(no final line)}"
  if [ "$status" -ne 0 ]; then
    echo "error: fuzz target $target failed (exit $status); the input is in fuzz/artifacts/$target/" >&2
    grep -E 'panicked|ERROR: libFuzzer|SUMMARY|Test unit written' "$log" | head -n 20 >&2 || true
    tail -n 40 "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
done

#!/usr/bin/env bash
# Non-test lines of the injection engine: a file's lines before its first `#[cfg(test)]`, test
# files (`tests.rs`, anything under a `tests/` folder) left out.
#
#   bench/engine-size.sh [CHECKOUT]    # default: this checkout
#
# Prints the pipeline with its caches (`src/pipeline*` and `src/cache/`) and the engine's whole
# `src/`.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
src=crates/injector-engine/src
count() {
  local total=0 f n
  for f in "$@"; do
    case "$f" in */tests.rs | */tests/*) continue ;; esac
    n=$(awk '/^#\[cfg\(test\)\]/ { exit } { n++ } END { print n + 0 }' "$f")
    total=$((total + n))
  done
  echo "$total"
}
# The pipeline (`pipeline.rs`, `pipeline/`) and its caches (`cache/`, or the caches that lived in
# `pipeline/` before it).
pipeline=$(find "$src" \( -path "$src/pipeline*" -o -path "$src/cache/*" \) -name '*.rs' | sort)
# shellcheck disable=SC2086
echo "pipeline and caches: $(count $pipeline)"
# shellcheck disable=SC2046
echo "engine src: $(count $(find "$src" -name '*.rs'))"

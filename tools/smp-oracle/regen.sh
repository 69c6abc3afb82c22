#!/usr/bin/env bash
# Regenerates the strategic-merge oracle: the case corpus, the Go-computed expectations and the
# generated Pod type table. Idempotent. Needs Go (module proxy for k8s.io/api + apimachinery).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
crate="$here/../../crates/strategic-merge"
bin="$(mktemp -d)/smp-oracle"
trap 'rm -rf "$(dirname "$bin")"' EXIT
python3 "$here/gen_cases.py"
(cd "$here" && go build -o "$bin" .)
"$bin" oracle "$crate/tests/oracle/cases" "$crate/tests/oracle/expected"
"$bin" schema > "$crate/src/pod_types.rs"

#!/usr/bin/env bash
# Regenerate crates/gotemplate/tests/oracle/expected/*.json from the cases with
# real Go text/template + sprig v3 (main oracle) and Istio's own function map and
# data types (istio oracle, tools/template-oracle/istio).
#
# Env:
#   SIDECAR_INJECTOR_SHARED  shared dir holding istio/ (default: <repo root>/../shared)
#   ORACLE_SKIP_ISTIO=1      skip the istio oracle (its build is large)
#   GOFLAGS                  passed through to go build
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
shared="${SIDECAR_INJECTOR_SHARED:-$repo/../shared}"
cases="$repo/crates/gotemplate/tests/oracle/cases"
expected="$repo/crates/gotemplate/tests/oracle/expected"
fixtures="$repo/crates/gotemplate/tests/oracle/istio-fixtures"
bin="$here/.bin"
mkdir -p "$bin" "$expected"

gover="$(go version | awk '{print $3}')"
if [[ "$gover" != "go1.26.8" ]]; then
  echo "warning: expected/ was recorded with go1.26.8, this is $gover: error texts may differ" >&2
fi
echo "== building main oracle ($gover)"
(cd "$here" && go build -o "$bin/template-oracle" .)
"$bin/template-oracle" run -cases "$cases" -expected "$expected"

if [[ "${ORACLE_SKIP_ISTIO:-0}" != "1" ]]; then
  if [[ ! -d "$shared/istio" ]]; then
    echo "error: shared dir $shared has no istio/ (set SIDECAR_INJECTOR_SHARED)" >&2
    exit 1
  fi
  echo "== building istio oracle"
  (cd "$here/istio" && go build -o "$bin/istio-oracle" .)
  "$bin/istio-oracle" -cases "$cases" -expected "$expected" -shared "$shared" -fixtures "$fixtures"
fi

# Drop expected files whose case file is gone, and check every case file has one.
for f in "$expected"/*.json; do
  [[ -e "$cases/$(basename "$f")" ]] || { echo "removing stale $(basename "$f")"; rm -f "$f"; }
done
missing=0
for f in "$cases"/*.json; do
  [[ -e "$expected/$(basename "$f")" ]] || { echo "warning: no expected file for $(basename "$f")" >&2; missing=1; }
done
exit $missing


#!/usr/bin/env bash
# Regenerates the Kubernetes type schema used by injector-engine's normalizer, and its oracle.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/k8s-schema" .)
"$bin/k8s-schema" schema > "$repo/crates/injector-engine/src/normalize/schema.json"
cases="$repo/crates/injector-engine/tests/normalize/cases.json"
if [ -f "$cases" ]; then
  "$bin/k8s-schema" normalize "$cases" > "$repo/crates/injector-engine/tests/normalize/expected.json"
fi
echo "schema: $(grep -c '"name"' "$repo/crates/injector-engine/src/normalize/schema.json") fields"

#!/usr/bin/env bash
# Regenerate the goyaml oracle corpus and its expected output with the real Go
# code (sigs.k8s.io/yaml v1.6.0 over go.yaml.in/yaml/v2 v2.4.4), and the
# Unicode tables the natural key order uses. Idempotent.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
crate="$here/../../crates/goyaml"
cd "$here"
bin="$(mktemp -d)/goyaml-oracle"
go build -o "$bin" .
python3 gen_cases.py "$crate/tests/oracle/cases.json"
"$bin" cases "$crate/tests/oracle/cases.json" "$crate/tests/oracle/expected.json"
"$bin" unicode "$crate/src/unicode_tables.rs"
rm -rf "$(dirname "$bin")"

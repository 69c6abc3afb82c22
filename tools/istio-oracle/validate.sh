#!/usr/bin/env bash
# Validates the generated workloads of the istioctl corpus with a real kube-apiserver: starts the
# end-to-end control plane (tests/e2e/control-plane.sh; its first start builds Kubernetes), creates
# the namespaces the workloads use, and dry-runs every workload server-side (validate.py).
# The report is written to crates/injector-engine/tests/data/istioctl/apiserver-validation.json.
#
# Env: CASES, SEED as for regen.sh (the same workloads are generated).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
data="$repo/crates/injector-engine/tests/data/istioctl"
work="$(mktemp -d)"
cleanup() { "$repo/tests/e2e/control-plane.sh" down "$work/cp" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
python3 "$here/gen_cases.py" "$work/cases.json" "${CASES:-700}" "${SEED:-15}"
"$repo/tests/e2e/control-plane.sh" up "$work/cp" >/dev/null
for ns in shop payments; do "$work/cp/kubectl" create namespace "$ns" >/dev/null; done
python3 "$here/validate.py" "$work/cp/kubectl" "$work/cases.json" "$data/apiserver-validation.json"

#!/usr/bin/env bash
# Re-records the istioctl differential corpus (crates/injector-engine/tests/data/istioctl/):
#
#   1. builds istioctl from the Go module proxy into ~/.cache/sidecar-injector/istioctl-<version>/
#      (once: about 17 minutes on 2 cores; later runs reuse it);
#   2. extracts the three settings profiles from `istioctl manifest generate` into profiles/;
#   3. generates the workloads (gen_cases.py; seeded, so the same every time);
#   4. runs `istioctl kube-inject` offline on every workload under every profile, and again on
#      istioctl's own output of every fourth successful one (re-injection), into expected/.
#
# Validating the generated workloads against a real API server is separate: validate.sh.
#
# Env:
#   ISTIO_VERSION   istio.io/istio module version (default: the pinned pseudo-version below)
#   CASES           number of generated workloads (default 700)
#   SEED            generator seed (default 15)
#   ORACLE_JOBS     istioctl runs in parallel (default 2)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
data="$repo/crates/injector-engine/tests/data/istioctl"
version="${ISTIO_VERSION:-v0.0.0-20260827124520-eed52ebb66ad}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/sidecar-injector/istioctl-$version"
istioctl="$cache/bin/istioctl"

gover="$(go version | awk '{print $3}')"
if [[ ! -x "$istioctl" ]]; then
  echo "== building istioctl $version with $gover into $cache (about 17 minutes cold on 2 cores)"
  mkdir -p "$cache"
  (cd "$cache" && GOBIN="$cache/bin.tmp" GOFLAGS="${GOFLAGS:--buildvcs=false}" \
    nice -n 10 go install "istio.io/istio/istioctl/cmd/istioctl@$version")
  mv "$cache/bin.tmp" "$cache/bin"
fi
python3 -c 'import yaml' 2>/dev/null || { echo "error: python3 needs PyYAML (apt-get install python3-yaml)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "== profiles from istioctl manifest generate"
python3 "$here/oracle.py" profiles "$istioctl" "$data/profiles"
echo "== generating ${CASES:-700} workloads (seed ${SEED:-15})"
python3 "$here/gen_cases.py" "$work/cases.json" "${CASES:-700}" "${SEED:-15}"
echo "== istioctl kube-inject on every workload and profile"
ISTIO_VERSION="$version" python3 "$here/oracle.py" record "$istioctl" "$work/cases.json" "$data/profiles" "$data/expected"
du -sh "$data"

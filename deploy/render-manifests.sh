#!/usr/bin/env bash
# Render the plain manifests of deploy/manifests/ and deploy/rbac-cluster-mode.yaml from the
# Helm chart, or check that they (and the chart's copies of the injector's embedded defaults)
# are in sync with it.
#
#   deploy/render-manifests.sh            rewrite deploy/manifests/*.yaml, deploy/rbac-cluster-mode.yaml
#                                         and the chart's files/
#   deploy/render-manifests.sh --check    exit 1, naming each file that differs, when a rewrite
#                                         would change anything (tests/e2e/install.sh runs it)
#
# Presets (file <- values):
#   sidecar-injector.yaml          the chart's defaults (opt-in), namespace sidecar-injector
#   sidecar-injector-opt-out.yaml  values-opt-out.yaml, namespace sidecar-injector
#   istio-drop-in.yaml             values-istio.yaml, namespace istio-system
# Helm is built from the Go module proxy on first use (tools/helm/build.sh); HELM=... overrides.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART=$ROOT/deploy/helm/sidecar-injector
OUT=$ROOT/deploy/manifests
DEFAULTS=$ROOT/crates/injector-engine/defaults
CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1
HELM=${HELM:-$("$ROOT/tools/helm/build.sh" | tail -n 1)}

# preset FILE NAMESPACE [VALUES]
PRESETS=(
  "sidecar-injector.yaml sidecar-injector"
  "sidecar-injector-opt-out.yaml sidecar-injector values-opt-out.yaml"
  "istio-drop-in.yaml istio-system values-istio.yaml"
)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/render-manifests.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/manifests" "$TMP/files"

# The chart ships the injector's embedded configuration as its default.
for f in injector-config.yaml values.json mesh.yaml; do cp "$DEFAULTS/$f" "$TMP/files/$f"; done
if [ "$CHECK" = 0 ]; then cp "$TMP/files/"* "$CHART/files/"; fi

render() {   # render FILE NAMESPACE [VALUES] -> $TMP/manifests/FILE
  local file=$1 ns=$2 values=${3:-} args=()
  [ -n "$values" ] && args=(-f "$CHART/$values")
  {
    echo "# Rendered from deploy/helm/sidecar-injector by deploy/render-manifests.sh${values:+ with $values};"
    echo "# do not edit: change the chart and run the script. Apply with: kubectl apply -f $file"
    echo "apiVersion: v1"
    echo "kind: Namespace"
    echo "metadata:"
    echo "  name: $ns"
    "$HELM" template sidecar-injector "$CHART" --namespace "$ns" "${args[@]}"
  } > "$TMP/manifests/$file"
}
for p in "${PRESETS[@]}"; do
  # shellcheck disable=SC2086
  render $p
done

# The permissions and guards of `serve --cluster` with its own defaults (Istio's names in
# istio-system), the probe included: the Istio drop-in preset's ServiceAccount, RBAC, the CA
# Secret and Lease it may not create, and the admission policy.
{
  echo "# The permissions of \`sidecar-injector serve --cluster\` with its defaults (Istio's names, namespace"
  echo "# istio-system, ServiceAccount sidecar-injector) and the synthetic probe, with the objects it may use"
  echo "# but not create (its CA Secret, empty, and its Lease) and the admission policy that guards them:"
  echo "# the chart's Istio drop-in preset with probe.enabled. Rendered from deploy/helm/sidecar-injector"
  echo "# by deploy/render-manifests.sh; do not edit. Leave the probe's part out when the probe is off."
  "$HELM" template sidecar-injector "$CHART" --namespace istio-system -f "$CHART/values-istio.yaml" \
    --set probe.enabled=true \
    --show-only templates/serviceaccount.yaml --show-only templates/clusterrole.yaml \
    --show-only templates/role.yaml --show-only templates/secret-ca.yaml --show-only templates/lease.yaml \
    --show-only templates/admission-policy.yaml --show-only templates/probe.yaml
} > "$TMP/manifests/rbac-cluster-mode.yaml"

RBAC=$ROOT/deploy/rbac-cluster-mode.yaml
if [ "$CHECK" = 0 ]; then
  mkdir -p "$OUT"
  mv "$TMP/manifests/rbac-cluster-mode.yaml" "$RBAC"
  cp "$TMP/manifests/"*.yaml "$OUT/"
  echo "render-manifests: wrote $(cd "$TMP/manifests" && printf '%s ' *.yaml)to $OUT" >&2
  exit 0
fi

stale=0
if ! cmp -s "$TMP/manifests/rbac-cluster-mode.yaml" "$RBAC"; then
  echo "render-manifests: deploy/rbac-cluster-mode.yaml is not what the chart renders (run deploy/render-manifests.sh):" >&2
  diff -u "$RBAC" "$TMP/manifests/rbac-cluster-mode.yaml" 2>&1 | head -n 20 >&2 || true
  stale=1
fi
rm -f "$TMP/manifests/rbac-cluster-mode.yaml"
for f in "$TMP/manifests/"*.yaml; do
  n=$(basename "$f")
  if ! cmp -s "$f" "$OUT/$n"; then
    echo "render-manifests: deploy/manifests/$n is not what the chart renders (run deploy/render-manifests.sh):" >&2
    diff -u "$OUT/$n" "$f" 2>&1 | head -n 20 >&2 || true
    stale=1
  fi
done
for f in "$TMP/files/"*; do
  n=$(basename "$f")
  if ! cmp -s "$f" "$CHART/files/$n"; then
    echo "render-manifests: deploy/helm/sidecar-injector/files/$n differs from crates/injector-engine/defaults/$n (run deploy/render-manifests.sh)" >&2
    stale=1
  fi
done
[ "$stale" = 0 ] && echo "render-manifests: deploy/manifests and the chart's files are in sync" >&2
exit "$stale"

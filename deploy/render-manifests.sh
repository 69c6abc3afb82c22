#!/usr/bin/env bash
# Render the plain manifests of deploy/manifests/ from the Helm chart, or check that they (and
# the chart's copies of the injector's embedded defaults) are in sync with it.
#
#   deploy/render-manifests.sh            rewrite deploy/manifests/*.yaml and the chart's files/
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

if [ "$CHECK" = 0 ]; then
  mkdir -p "$OUT"
  cp "$TMP/manifests/"*.yaml "$OUT/"
  echo "render-manifests: wrote $(cd "$TMP/manifests" && printf '%s ' *.yaml)to $OUT" >&2
  exit 0
fi

stale=0
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

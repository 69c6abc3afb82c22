#!/usr/bin/env bash
# Build Helm 3 (helm.sh/helm/v3/cmd/helm) from the Go module proxy through the wrapper module
# in this directory (go.mod pins the version as a `tool`; go.sum pins every dependency).
# Output goes to a cache directory OUTSIDE the checkout:
#
#   ${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}/helm-v<HELM_VERSION>/helm
#
# Reused when that binary reports the pinned version; concurrent builds are serialised by a
# flock on the cache directory. Cold build on 2 shared cores: see the README's Install section.
#
# Usage: tools/helm/build.sh [--force]
# Prints the binary's path as its last line of stdout (progress goes to stderr).
set -euo pipefail

HELM_VERSION=3.22.0   # must match go.mod

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}
BASE=$CACHE/helm-v$HELM_VERSION
OUT=$BASE/helm
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

log() { echo "build-helm: $*" >&2; }
die() { echo "build-helm: ERROR: $*" >&2; exit 1; }

version_ok() {
  [ -x "$OUT" ] || return 1
  [ "$("$OUT" version --template '{{.Version}}' 2>/dev/null)" = "v$HELM_VERSION" ]
}

command -v go >/dev/null 2>&1 || die "go not found in PATH (Go >= 1.26 is required to build helm)"
grep -Eq "helm.sh/helm/v3 v$HELM_VERSION( |\$)" "$HERE/go.mod" \
  || die "$HERE/go.mod does not require helm.sh/helm/v3 v$HELM_VERSION"

mkdir -p "$BASE"
exec 9>"$BASE/.build.lock"
if ! flock -n 9; then
  log "another build holds $BASE/.build.lock; waiting (up to 30 min)"
  flock -w 1800 9 || die "timed out waiting for $BASE/.build.lock"
fi

if [ "$FORCE" = 0 ] && version_ok; then
  log "up to date: helm v$HELM_VERSION"
  echo "$OUT"
  exit 0
fi

# The Kubernetes version helm assumes for `helm template`/`lint` (Capabilities.KubeVersion)
# follows its client-go, as helm's own Makefile sets it.
CG=$(cd "$HERE" && go list -mod=readonly -f '{{.Version}}' -m k8s.io/client-go) \
  || die "cannot read k8s.io/client-go's version from $HERE/go.mod"
CG=${CG#v}
KMAJOR=$(( ${CG%%.*} + 1 ))
KMINOR=$(echo "$CG" | cut -d. -f2)
LDF="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  LDF="$LDF -X $p.k8sVersionMajor=$KMAJOR -X $p.k8sVersionMinor=$KMINOR"
done

log "building helm v$HELM_VERSION (cold build on 2 cores: a few minutes) ..."
start=$(date +%s)
TMP=$BASE/helm.tmp.$$
trap 'rm -f "$TMP"' EXIT
( cd "$HERE" && CGO_ENABLED=0 GOFLAGS=-mod=readonly go build -buildvcs=false -trimpath -pgo=off \
    -ldflags "$LDF" -o "$TMP" helm.sh/helm/v3/cmd/helm ) \
  || die "go build of helm failed (module tools/helm; see the go errors above)"
mv -f "$TMP" "$OUT"
log "built helm v$HELM_VERSION in $(( $(date +%s) - start )) s"
version_ok || die "$OUT does not report v$HELM_VERSION"
echo "$OUT"

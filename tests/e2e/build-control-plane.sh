#!/usr/bin/env bash
# Build the upstream Kubernetes control-plane binaries used by the end-to-end tests
# (kube-apiserver, kube-controller-manager, kubectl from k8s.io/kubernetes, and etcd from
# go.etcd.io/etcd/server/v3) out of the Go module proxy, via the wrapper modules in
# tools/k8s/{kubernetes,etcd}. Output goes to a cache directory OUTSIDE the checkout:
#
#   ${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}/k8s-v<KUBE_VERSION>/bin/
#
# A binary is rebuilt only when its `--version` does not report the pinned version.
# GOMODCACHE/GOCACHE are left at Go's defaults so warm rebuilds are fast.
#
# Usage: tests/e2e/build-control-plane.sh [--force]
# Prints the bin directory as its last line of stdout (progress goes to stderr).
set -euo pipefail

KUBE_VERSION=1.36.3   # must match tools/k8s/kubernetes/go.mod
ETCD_VERSION=3.6.16   # must match tools/k8s/etcd/go.mod

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}
BASE=$CACHE/k8s-v$KUBE_VERSION
BIN=$BASE/bin
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

log() { echo "build-control-plane: $*" >&2; }
die() { echo "build-control-plane: ERROR: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found in PATH (Go >= 1.26 is required to build the control plane)"
GOV=$(go env GOVERSION 2>/dev/null || true)
case "$GOV" in
  go1.2[6-9]*|go1.[3-9]*) ;;
  *) die "Go >= 1.26 required, found '${GOV:-unknown}'" ;;
esac

KMOD=$ROOT/tools/k8s/kubernetes
EMOD=$ROOT/tools/k8s/etcd
grep -Eq "k8s.io/kubernetes v$KUBE_VERSION( |\$)" "$KMOD/go.mod" \
  || die "$KMOD/go.mod does not require k8s.io/kubernetes v$KUBE_VERSION (run tools/k8s/update-modules.sh)"
grep -Eq "go.etcd.io/etcd/server/v3 v$ETCD_VERSION( |\$)" "$EMOD/go.mod" \
  || die "$EMOD/go.mod does not require go.etcd.io/etcd/server/v3 v$ETCD_VERSION (run tools/k8s/update-modules.sh)"

# version_ok NAME -> 0 when $BIN/NAME exists and reports the pinned version
version_ok() {
  local b=$BIN/$1 out
  [ -x "$b" ] || return 1
  case $1 in
    kube-apiserver|kube-controller-manager)
      out=$("$b" --version 2>/dev/null) || return 1
      [ "$out" = "Kubernetes v$KUBE_VERSION" ] ;;
    kubectl)
      out=$("$b" version --client 2>/dev/null) || return 1
      printf '%s\n' "$out" | grep -qx "Client Version: v$KUBE_VERSION" ;;
    etcd)
      out=$("$b" --version 2>/dev/null) || return 1
      printf '%s\n' "$out" | grep -qx "etcd Version: $ETCD_VERSION" ;;
  esac
}

mkdir -p "$BIN"
# Serialise concurrent builds into the same cache directory.
exec 9>"$BASE/.build.lock"
if ! flock -n 9; then
  log "another build holds $BASE/.build.lock; waiting (up to 60 min)"
  flock -w 3600 9 || die "timed out waiting for $BASE/.build.lock"
fi

KUBE_BINS=(kube-apiserver kube-controller-manager kubectl)
need_kube=()
for n in "${KUBE_BINS[@]}"; do
  if [ "$FORCE" = 1 ] || ! version_ok "$n"; then need_kube+=("$n"); fi
done
need_etcd=0
if [ "$FORCE" = 1 ] || ! version_ok etcd; then need_etcd=1; fi

if [ ${#need_kube[@]} -eq 0 ] && [ "$need_etcd" = 0 ]; then
  log "up to date: Kubernetes v$KUBE_VERSION, etcd $ETCD_VERSION"
  echo "$BIN"
  exit 0
fi

export CGO_ENABLED=0
TMP=$BASE/tmp.$$
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP"

MINOR=$(echo "$KUBE_VERSION" | cut -d. -f2)
LDV=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  LDV="$LDV -X $p.gitVersion=v$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$MINOR -X $p.gitTreeState=clean"
done

if [ ${#need_kube[@]} -gt 0 ]; then
  pkgs=()
  for n in "${need_kube[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$n"); done
  log "building ${need_kube[*]} v$KUBE_VERSION (cold build on 2 cores: ~25-35 min) ..."
  start=$(date +%s)
  ( cd "$KMOD" && go build -buildvcs=false -trimpath -pgo=off -ldflags "-s -w$LDV" -o "$TMP/" "${pkgs[@]}" ) \
    || die "go build of ${need_kube[*]} failed (module tools/k8s/kubernetes; see the go errors above)"
  log "built ${need_kube[*]} in $(( $(date +%s) - start )) s"
fi
if [ "$need_etcd" = 1 ]; then
  log "building etcd $ETCD_VERSION ..."
  start=$(date +%s)
  ( cd "$EMOD" && go build -buildvcs=false -trimpath -pgo=off -ldflags "-s -w" -o "$TMP/etcd" go.etcd.io/etcd/server/v3 ) \
    || die "go build of etcd failed (module tools/k8s/etcd; see the go errors above)"
  log "built etcd in $(( $(date +%s) - start )) s"
fi

for f in "$TMP"/*; do mv -f "$f" "$BIN/"; done

fail=0
for n in "${KUBE_BINS[@]}" etcd; do
  if version_ok "$n"; then log "ok: $BIN/$n"; else log "version check FAILED for $BIN/$n"; fail=1; fi
done
[ "$fail" = 0 ] || die "built binaries do not report Kubernetes v$KUBE_VERSION / etcd $ETCD_VERSION"
log "binaries are in $BIN"
echo "$BIN"

#!/usr/bin/env bash
# Build our wrapper around Istio's own injector webhook (this directory's Go module, with
# istio.io/istio pinned in go.mod and every dependency in go.sum) from the Go module proxy.
# Output goes to a cache directory OUTSIDE the checkout:
#
#   ${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}/istio-webhook-<ISTIO_VERSION>/istio-webhook
#
# Built with the same flags as istioctl (tools/istio-oracle), so the Go build cache it left is
# reused. Rebuilt only when this directory's sources changed (their hash is kept beside the binary);
# concurrent builds are serialised by a flock on the cache directory. The binary serves Istio's
# webhook (serve), answers one review (respond), compares two injectors' pods (check) and runs
# the Go benchmark (bench); see main.go.
#
# Usage: tools/istio-webhook/build.sh [--force]
# Prints the binary's path as its last line of stdout (progress goes to stderr).
set -euo pipefail

ISTIO_VERSION=v0.0.0-20260827124520-eed52ebb66ad   # must match go.mod

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}
BASE=$CACHE/istio-webhook-$ISTIO_VERSION
OUT=$BASE/istio-webhook
FORCE=0
[ "${1:-}" = "--force" ] && FORCE=1

log() { echo "build-istio-webhook: $*" >&2; }
die() { echo "build-istio-webhook: ERROR: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found in PATH (Go >= 1.26 is required)"
grep -Eq "istio.io/istio $ISTIO_VERSION( |\$)" "$HERE/go.mod" \
  || die "$HERE/go.mod does not require istio.io/istio $ISTIO_VERSION"

sources_hash() { (cd "$HERE" && cat go.mod go.sum ./*.go | sha256sum | cut -d' ' -f1); }

mkdir -p "$BASE"
exec 9>"$BASE/.build.lock"
if ! flock -n 9; then
  log "another build holds $BASE/.build.lock; waiting (up to 30 min)"
  flock -w 1800 9 || die "timed out waiting for $BASE/.build.lock"
fi

want=$(sources_hash)
if [ "$FORCE" = 0 ] && [ -x "$OUT" ] && [ "$(cat "$BASE/sources.sha256" 2>/dev/null)" = "$want" ]; then
  log "up to date: $OUT"
  echo "$OUT"
  exit 0
fi

log "building istio-webhook against istio.io/istio $ISTIO_VERSION (cold on 2 cores: ~15 min; warm Go cache: ~1 min) ..."
start=$(date +%s)
TMP=$BASE/istio-webhook.tmp.$$
trap 'rm -f "$TMP"' EXIT
( cd "$HERE" && GOFLAGS=-mod=readonly nice -n 10 go build -buildvcs=false -o "$TMP" . ) \
  || die "go build failed (module tools/istio-webhook; see the go errors above)"
mv -f "$TMP" "$OUT"
echo "$want" >"$BASE/sources.sha256"
log "built in $(( $(date +%s) - start )) s"
echo "$OUT"

#!/usr/bin/env bash
# Regenerate the wrapper modules tools/k8s/kubernetes and tools/k8s/etcd for a
# Kubernetes / etcd version. Only needed when bumping versions; the committed
# go.mod/go.sum are what the build uses.
#
#   tools/k8s/update-modules.sh [KUBE_VERSION] [ETCD_VERSION]     (defaults: 1.36.3 3.6.16)
#
# The list of staging modules (k8s.io/X => ./staging/src/k8s.io/X) is derived from
# k8s.io/kubernetes's own go.mod; each becomes `replace k8s.io/X => k8s.io/X v0.<minor>.<patch>`.
set -euo pipefail
KV=${1:-1.36.3}
EV=${2:-3.6.16}
MINOR=$(echo "$KV" | cut -d. -f2)
SV=0.$MINOR.${KV##*.}
HERE=$(cd "$(dirname "$0")" && pwd)
export CGO_ENABLED=0 GOFLAGS=-mod=mod

# ---- kubernetes wrapper
cd "$HERE/kubernetes"
rm -f go.mod go.sum
go mod init sidecar-injector.invalid/tools/k8s/kubernetes >/dev/null 2>&1
go mod edit -go=1.26.0
GM=$(go mod download -json "k8s.io/kubernetes@v$KV" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$GM" ] || { echo "could not download go.mod of k8s.io/kubernetes@v$KV" >&2; exit 1; }
mods=$(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$GM")
[ -n "$mods" ] || { echo "no staging replace lines found in $GM" >&2; exit 1; }
for m in $mods; do go mod edit "-replace=$m=$m@v$SV"; done
go get -tool \
  "k8s.io/kubernetes/cmd/kube-apiserver@v$KV" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@v$KV" \
  "k8s.io/kubernetes/cmd/kubectl@v$KV"
go mod tidy
echo "kubernetes wrapper: k8s.io/kubernetes v$KV, $(echo "$mods" | wc -w) staging modules at v$SV"

# ---- etcd wrapper
cd "$HERE/etcd"
rm -f go.mod go.sum
go mod init sidecar-injector.invalid/tools/k8s/etcd >/dev/null 2>&1
go mod edit -go=1.26.0
go get -tool "go.etcd.io/etcd/server/v3@v$EV"
go mod tidy
echo "etcd wrapper: go.etcd.io/etcd/server/v3 v$EV"

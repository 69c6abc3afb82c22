#!/usr/bin/env bash
# Fetch Istio's injector corpus (test data, charts, profiles) from the Go module proxy at the
# istio.io/istio version tools/istio-webhook/go.mod pins, checked against that module's go.sum
# (`go mod download` refuses a download whose hash differs). Output goes OUTSIDE the checkout:
#
#   ${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}/istio-corpus/<VERSION>/
#
# laid out like Istio's repository (pkg/kube/inject/testdata, manifests/charts/..., LICENSE), plus
# settings/ (what Helm renders from that version's istiod chart for Istio's test profile: the
# `config` and `values` of the istio-sidecar-injector ConfigMap, the `mesh` of the istio ConfigMap)
# derived/{values,config,mesh}/default.* (the same files under the names the tests read), and
# default-profile-cases.json (the cases of Istio's TestInjection that need only those settings).
# A finished copy has a `.complete` marker; an unfinished one is never left in place. Concurrent
# runs are serialised by a flock. Needs go, python3 with PyYAML, and Helm (tools/helm/build.sh).
#
# Usage: tools/istio-corpus/fetch.sh
# Prints the corpus directory as its last line of stdout (progress goes to stderr).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PIN_DIR=$ROOT/tools/istio-webhook
CACHE=${SIDECAR_INJECTOR_CACHE:-$HOME/.cache/sidecar-injector}

log() { echo "istio-corpus: $*" >&2; }
die() { echo "istio-corpus: ERROR: $*" >&2; exit 1; }

VERSION=$(sed -n 's/^[[:space:]]*istio\.io\/istio \(v[^ ]*\).*/\1/p' "$PIN_DIR/go.mod" | head -n 1)
[ -n "$VERSION" ] || die "$PIN_DIR/go.mod does not require istio.io/istio"
OUT=$CACHE/istio-corpus/$VERSION

if [ -f "$OUT/.complete" ] && [ -f "$OUT/default-profile-cases.json" ]; then
  log "up to date: $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null 2>&1 || die "go not found in PATH (Go >= 1.26 is required)"
command -v python3 >/dev/null 2>&1 || die "python3 not found in PATH"
python3 -c 'import yaml' 2>/dev/null || die "python3 has no PyYAML (apt-get install python3-yaml)"

mkdir -p "$CACHE/istio-corpus"
exec 9>"$CACHE/istio-corpus/.fetch.lock"
if ! flock -n 9; then
  log "another fetch holds $CACHE/istio-corpus/.fetch.lock; waiting (up to 30 min)"
  flock -w 1800 9 || die "timed out waiting for $CACHE/istio-corpus/.fetch.lock"
fi
if [ -f "$OUT/.complete" ] && [ -f "$OUT/default-profile-cases.json" ]; then
  echo "$OUT"
  exit 0
fi

log "downloading istio.io/istio $VERSION through the Go module proxy (checked against $PIN_DIR/go.sum) ..."
INFO=$(cd "$PIN_DIR" && GOFLAGS=-mod=readonly go mod download -json istio.io/istio) \
  || die "go mod download istio.io/istio failed (see the go errors above)"
field() { printf '%s' "$INFO" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
SRC=$(field Dir)
SUM=$(field Sum)
[ "$(field Version)" = "$VERSION" ] || die "go mod download gave $(field Version), not $VERSION"
[ -d "$SRC/pkg/kube/inject/testdata" ] || die "$SRC has no pkg/kube/inject/testdata"

HELM=$("$ROOT/tools/helm/build.sh" | tail -n 1)

TMP=$CACHE/istio-corpus/.$VERSION.tmp.$$
trap 'rm -rf "$TMP"' EXIT
rm -rf "$TMP"
mkdir -p "$TMP"

copy() {  # copy SRC-relative paths, keeping them relative
  for rel in "$@"; do
    mkdir -p "$TMP/$(dirname "$rel")"
    cp -R "$SRC/$rel" "$TMP/$rel"
  done
}
copy LICENSE \
  pkg/kube/inject/testdata \
  manifests/charts/istio-control/istio-discovery \
  manifests/charts/default \
  manifests/profiles \
  istioctl/pkg/kubeinject/testdata \
  istioctl/pkg/checkinject/testdata
analyzers=pkg/config/analysis/analyzers/testdata
mkdir -p "$TMP/$analyzers/common"
for f in "$SRC/$analyzers"/injection*.yaml "$SRC/$analyzers"/image-auto.yaml \
  "$SRC/$analyzers"/sidecar-injector-configmap*.yaml "$SRC/$analyzers"/common/sidecar-injector-*.yaml; do
  [ -f "$f" ] && cp "$f" "$TMP/$analyzers/${f#"$SRC/$analyzers/"}"
done
chmod -R u+w "$TMP"  # the module cache is read-only

# Istio's test profile: manifests/profiles/default.yaml's hub, tag `latest`, and its values.
HUB=$(python3 -c "import yaml,sys; print(yaml.safe_load(open(sys.argv[1]))['spec']['hub'])" \
  "$TMP/manifests/profiles/default.yaml")
log "rendering the istiod chart with Helm (hub $HUB, tag latest) ..."
mkdir -p "$TMP/settings"
"$HELM" template istiod "$TMP/manifests/charts/istio-control/istio-discovery" \
  --namespace istio-system \
  --set global.hub="$HUB" --set global.tag=latest \
  --set global.istioNamespace=istio-system --set global.configValidation=true \
  --set meshConfig.enablePrometheusMerge=true \
  >"$TMP/settings/rendered.yaml" || die "helm template of the istiod chart failed"

python3 - "$TMP" <<'PY'
import os, sys, yaml

root = sys.argv[1]
settings = os.path.join(root, "settings")
rendered = open(os.path.join(settings, "rendered.yaml")).read()
raw, maps = {}, {}
for chunk in rendered.split("\n---\n"):
    doc = yaml.safe_load(chunk)
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        name = doc["metadata"]["name"]
        raw[name], maps[name] = "---\n" + chunk.removeprefix("---\n").rstrip("\n") + "\n", doc

def write(rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)

injector, mesh = maps["istio-sidecar-injector"], maps["istio"]
write("settings/injector-configmap.yaml", raw["istio-sidecar-injector"])
write("settings/mesh-configmap.yaml", raw["istio"])
for key, rel in [(injector["data"]["config"], "config.yaml"), (injector["data"]["values"], "values.json"),
                 (mesh["data"]["mesh"], "mesh.yaml")]:
    write("settings/" + rel, key)
write("derived/values/default.json", injector["data"]["values"])
write("derived/config/default.yaml", injector["data"]["config"])
write("derived/mesh/default.yaml", mesh["data"]["mesh"])
os.remove(os.path.join(settings, "rendered.yaml"))
PY

# The default profile's cases of Istio's TestInjection, read from the module's inject_test.go.
python3 "$HERE/default_profile_cases.py" "$SRC/pkg/kube/inject/inject_test.go" \
  "$TMP/pkg/kube/inject/testdata/inject" >"$TMP/default-profile-cases.json" \
  || die "could not read the test table of $SRC/pkg/kube/inject/inject_test.go"

cat >"$TMP/SOURCE.md" <<EOF
# Source of the files in this folder

Made by tools/istio-corpus/fetch.sh from the Go module istio.io/istio $VERSION
(checksum $SUM, as tools/istio-webhook/go.sum pins it): Istio's files copied byte for byte under
their own paths (Apache License 2.0, Copyright Istio Authors; see LICENSE), and, in settings/ and
derived/, what Helm renders from that version's istiod chart for the test profile (hub $HUB,
tag latest, global.istioNamespace=istio-system, global.configValidation=true,
meshConfig.enablePrometheusMerge=true). default-profile-cases.json lists the cases of Istio's
TestInjection (pkg/kube/inject/inject_test.go of that version) that need no settings beyond these,
in the form of the shared corpus's cases.json; tools/istio-corpus/default_profile_cases.py made it.
EOF
echo "$VERSION $SUM" >"$TMP/.complete"
rm -rf "$OUT"
mv "$TMP" "$OUT"
trap - EXIT
log "done: $OUT"
echo "$OUT"

#!/usr/bin/env bash
# Checks the image archive deploy/image/build.sh makes, as a registry and a kubelet would see it:
#   - the OCI layout: one manifest, tagged, one layer, digests and sizes that match the blobs;
#   - the config: linux/amd64, user 65532:65532, entrypoint /sidecar-injector, the labels
#     (version = the crate version, revision = HEAD, source, licenses, created);
#   - the layer: exactly /sidecar-injector (0755, root-owned), /etc/passwd and /etc/group,
#     nothing else: no shell, no libc; the binary statically linked;
#   - the image works: the binary from the layer prints the version, and (when run as root, with
#     chroot) `serve` started inside the unpacked root filesystem as UID 65532 with a read-only
#     view of it answers /healthz and /readyz and an admission over TLS;
#   - the SBOM beside the archive (ARCHIVE with .cdx.json): CycloneDX 1.5 describing this binary
#     and version for the musl target, every crate the binary links (Cargo.lock's resolution,
#     following normal dependencies from sidecar-injector) at its locked version, nothing that is
#     not a normal or build dependency (no test-only crate), a licence and package URL each;
#   - reproducible: a second build of the same commit gives the same manifest digest and SBOM.
#
# Usage: deploy/image/verify.sh [ARCHIVE]   (default target/image/sidecar-injector-VERSION.oci.tar)
# Env: SKIP_REBUILD=1 skips the reproducibility rebuild.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
archive=${1:-target/image/sidecar-injector-$version.oci.tar}
[ -f "$archive" ] || { echo "no image archive at $archive: run deploy/image/build.sh first" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/oci" "$work/rootfs"
tar -xf "$archive" -C "$work/oci"

# ---- layout, config and layer, checked in one place (python: JSON and tar without extra tools)
python3 - "$work/oci" "$work/rootfs" "$version" "$(git rev-parse HEAD)" <<'EOF'
import hashlib, json, os, sys, tarfile, gzip, io

layout, rootfs, version, head = sys.argv[1:5]
failures = []

def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)

def blob(descriptor):
    algo, digest = descriptor["digest"].split(":", 1)
    path = os.path.join(layout, "blobs", algo, digest)
    data = open(path, "rb").read()
    check(hashlib.sha256(data).hexdigest() == digest and len(data) == descriptor["size"],
          f"blob {descriptor['digest'][:19]}... matches its digest and size")
    return data

layout_file = json.load(open(os.path.join(layout, "oci-layout")))
check(layout_file.get("imageLayoutVersion") == "1.0.0", "oci-layout 1.0.0")
index = json.load(open(os.path.join(layout, "index.json")))
check(len(index["manifests"]) == 1, "one manifest in index.json")
desc = index["manifests"][0]
check(desc.get("annotations", {}).get("org.opencontainers.image.ref.name") == version,
      f"tagged {version}")
manifest = json.loads(blob(desc))
config = json.loads(blob(manifest["config"]))
layers = manifest["layers"]
check(len(layers) == 1, "one layer")

check(config.get("os") == "linux" and config.get("architecture") == "amd64", "linux/amd64")
c = config.get("config", {})
check(c.get("User") == "65532:65532", f"user 65532:65532 (got {c.get('User')!r})")
check(c.get("Entrypoint") == ["/sidecar-injector"], f"entrypoint /sidecar-injector (got {c.get('Entrypoint')!r})")
check(c.get("Cmd") == ["serve"], f"cmd serve (got {c.get('Cmd')!r})")
check(set(c.get("ExposedPorts", {})) == {"15017/tcp", "15014/tcp"}, "exposes 15017 (webhook) and 15014 (monitoring)")
check(not c.get("Env"), f"no environment baked in (got {c.get('Env')!r})")
labels = c.get("Labels", {})
p = "org.opencontainers.image."
check(labels.get(p + "version") == version, f"label version = {version} (got {labels.get(p + 'version')!r})")
check(labels.get(p + "revision") == head, f"label revision = HEAD (got {labels.get(p + 'revision')!r})")
for key in ("source", "licenses", "created", "title", "description"):
    check(bool(labels.get(p + key)), f"label {key} set ({labels.get(p + key)!r})")
check(len(config.get("rootfs", {}).get("diff_ids", [])) == 1, "config lists one diff_id")

data = blob(layers[0])
if layers[0]["mediaType"].endswith("+gzip"):
    data = gzip.decompress(data)
check("sha256:" + hashlib.sha256(data).hexdigest() == config["rootfs"]["diff_ids"][0],
      "layer's uncompressed digest = the config's diff_id")
with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    members = {m.name.lstrip("./").rstrip("/"): m for m in tar.getmembers()}
    members.pop("", None)
    expected = {"etc", "etc/group", "etc/passwd", "sidecar-injector"}
    check(set(members) == expected, f"layer holds exactly {sorted(expected)} (got {sorted(members)})")
    binary = members.get("sidecar-injector")
    check(binary is not None and binary.isfile() and binary.mode == 0o755
          and binary.uid == 0 and binary.gid == 0, "/sidecar-injector: regular file, 0755, root-owned")
    shells = [n for n in members if os.path.basename(n) in ("sh", "bash", "ash", "busybox")]
    check(not shells, "no shell")
    passwd = tar.extractfile("etc/passwd").read().decode() if "etc/passwd" in members else ""
    check("nonroot:x:65532:65532:" in passwd, "/etc/passwd names 65532 nonroot")
    tar.extractall(rootfs, filter="tar")

if failures:
    print(f"{len(failures)} check(s) failed", flush=True)
    sys.exit(1)
EOF

# ---- the SBOM, against cargo's own resolution of the binary's dependencies
sbom=${archive%.oci.tar}.cdx.json
[ "$sbom" != "$archive" ] || sbom=$archive.cdx.json
[ -f "$sbom" ] || { echo "FAIL no SBOM beside the archive ($sbom)" >&2; exit 1; }
cargo metadata --locked --format-version 1 --filter-platform x86_64-unknown-linux-musl >"$work/metadata.json"
python3 - "$sbom" "$work/metadata.json" "$version" <<'PY'
import json, sys

sbom_path, metadata_path, version = sys.argv[1:4]
failures = []

def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)

bom = json.load(open(sbom_path))
check(bom.get("bomFormat") == "CycloneDX" and bom.get("specVersion") == "1.5", "SBOM: CycloneDX 1.5 JSON")
meta = bom.get("metadata", {})
main = meta.get("component", {})
check(main.get("name") == "sidecar-injector" and main.get("version") == version,
      f"SBOM describes sidecar-injector {version} (got {main.get('name')!r} {main.get('version')!r})")
triple = {p.get("name"): p.get("value") for p in meta.get("properties", [])}.get("cdx:rustc:sbom:target:triple")
check(triple == "x86_64-unknown-linux-musl", f"SBOM is for the image's target (got {triple!r})")

metadata = json.load(open(metadata_path))
packages = {p["id"]: p for p in metadata["packages"]}
nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
root = next(i for i in nodes if packages[i]["name"] == "sidecar-injector")

def reachable(kinds):
    seen, todo = set(), [root]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        for dep in nodes[node]["deps"]:
            if any(k["kind"] in kinds for k in dep["dep_kinds"]):
                todo.append(dep["pkg"])
    seen.discard(root)
    return {(packages[i]["name"], packages[i]["version"]) for i in seen}

linked = reachable({None})
built = reachable({None, "build"})
components = {(c.get("name"), c.get("version")) for c in bom.get("components", [])}
missing = sorted(linked - components)
check(not missing, f"every one of the {len(linked)} crates the binary links is listed at its locked version"
      + (f" (missing: {missing[:10]})" if missing else ""))
extra = sorted(components - built)
check(not extra, f"nothing else: the {len(components)} components are normal or build dependencies"
      + (f" (not: {extra[:10]})" if extra else ""))
bare = [c.get("name") for c in bom.get("components", []) if not c.get("licenses") or not c.get("purl")]
check(not bare, "every component has a licence and a package URL" + (f" (not: {bare[:10]})" if bare else ""))
for crate in ("rustls", "ring", "tokio", "hyper", "kube-client"):
    check(any(name == crate for name, _ in components), f"SBOM lists {crate}")

if failures:
    print(f"{len(failures)} SBOM check(s) failed", flush=True)
    sys.exit(1)
PY

bin=$work/rootfs/sidecar-injector
if readelf -l "$bin" | grep -q 'program interpreter'; then
  echo "FAIL /sidecar-injector is dynamically linked; the image has no libc" >&2; exit 1
fi
echo "ok   /sidecar-injector is statically linked"
got=$("$bin" --version)
[ "$got" = "sidecar-injector $version" ] || { echo "FAIL --version printed '$got'" >&2; exit 1; }
echo "ok   the image's binary prints '$got'"

# ---- run it inside its own root filesystem, as the image's user (needs root for chroot)
if [ "$(id -u)" = 0 ] && command -v chroot >/dev/null; then
  port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
  p_https=$(port); p_mon=$(port)
  chmod -R a-w "$work/rootfs"
  chroot --userspec=65532:65532 "$work/rootfs" /sidecar-injector serve \
    --addr "127.0.0.1:$p_https" --monitoring-addr "127.0.0.1:$p_mon" >"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$p_mon/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$p_mon/healthz" >/dev/null ||
    { echo "FAIL serve in the image's root filesystem: no /healthz"; cat "$work/serve.log"; exit 1; } >&2
  curl -fsS "http://127.0.0.1:$p_mon/readyz" >/dev/null ||
    { echo "FAIL serve in the image's root filesystem: not ready"; cat "$work/serve.log"; exit 1; } >&2
  echo "ok   serve runs in the image's read-only root filesystem as 65532: /healthz and /readyz answer"
  review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"image-check","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"operation":"CREATE","namespace":"default","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}}}'
  answer=$(curl -fsS --insecure -H 'Content-Type: application/json' --data "$review" \
    "https://127.0.0.1:$p_https/inject")
  case $answer in
    *'"uid":"image-check"'*'"patch":'*) echo "ok   an admission over TLS is answered with a patch" ;;
    *) echo "FAIL admission answer: $answer" >&2; exit 1 ;;
  esac
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
else
  echo "skip running serve inside the image's root filesystem (needs root for chroot)"
fi

# ---- reproducible
if [ -z "${SKIP_REBUILD:-}" ]; then
  digest() { tar -xOf "$1" ./index.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifests"][0]["digest"])'; }
  BIN=$bin bash deploy/image/build.sh "$work/again.oci.tar" >/dev/null
  first=$(digest "$archive"); second=$(digest "$work/again.oci.tar")
  [ "$first" = "$second" ] || { echo "FAIL not reproducible: $first then $second" >&2; exit 1; }
  echo "ok   reproducible: a second build gives the same manifest $first"
  cmp -s "$sbom" "$work/again.cdx.json" || { echo "FAIL the SBOM differs between two builds" >&2; exit 1; }
  echo "ok   reproducible: and the same SBOM"
fi
echo "image verified: $archive"

#!/usr/bin/env bash
# Builds the container image as an OCI image archive, without a container daemon.
#
# The image holds one file that matters: a statically linked (musl) `sidecar-injector` at
# /sidecar-injector, its entrypoint. Beside it only /etc/passwd and /etc/group naming the user it
# runs as (65532, "nonroot"). No shell, no package manager, no libc: nothing to exec into.
# The layer is assembled with tar (owner 0:0, fixed mtimes, sorted names) and the image with
# umoci (Debian package), so the same commit gives the same image digest.
#
# Beside the archive goes its SBOM, OUTPUT with .cdx.json for .oci.tar: the binary's dependency
# tree (every crate, version, licence and package URL; Cargo.lock's resolution for the musl
# target, build-time crates included) as CycloneDX 1.5 JSON, made by cargo-cyclonedx (installed
# into ~/.cache/sidecar-injector/cargo-cyclonedx when missing).
#
# Usage: deploy/image/build.sh [OUTPUT]
#   OUTPUT   where the archive goes (default target/image/sidecar-injector-VERSION.oci.tar)
# Environment:
#   BIN=FILE         use this static binary instead of building one
#   TAG=NAME         the tag recorded in the archive's index (default: the crate version)
#   SOURCE_DATE_EPOCH  image and layer timestamps (default: the commit time of HEAD)
#   SOURCE_URL=URL   the org.opencontainers.image.source label (default: the git remote
#                    `origin`, else Cargo.toml's `repository`, else "local build")
#
# Load or push the archive with any OCI tool, e.g.
#   skopeo copy oci-archive:target/image/sidecar-injector-0.1.0.oci.tar docker://REGISTRY/sidecar-injector:0.1.0
#   podman load -i target/image/sidecar-injector-0.1.0.oci.tar
# deploy/image/verify.sh checks what this makes (CI runs both).
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "deploy/image/build.sh: $*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ -n "$version" ] || die "no version = \"...\" in Cargo.toml's [workspace.package]"
tag=${TAG:-$version}
out=${1:-target/image/sidecar-injector-$version.oci.tar}
license=$(sed -n 's/^license = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
source_url=${SOURCE_URL:-$(git remote get-url origin 2>/dev/null ||
  sed -n 's/^repository = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)}
source_url=${source_url:-local build}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
musl=x86_64-unknown-linux-musl

# ---- tools a fresh machine lacks
missing=()
have umoci || missing+=(umoci)
have musl-gcc || [ -n "${BIN:-}" ] || missing+=(musl-tools)  # mimalloc and ring compile C
if [ ${#missing[@]} -gt 0 ]; then
  have apt-get || die "missing ${missing[*]} and no apt-get to install them"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ---- the static binary
bin=${BIN:-}
if [ -z "$bin" ]; then
  if ! rustup target list --installed 2>/dev/null | grep -qx "$musl"; then
    rustup target add "$musl"
  fi
  cargo build --release --locked -p sidecar-injector --target "$musl"
  bin=target/$musl/release/sidecar-injector
fi
[ -x "$bin" ] || die "$bin is not an executable file"
if readelf -l "$bin" 2>/dev/null | grep -q 'program interpreter'; then
  die "$bin is dynamically linked (it names a program interpreter); the image has no libc: build it for $musl"
fi

# ---- the root filesystem, as one deterministic layer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs
mkdir -p "$root/etc"
install -m 0755 "$bin" "$root/sidecar-injector"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' \
  >"$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$root/etc/group"
chmod 0644 "$root/etc/passwd" "$root/etc/group"
tar --create --file "$work/layer.tar" --directory "$root" --sort=name --numeric-owner \
  --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
  etc etc/group etc/passwd sidecar-injector

# ---- the image
layout=$work/oci
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci raw add-layer --image "$layout:$tag" --history.created "$created" \
  --history.created_by "deploy/image/build.sh" --history.comment "sidecar-injector $version ($revision)" \
  "$work/layer.tar"
label() { printf -- '--config.label=org.opencontainers.image.%s=%s' "$1" "$2"; }
umoci config --no-history --image "$layout:$tag" \
  --os linux --architecture amd64 --created "$created" \
  --config.user 65532:65532 \
  --config.entrypoint /sidecar-injector --config.cmd serve \
  --config.exposedports 15017/tcp --config.exposedports 15014/tcp \
  "$(label title sidecar-injector)" \
  "$(label description 'Kubernetes sidecar injection webhook, compatible with Istio')" \
  "$(label version "$version")" \
  "$(label revision "$revision")" \
  "$(label created "$created")" \
  "$(label source "$source_url")" \
  "$(label licenses "$license")"
umoci gc --layout "$layout"

mkdir -p "$(dirname "$out")"
tar --create --file "$out.partial" --directory "$layout" --sort=name --numeric-owner \
  --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" --format=posix \
  --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime .
mv "$out.partial" "$out"
manifest=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")
echo "image: $out ($(du -h "$out" | cut -f1)), tag $tag, manifest $manifest"

# ---- the SBOM, beside the archive
cdx_root="$HOME/.cache/sidecar-injector/cargo-cyclonedx"
if [ ! -x "$cdx_root/bin/cargo-cyclonedx" ]; then
  cargo install --locked cargo-cyclonedx --root "$cdx_root"
fi
sbom=${out%.oci.tar}.cdx.json
[ "$sbom" != "$out" ] || sbom=$out.cdx.json
# cargo-cyclonedx writes next to the crate's Cargo.toml; the file is moved out at once.
"$cdx_root/bin/cargo-cyclonedx" cyclonedx --manifest-path crates/sidecar-injector/Cargo.toml \
  --format json --spec-version 1.5 --target "$musl" --describe binaries --quiet
mv crates/sidecar-injector/sidecar-injector_bin.cdx.json "$sbom"
echo "sbom: $sbom ($(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["components"]))' "$sbom") components)"

#!/usr/bin/env bash
# Builds the image of Containerfile without a container engine (issue 41, item 3; `make image`):
#   1. a Debian 12 minbase root with the package's dependencies (mmdebstrap, from the Debian mirrors
#      apt uses here), documentation, man pages and locales left out as debian:12-slim does:
#      BUILD/image/base.tar, kept while the dependencies are the same;
#   2. the package installed into a copy of it (its postinst makes the gpulse user), apt's lists
#      and caches removed;
#   3. packed as an OCI image with umoci: one layer, user gpulse (numeric, for runAsNonRoot),
#      entrypoint `gpulse exporter`, port 9400: BUILD/image/oci (layout, tag gpulse:VERSION and
#      gpulse:latest) and BUILD/gpulse-image.tar (the layout as one archive: `podman load -i` or
#      `skopeo copy oci-archive:build/gpulse-image.tar ...`).
# Runs as root (device nodes and file owners of the root filesystem); prints the compressed size.
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "build-image: must run as root (it makes a root filesystem)" >&2; exit 1; }
for tool in mmdebstrap umoci dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
debs=("$build"/gpulse_*.deb)
[ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ] || { echo "build-image: expected one $build/gpulse_*.deb (make deb)" >&2; exit 1; }
deb=$(realpath "${debs[0]}")
version=$(dpkg-deb -f "$deb" Version)
out="$build/image"
mkdir -p "$out"

# 1. The base root: minbase plus what the package depends on (first of each alternative).
deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | sort -u | paste -sd, -)
if [ ! -f "$out/base.tar" ] || [ "$(cat "$out/base.deps" 2>/dev/null)" != "$deps" ]; then
  mirror=()
  [ -f /etc/apt/sources.list.d/debian.sources ] && mirror=(/etc/apt/sources.list.d/debian.sources)
  rm -f "$out/base.tar" "$out/base.deps"
  # merged /usr set up by the hook (usr-is-merged), not by the usrmerge package and its Perl
  mmdebstrap --quiet --variant=minbase --include="$deps" --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    bookworm "$out/base.part.tar" "${mirror[@]}" </dev/null
  mv "$out/base.part.tar" "$out/base.tar"
  echo "$deps" > "$out/base.deps"
fi

# 2. The package installed into a copy of the base.
work=$(mktemp -d "${TMPDIR:-/tmp}/gpulse-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/rootfs"
tar -C "$work/rootfs" --numeric-owner -xpf "$out/base.tar"
cp "$deb" "$work/rootfs/tmp/gpulse.deb"
chroot "$work/rootfs" dpkg -i /tmp/gpulse.deb >/dev/null
rm -rf "$work/rootfs/tmp/gpulse.deb" "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/log/"*.log
uid=$(chroot "$work/rootfs" id -u gpulse)
gid=$(chroot "$work/rootfs" id -g gpulse)

# 3. The OCI image: an empty one, its root filesystem replaced by ours, repacked as one layer.
rm -rf "$out/oci"
umoci init --layout "$out/oci"
umoci new --image "$out/oci:gpulse"
umoci unpack --image "$out/oci:gpulse" "$work/bundle" >/dev/null
rm -rf "$work/bundle/rootfs"
mv "$work/rootfs" "$work/bundle/rootfs"
umoci repack --image "$out/oci:gpulse" "$work/bundle"
umoci config --image "$out/oci:gpulse" --tag "$version" \
  --author "gpulse developers" --os linux --architecture "$(dpkg --print-architecture)" \
  --config.user "$uid:$gid" --config.workingdir / \
  --config.entrypoint /usr/bin/gpulse --config.entrypoint exporter \
  --config.env NVIDIA_VISIBLE_DEVICES=all --config.env NVIDIA_DRIVER_CAPABILITIES=utility \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --config.exposedports 9400/tcp \
  --config.label org.opencontainers.image.title=gpulse \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.description=gpulse exporter: GPU metrics with dcgm-exporter's names on :9400"
umoci tag --image "$out/oci:$version" latest
umoci rm --image "$out/oci:gpulse"
umoci gc --layout "$out/oci"
tar -C "$out/oci" -cf "$build/gpulse-image.tar" .
size=$(python3 - "$out/oci" "$version" <<'PY'
import json, os, sys
layout, tag = sys.argv[1], sys.argv[2]
def blob(d):
    return os.path.join(layout, "blobs", *d.split(":"))
index = json.load(open(os.path.join(layout, "index.json")))
desc = next(m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag)
manifest = json.load(open(blob(desc["digest"])))
print(sum(l["size"] for l in manifest["layers"]))
PY
)
echo "build-image: gpulse:$version in $out/oci and $build/gpulse-image.tar, user $uid:$gid, compressed layers $size bytes ($((size / 1048576)) MiB)"

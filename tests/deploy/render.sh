#!/usr/bin/env bash
# Renders every overlay of deploy/kubernetes with `kubectl kustomize` (kubectl's own kustomize:
# Debian's kubernetes-client or the machine's kubectl) and validates the renderings (validate.mjs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v kubectl >/dev/null || { echo "render.sh: kubectl not found (scripts/install-deps.sh installs kubernetes-client)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for overlay in "$here"/../../deploy/kubernetes/overlays/*/; do
  name=$(basename "$overlay")
  # kustomize v5 warns on stderr that bases and patchesStrategicMerge are deprecated: they are kept
  # so that Debian 12's kubectl (kustomize v2) renders the same (docs/install.md).
  kubectl kustomize "$overlay" > "$out/$name.yaml" 2> "$out/$name.err" || { cat "$out/$name.err" >&2; exit 1; }
done
node "$here/validate.mjs" "$out"

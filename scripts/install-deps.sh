#!/usr/bin/env bash
# Installs the Debian packages gpulse needs. Idempotent: packages that are already installed are not
# touched, and nothing runs apt-get when everything is present.
#
# Usage: scripts/install-deps.sh [--build-only]
#   (default)     what building gpulse needs and what its tests and benchmarks run (`make test`)
#   --build-only  only what building gpulse and the NVML simulator needs (`make demo`): the real
#                 components the tests run (Chromium, Prometheus, Slurm, ...) are not installed
set -euo pipefail

# gpulse and the simulator: compilers, CMake, and the libraries src/ and sim/ link.
build_packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libboost-dev libssl-dev zlib1g-dev libcrypt-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev
  liburing-dev libsqlite3-dev libncurses-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
)
# The tests, the fuzz targets and the benchmarks, and the real components they run.
test_packages=(
  clang libclang-rt-14-dev openssl sqlite3 libgtest-dev libgmock-dev libbenchmark-dev
  librust-nvml-wrapper-sys-dev
  python3 python3-jsonschema python3-yaml tmux man-db groff-base
  rocm-smi
  chromium
  prometheus prometheus-node-exporter prometheus-alertmanager wrk python3-prometheus-client curl
  slurm-wlm munge iproute2
  python3-grpcio python3-protobuf
  lintian mmdebstrap umoci
)
# `kubectl kustomize` renders deploy/kubernetes; Debian's kubectl is in kubernetes-client, unless the
# machine has a kubectl of its own (the two cannot both be installed).
command -v kubectl >/dev/null || test_packages+=(kubernetes-client)
case "${1:-}" in
  "") packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  --build-only) packages=("${build_packages[@]}") ;;
  *) echo "usage: $0 [--build-only]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# Debian's prometheus packages start their daemons on install where they can. gpulse's tests start
# their own instances on free loopback ports and need none, so keep apt from starting services with a
# temporary policy-rc.d (only when the machine has none of its own).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod +x "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

#!/usr/bin/env bash
# Installs the Debian packages gpulse needs to build, test and benchmark. Idempotent: packages that are
# already installed are not touched, and nothing runs apt-get when everything is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git clang libclang-rt-14-dev
  libboost-dev libssl-dev zlib1g-dev libcrypt-dev openssl nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  liburing-dev libsqlite3-dev sqlite3 libncurses-dev libgtest-dev libgmock-dev libbenchmark-dev
  librust-nvml-wrapper-sys-dev
  python3 python3-jsonschema python3-yaml tmux
  rocm-smi
  chromium
  prometheus prometheus-node-exporter prometheus-alertmanager wrk python3-prometheus-client curl
  slurm-wlm munge iproute2
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf
)

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

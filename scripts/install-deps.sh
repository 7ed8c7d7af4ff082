#!/usr/bin/env bash
# Installs the Debian packages gpulse needs to build, test and benchmark. Idempotent: packages that are
# already installed are not touched, and nothing runs apt-get when everything is present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git clang libclang-rt-14-dev
  libboost-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  libncurses-dev libgtest-dev libgmock-dev libbenchmark-dev
  librust-nvml-wrapper-sys-dev
  python3 python3-jsonschema python3-yaml
  prometheus
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
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

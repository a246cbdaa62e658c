#!/usr/bin/env bash
# Installs every system package Whale needs, from Debian's packages only.
# (chromium: the tests render the run report in it, headless.)
# Idempotent: when everything is there it checks and returns in a second.
set -euo pipefail

packages=(
  cmake ninja-build ccache g++ lld pkg-config
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  zlib1g-dev libzstd-dev libedit-dev
  libgtest-dev
  libopenblas-pthread-dev
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-dev
  libdnnl-dev
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "bootstrap: done"

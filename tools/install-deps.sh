#!/usr/bin/env bash
# Installs what building and testing Conflux needs on Debian/Ubuntu (as root, or through sudo).
# Required: a C++20 compiler, CMake >= 3.25, Ninja, pkg-config, GoogleTest.
# Optional, detected by the build: hwloc, libnuma, libibverbs, UCX. iproute2: the many-host tests
# (network namespaces, tc).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libgtest-dev
          libhwloc-dev libnuma-dev libibverbs-dev libucx-dev iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

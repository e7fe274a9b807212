#!/usr/bin/env bash
# Installs what building and testing Conflux needs on Debian/Ubuntu (as root, or through sudo).
# Required: a C++20 compiler, CMake >= 3.25, Ninja, pkg-config, GoogleTest.
# Optional, detected by the build: hwloc, libnuma, libibverbs, UCX. iproute2: the many-host tests
# (network namespaces, tc). Python (pip): torch 2.13.0 (the CPU build; the PyTorch backend is built
# and tested when torch imports), pytest and expecttest (PyTorch's own test suite needs it),
# nvidia-nccl-cu13 (NCCL's own nccl.h, which the NCCL shim's test program compiles against).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libgtest-dev
          libhwloc-dev libnuma-dev libibverbs-dev libucx-dev iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python_packages=(torch==2.13.0 pytest expecttest nvidia-nccl-cu13==2.32.3)
if ! command -v python3 > /dev/null; then
  echo "install-deps: no python3; the PyTorch backend is left out"
elif TORCH_DEVICE_BACKEND_AUTOLOAD=0 python3 -c "import torch, pytest, expecttest, nvidia.nccl" 2> /dev/null; then
  echo "install-deps: Python packages present"
else
  echo "install-deps: pip installing ${python_packages[*]}"
  python3 -m pip install -q --root-user-action=ignore "${python_packages[@]}"
fi

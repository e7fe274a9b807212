#!/usr/bin/env bash
# The main job: install dependencies, build Conflux (Release), and run the demo on 4 ranks.
#   tools/run-demo.sh [RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="${1:-4}"
tools/install-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCFX_BUILD_TESTS=OFF
cmake --build build-release
build-release/tools/cfxrun -n "$ranks" -p build-release/examples/allreduce_demo

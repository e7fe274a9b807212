#!/usr/bin/env bash
# The main job: install dependencies, build Conflux (Release), then on 4 ranks under cfxrun run the
# AllReduce demo and all_reduce_perf (nccl-tests' output, values checked), then DDP training from
# PyTorch on the 'conflux' backend under torchrun (examples/torch_ddp.py).
#   tools/run-demo.sh [RANKS]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="${1:-4}"
tools/install-deps.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCFX_BUILD_TESTS=OFF
cmake --build build-release
build-release/tools/cfxrun -n "$ranks" -p build-release/examples/allreduce_demo
build-release/tools/cfxrun -n "$ranks" build-release/perf/all_reduce_perf -b 8 -e 64M -f 8 -c 1
PYTHONPATH="$PWD/build-release/python/lib" OMP_NUM_THREADS=1 \
  python3 -m torch.distributed.run --standalone --nproc-per-node "$ranks" examples/torch_ddp.py 20

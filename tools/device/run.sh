#!/bin/bash
# Runs on a lent GPU machine, from the repository root, over the bundle tools/device/bundle.sh made
# (carried as .devcarry): the GPU tests (ctest -L gpu's programs), the PCIe probe, AllReduce on device
# buffers against NCCL, the host benchmarks of issue #31 section 5, and the PyTorch backend on CUDA
# tensors (its extension built here against this machine's torch). Each step has a time cap and the
# whole a deadline (DEADLINE_S, default 450 s); logs go to $OUT (or ./device-out).
# Usage: tools/device/run.sh [STEP...]   (default: every step; the names are step's first arguments)
set -u
out=${OUT:-$PWD/device-out}; mkdir -p "$out/logs"
b=$PWD/.devcarry/build
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH=$b/comm:$b/cuda:$PWD/.devcarry/lib${nccl_lib:+:$nccl_lib}
export UCX_MODULE_DIR=$PWD/.devcarry/lib/ucx HWLOC_PLUGINS_PATH=/nonexistent PYTHONUNBUFFERED=1
deadline=$(( $(date +%s) + ${DEADLINE_S:-450} ))
summary=$out/summary.txt
only=" $* "

step() {  # step NAME CAP_S COMMAND...: runs COMMAND under min(CAP_S, time left), logs to $out/NAME.log
  local name=$1 cap=$2; shift 2
  [[ "$only" == "  " || "$only" == *" $name "* ]] || return 0
  local left=$(( deadline - $(date +%s) ))
  (( left < cap )) && cap=$left
  if (( cap < 5 )); then echo "SKIPPED $name (deadline)" | tee -a "$summary"; return; fi
  local t0=$(date +%s)
  timeout -k 5 "$cap" "$@" >"$out/logs/$name.log" 2>&1
  local rc=$?
  echo "rc=$rc $(( $(date +%s) - t0 ))s $name: $*" | tee -a "$summary"
  tail -n 4 "$out/logs/$name.log" | sed 's/^/    /' | tee -a "$summary"
}

{ nvidia-smi; nproc; lscpu | grep -E 'Model name|^CPU\(s\)|NUMA|L3'; grep -o -w -E 'avx512f|avx512_bf16|avx512_fp16' /proc/cpuinfo | sort | uniq -c
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; ls "${nccl_lib:-/none}"; } >"$out/logs/info.txt" 2>&1
step gpu_test 120 "$b/cuda/staged_gpu_test"
step nccl_shim 40 env CFX_CUDA_CHUNK_BYTES=65536 LD_LIBRARY_PATH="$b/nccl:$LD_LIBRARY_PATH" "$b/nccl/nccl_device_program" 3
step pcie 25 python3 perf/pcie_probe.py --reps 5
step gpu_allreduce 90 python3 perf/compare --build "$b" --buffers cuda --ranks 1,2,4 --colls all_reduce \
  --backends conflux,nccl,nccl_shim -b 8 -e 256M -f 16 -n 10 -w 3 --repeat 1 --timeout 40
threads=$(for t in 1 2 4 8 16 32 64; do (( t <= $(nproc) )) && echo $t; done | paste -sd,)
step membw 40 "$b/perf/membw" --size 256 --reps 3 --threads "$threads" --kernels memcpy,add,add_nt,add2_nt
step kernels 40 "$b/perf/reduce_kernel_bench" 262144 2
step host_large 110 python3 perf/compare --build "$b" --buffers host --ranks 2,4,8 \
  --colls all_reduce,reduce_scatter,all_gather --backends conflux,conflux_reg,gloo -b 1M -e 64M -f 8 -n 5 -w 2 --repeat 3 --timeout 40
# Registered and plain buffers at 64-256 MiB against the same-run bound (section 3's sizes).
step host_registered 150 python3 perf/compare --build "$b" --buffers host --ranks "${HOST_RANKS:-2,4,8}" \
  --colls all_reduce,reduce_scatter --backends conflux,conflux_reg -b 64M -e 256M -f 2 -n 10 -w 2 --repeat 3 --timeout 60
# The libraries bundle.sh carried beside the build (AB_LIBS), alternated with the build's own.
# HOST_RANKS, AB_ROUNDS and AB_RANKS narrow these two steps to what one call has time for.
step libs_ab 120 tools/device/ab_libs.sh "${AB_ROUNDS:-3}" ${AB_RANKS:-2 4 8}
step host_small 45 python3 perf/compare --build "$b" --buffers host --ranks 2,4,8 --no-bound \
  --colls all_reduce,broadcast --backends conflux,gloo -b 8 -e 32K -f 64 -n 200 -w 20 --repeat 3 --timeout 30
step torch_build 120 env -C python MAX_JOBS=16 CONFLUX_LIB="$b/comm/libconflux.so" CONFLUX_CUDA_LIB="$b/cuda/libconflux_cuda.so" \
  CONFLUX_BUILD_BASE=/tmp/tc-build python3 setup.py -q build --build-lib /tmp/tc-lib
# One rank under cuda-gdb (no gdb on that machine): where it stops, if it stops.
step gpu_torch_bt 60 env -C python/tests PYTHONPATH=/tmp/tc-lib OMP_NUM_THREADS=1 TORCH_DEVICE_BACKEND_AUTOLOAD=0 \
  CONFLUX_LIB="$b/comm/libconflux.so" CONFLUX_CUDA_LIB="$b/cuda/libconflux_cuda.so" RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29561 cuda-gdb -q -batch -ex 'set pagination off' -ex run -ex bt \
  --args python3 cuda_worker.py collectives
step gpu_torch 100 env -C python/tests PYTHONFAULTHANDLER=1 PYTHONPATH=/tmp/tc-lib OMP_NUM_THREADS=1 TORCH_DEVICE_BACKEND_AUTOLOAD=0 \
  CONFLUX_LIB="$b/comm/libconflux.so" CONFLUX_CUDA_LIB="$b/cuda/libconflux_cuda.so" python3 gpu_torch.py
# The fallback path (no stream memory operations), last: it was the slow one.
step gpu_test_nomemops 100 env CFX_CUDA_MEMOPS=0 CFX_TIMEOUT=20 "$b/cuda/staged_gpu_test" --gtest_filter='*2Ranks*:*StreamOrder*:*Killed*'
tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs"
cat "$summary"

#!/bin/bash
# Packs what tools/device/run.sh needs on a lent GPU machine (which has CUDA, PyTorch and NCCL's wheel,
# but no hwloc, UCX, GoogleTest or Gloo, and no network to fetch them): this build's binaries, stripped,
# in the build tree's layout, and the shared libraries they load that the GPU machine's image lacks.
# Usage: tools/device/bundle.sh [BUILD] [DEST]   (defaults: build, .devcarry; DEST is git-ignored)
#   AB_LIBS="name=DIR ...": also carry DIR's libconflux.so* as DEST/ab/name, for run.sh's libs_ab step.
# Then: the device tool's run with carry [".devcarry"] and command "tools/device/run.sh".
set -euo pipefail
build=${1:-build}
dest=${2:-.devcarry}
rm -rf "$dest"
mkdir -p "$dest/build" "$dest/lib"
grep -qx "/$dest/" .git/info/exclude 2>/dev/null || echo "/$dest/" >>.git/info/exclude

copy() {  # copy a build file (and its symlinks), stripping debug information from binaries
  local f=$1 d="$dest/build/$(dirname "${1#$build/}")"
  mkdir -p "$d"
  if [ -L "$f" ]; then cp -P "$f" "$d/"; else strip --strip-debug -o "$d/$(basename "$f")" "$f"; fi
}
for f in "$build"/comm/libconflux.so* "$build"/cuda/libconflux_cuda.so* "$build"/nccl/libnccl.so* \
         "$build"/nccl/libconflux_nccl.so* "$build"/cuda/staged_gpu_test "$build"/cuda/staged_pipeline_test \
         "$build"/nccl/nccl_device_program "$build"/nccl/nccl_program "$build"/tools/cfxrun \
         "$build"/perf/membw "$build"/perf/reduce_kernel_bench "$build"/perf/pipeline_bench; do
  [ -e "$f" ] && copy "$f"
done
for f in "$build"/perf/*_perf "$build"/perf/*_perf_gloo "$build"/perf/*_perf_nccl; do
  [ -e "$f" ] && copy "$f"
done
for pair in ${AB_LIBS:-}; do
  mkdir -p "$dest/ab/${pair%%=*}"
  cp -a "${pair#*=}"/libconflux.so* "$dest/ab/${pair%%=*}/"
done
# The libraries outside the build tree and outside glibc/libstdc++ that those binaries load, except
# NCCL's own (the GPU machine's PyTorch brings libnccl.so.2) and the CUDA driver.
for f in $(find "$dest/build" -type f); do ldd "$f" 2>/dev/null || true; done |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E "/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libnccl)\.so|$PWD/" |
  while read -r lib; do cp -L "$lib" "$dest/lib/"; done
# UCX loads its transports as modules at run time.
ucxmod=$(dirname "$(ldconfig -p | awk '/libucp.so.0 /{print $NF; exit}')")/ucx
[ -d "$ucxmod" ] && cp -rL "$ucxmod" "$dest/lib/ucx"
du -sh "$dest"

#!/usr/bin/env bash
# Installs the build tree into a temporary prefix and checks what a user gets:
# the header, the library exporting only cfx* symbols, cfxrun in bin/, a C program built with
# `pkg-config --cflags --libs conflux` alone, and a CMake project using find_package(Conflux);
# installed binaries run with no LD_LIBRARY_PATH; an NCCL program runs on lib/conflux-nccl/libnccl.so.2.
set -euo pipefail
build_dir="$1"
src_dir="$2"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
# Any failing step names itself (CI shows only this test's output).
trap 'echo "install test failed at line $LINENO: $BASH_COMMAND"' ERR
log="$prefix/step.log"
# Runs a step with its output kept, and shows that output when the step fails.
quiet() {
  if ! "$@" > "$log" 2>&1; then echo "failed: $*"; cat "$log"; return 1; fi
}
quiet cmake --install "$build_dir" --prefix "$prefix"

test -f "$prefix/include/conflux/conflux.h" || { echo "header not installed"; exit 1; }
test -x "$prefix/bin/cfxrun" || { echo "cfxrun not installed"; exit 1; }
test -f "$prefix/include/conflux/train/ddp.h" || { echo "training headers not installed"; exit 1; }
test -f "$prefix/include/conflux/train/pipeline/executor.h" -a -f "$prefix/include/conflux/train/seqpar/attention.h" || { echo "pipeline/seqpar headers not installed"; exit 1; }
ls "$prefix"/lib*/libconflux_train.so* > /dev/null 2>&1 || { echo "libconflux_train not installed"; exit 1; }
lib="$(ls "$prefix"/lib*/libconflux.so* | head -n1)"
bad="$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^cfx' || true)"
if [ -n "$bad" ]; then echo "exported symbols without the cfx prefix:"; echo "$bad"; exit 1; fi
# (No `cmd | grep -q` under pipefail: grep leaving early would fail the pipeline with SIGPIPE.)
grep -q ' cfxAllReduce$' <<< "$(nm -D --defined-only "$lib")" || { echo "cfxAllReduce not exported"; exit 1; }

# Installed binaries and libraries find their libraries through an $ORIGIN-relative RPATH.
for f in "$prefix"/bin/* "$prefix"/lib*/libconflux*.so "$prefix"/lib*/conflux-nccl/libnccl.so.2; do
  [ "$(head -c 4 "$f" | tail -c 3)" = "ELF" ] || continue  # scripts (cfx-perf-compare)
  missing="$(env -u LD_LIBRARY_PATH ldd "$f" | grep 'not found' || true)"
  if [ -n "$missing" ]; then echo "$f does not find its libraries without LD_LIBRARY_PATH:"; echo "$missing"; exit 1; fi
done
quiet env -u LD_LIBRARY_PATH "$prefix/bin/cfxrun" -n 2 -- /bin/true || { echo "installed cfxrun does not run"; exit 1; }
quiet "$prefix/bin/cfx-doctor" --help || { echo "installed cfx-doctor does not run"; exit 1; }

# The NCCL shim: an NCCL program runs on it by library path alone.
nccl_dir="$(ls -d "$prefix"/lib*/conflux-nccl)"
grep -q 'soname: \[libnccl.so.2\]' <<< "$(readelf -d "$nccl_dir/libnccl.so.2")" || { echo "shim soname is not libnccl.so.2"; exit 1; }
if [ -x "$build_dir/nccl/nccl_program" ]; then
  grep -q "$nccl_dir/libnccl.so.2" <<< "$(LD_LIBRARY_PATH="$nccl_dir" ldd "$build_dir/nccl/nccl_program")" || { echo "the installed shim is not the libnccl.so.2 loaded"; exit 1; }
  quiet env LD_LIBRARY_PATH="$nccl_dir" "$build_dir/nccl/nccl_program" ranks 2 || { echo "an NCCL program fails on the installed shim"; exit 1; }
fi

pcdir="$(dirname "$(ls "$prefix"/lib*/pkgconfig/conflux.pc)")"
export PKG_CONFIG_PATH="$pcdir"
cc -std=c99 -o "$prefix/hello" "$src_dir/install_consumer/hello.c" $(pkg-config --cflags --libs conflux)
grep -q "conflux version 100" <<< "$(LD_LIBRARY_PATH="$(dirname "$lib")" "$prefix/hello")" || { echo "pkg-config build failed"; exit 1; }

quiet cmake -S "$src_dir/install_consumer" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix"
quiet cmake --build "$prefix/consumer-build"
grep -q "conflux version 100" <<< "$(LD_LIBRARY_PATH="$(dirname "$lib")" "$prefix/consumer-build/hello")" ||
  { echo "find_package build failed"; exit 1; }
echo "install test passed"

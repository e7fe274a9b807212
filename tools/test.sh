#!/usr/bin/env bash
# Install dependencies, build, and run the whole test suite with CTest.
#   tools/test.sh                    the normal build (build/)
#   tools/test.sh --sanitize=address ASan + UBSan build (build-asan/)
#   tools/test.sh --sanitize=thread  TSan build (build-tsan/)
#   --only=LABEL                     build the target LABEL_tests and run the tests labelled LABEL
#                                    (concurrency: engine, streams, run-ahead, faults, mismatches, p2p)
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize=""
only=""
for arg in "$@"; do
  case "$arg" in
    --sanitize=*) sanitize="${arg#--sanitize=}" ;;
    --only=*) only="${arg#--only=}" ;;
    *) echo "usage: $0 [--sanitize=address|thread] [--only=LABEL]" >&2; exit 2 ;;
  esac
done
tools/install-deps.sh
dir=build
type=RelWithDebInfo
if [ -n "$sanitize" ]; then
  dir="build-${sanitize/address/asan}"
  dir="${dir/thread/tsan}"
  type=Debug
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DCFX_SANITIZE="$sanitize"
if [ -n "$only" ]; then
  cmake --build "$dir" --target "${only}_tests"
else
  cmake --build "$dir"
fi
# Sanitizer runs: fail on the first report; TSan needs this to follow the ranks' forks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
# hwloc's dlopen'ed plugins (Debian's libhwloc-plugins, which Open MPI's packages pull in) leave a
# few allocations behind when hwloc unloads them, and LeakSanitizer reports them from an unknown
# module in every rank. Sanitizer runs discover the topology without plugins, as on a machine
# without that package (the normal build still loads them).
if [ -n "$sanitize" ]; then export HWLOC_PLUGINS_PATH="${HWLOC_PLUGINS_PATH:-/nonexistent-hwloc-plugins}"; fi
# TSan multiplies memory several times: one test at a time keeps 8-rank tests clear of the OOM killer.
jobs=2
if [ "$sanitize" = "thread" ]; then jobs=1; fi
cd "$dir"
labels=()
if [ -n "$only" ]; then labels=(-L "^${only}\$"); fi
# Sanitizer runs leave out the 6- and 7-rank instances of the tests parametrised by rank count (57
# of them; 1 to 5 and 8 ranks still run, 3 and 5 the non-powers of two; the normal build runs all):
# they were a sixth of ASan's test time, over CI's 60-minute budget on the slower machines. Of the
# forced-algorithm, large-count and forced single-copy tests, only AllReduce runs at 8 ranks there
# (the other 24 were a fifth of ASan's test time; the forced algorithms still run at 2 and 3 ranks,
# the large counts and the single copy at 1 to 5).
exclude=()
others='(Reduce|Broadcast|AllGather|ReduceScatter|AlltoAll)_8ranks'
if [ -n "$sanitize" ]; then exclude=(-E "[_/][67]ranks|/[67]( |\$)|ForcedAlgorithms/.*/${others}|LargeCount/${others}|ForcedCma/.*/${others}"); fi
# CI keeps the head and the tail of the output: a failure's digest goes last, where the tail shows it.
rc=0
ctest -j"$jobs" --output-on-failure --timeout 600 --no-tests=error "${labels[@]}" "${exclude[@]}" || rc=$?
if [ "$rc" -ne 0 ]; then
  python3 ../tools/failure-digest.py Testing/Temporary/LastTest.log || true
fi
exit "$rc"

#!/bin/bash
# Registered AllReduce with each libconflux.so carried in .devcarry/ab/<name>/ (tools/device/bundle.sh,
# AB_LIBS) and with the bundle's own ("build"), alternated round by round on the same binaries.
# Usage (from tools/device/run.sh's step libs_ab): tools/device/ab_libs.sh ROUNDS RANKS...
set -u
b=$PWD/.devcarry/build
rounds=$1; shift
for round in $(seq "$rounds"); do
  for lib in "$b/comm" "$PWD"/.devcarry/ab/*; do
    [ -d "$lib" ] || continue
    name=$(basename "$lib"); [ "$name" = comm ] && name=build
    for n in "$@"; do
      echo "== round $round lib $name ranks $n"
      LD_LIBRARY_PATH="$lib:$LD_LIBRARY_PATH" "$b/tools/cfxrun" -n "$n" "$b/perf/all_reduce_perf" \
        -b 64M -e 256M -f 2 -n 10 -w 2 -R 1 | grep -E '^ +[0-9]+ +[0-9]+ '
    done
  done
done

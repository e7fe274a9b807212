#!/usr/bin/env bash
# Runs the eight perf binaries of one backend with every datatype and op, values checked, at 1 and 3
# ranks, and fails unless every table ends "Out of bounds values : 0 OK" and its preamble names the
# expected library (for the NCCL backend on Conflux's shim: "NCCL 2.27.7", the shim's version).
#   perf_smoke.sh <cfxrun> <perf dir> <suffix> <expected text> [extra flags...]
set -euo pipefail
cfxrun=$1 dir=$2 suffix=$3 expect=$4
shift 4
for coll in all_reduce all_gather reduce_scatter alltoall broadcast reduce sendrecv alltoallv; do
  for n in 1 3; do
    out=$("$cfxrun" -n "$n" "$dir/${coll}_perf${suffix}" -b 8 -e 40K -f 71 -c 1 -d all -o all -w 1 -n 2 "$@" 2>&1) || {
      echo "$out"
      echo "FAIL: ${coll}_perf${suffix} on $n ranks exited non-zero"
      exit 1
    }
    if ! grep -q "Out of bounds values : 0 OK" <<<"$out" || ! grep -q -- "$expect" <<<"$out"; then
      echo "$out"
      echo "FAIL: ${coll}_perf${suffix} on $n ranks: wrong values, or '$expect' not in its preamble"
      exit 1
    fi
    echo "${coll}_perf${suffix} on $n ranks: ok"
  done
done

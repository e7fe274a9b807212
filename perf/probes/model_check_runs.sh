#!/bin/sh
# The namespace measurements behind `docs/scaling_model.py --check` (issue #35, section 4): Conflux's
# AllReduce over TCP at 2, 4 and 8 hosts of one rank, links shaped to 500 Mbit/s with a 256 KiB tbf
# bucket, 1 to 64 MiB, medians of 3, with what CFX_ALGO=auto picks and each other algorithm forced,
# under each TCP congestion control given (the namespaces take the machine's default, so it is set
# with sysctl for the run and put back after). Run as root, from the repository root, after a build:
#   perf/probes/model_check_runs.sh [cubic bbr] > model_runs.txt
set -eu
ccs="${*:-cubic bbr}"
old_cc=$(sysctl -n net.ipv4.tcp_congestion_control)
trap 'sysctl -qw net.ipv4.tcp_congestion_control="$old_cc"' EXIT
run() {  # congestion control, hosts, CFX_ALGO
  layout=$(seq -s, 1 "$2" | sed 's/[0-9]\+/1/g')
  echo "### cc=$1 hosts=$2 CFX_ALGO=$3"
  CFX_ALGO="$3" tests/netns/hosts.sh --layout "$layout" --rate 500mbit --burst 256kb -- \
    perf/compare --colls all_reduce --backends conflux -b 1M -e 64M -f 4 -n 3 -w 1 --repeat 3 |
    grep -E '^\| *[0-9]'
}
for cc in $ccs; do
  sysctl -qw net.ipv4.tcp_congestion_control="$cc"
  run "$cc" 2 auto
  for hosts in 4 8; do
    for algo in auto ring rhd; do run "$cc" "$hosts" "$algo"; done
  done
done

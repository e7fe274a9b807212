#!/usr/bin/env bash
# Test hosts: K network namespaces ("hosts") joined by veth pairs to a bridge that lives in a
# namespace of its own, optionally shaped with tc (rate and delay, both directions). Runs a
# command with CFX_TEST_HOSTS describing them, then removes everything, also on failure or
# interrupt. Never touches the machine's own interfaces, addresses or routes: every link, address
# and route is created inside these namespaces, and the default namespace gains nothing.
#
#   tests/netns/hosts.sh --layout 2,2 [--rate 2gbit [--burst 512kb]] [--delay 100us] [--keep-going] -- command...
#
# --layout R1,R2,...   one host per entry, with that many ranks (CFX_TEST_HOSTS="ns:ip:R ...")
# --burst SIZE         tbf's bucket (default 512kb): what a link passes at veth speed after an idle
#                      spell; a small one (32kb) makes the rate hold from the first byte
# The command runs in the default namespace (the harness starts each rank with `ip netns exec`);
# CFX_TEST_NETNS lists the host namespaces in order for commands that start ranks themselves.
# Exit status: the command's, or 77 (skip) when not root.
set -euo pipefail

layout=""
rate=""
burst="512kb"
delay=""
while [ $# -gt 0 ]; do
  case "$1" in
    --layout) layout="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --burst) burst="$2"; shift 2 ;;
    --delay) delay="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 --layout R1,R2,... [--rate RATE [--burst SIZE]] [--delay DELAY] -- command..." >&2; exit 2 ;;
  esac
done
[ -n "$layout" ] && [ $# -gt 0 ] || { echo "usage: $0 --layout R1,R2,... -- command..." >&2; exit 2; }
if [ "$(id -u)" != 0 ]; then
  echo "hosts.sh: needs root for network namespaces; skipping" >&2
  exit 77
fi
command -v ip >/dev/null || { echo "hosts.sh: iproute2 (ip) is missing" >&2; exit 1; }

IFS=, read -r -a ranks <<< "$layout"
tag="cfx$$"
switch="${tag}-sw"
hosts=()

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for ns in "${hosts[@]}" "$switch"; do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  exit "$rc"
}
child=""
stop() {
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
  exit "$1"
}
trap cleanup EXIT
trap 'stop 130' INT
trap 'stop 143' TERM

shape() {  # namespace, device: tbf for the rate, netem (where the kernel has it) for the delay
  [ -n "$rate$delay" ] || return 0
  local parent=root
  if [ -n "$delay" ]; then
    ip netns exec "$1" tc qdisc add dev "$2" root handle 1: netem delay "$delay" limit 100000 || {
      echo "hosts.sh: --delay needs the kernel's sch_netem" >&2
      return 1
    }
    parent="parent 1:"
  fi
  if [ -n "$rate" ]; then
    # shellcheck disable=SC2086
    ip netns exec "$1" tc qdisc add dev "$2" $parent handle 10: tbf rate "$rate" burst "$burst" latency 50ms
  fi
}

ip netns add "$switch"
ip -n "$switch" link add br0 type bridge
ip -n "$switch" link set br0 up
ip -n "$switch" link set lo up
spec=""
netnsList=""
for i in "${!ranks[@]}"; do
  ns="${tag}-h$i"
  hosts+=("$ns")
  ip netns add "$ns"
  ip -n "$switch" link add "p$i" type veth peer name cfx0 netns "$ns"
  ip -n "$switch" link set "p$i" master br0
  ip -n "$switch" link set "p$i" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev cfx0
  ip -n "$ns" link set cfx0 up
  shape "$ns" cfx0
  shape "$switch" "p$i"
  spec="$spec $ns:10.77.0.$((i + 1)):${ranks[$i]}"
  netnsList="$netnsList $ns"
done
# Bridge ports come up asynchronously; the bootstrap's connect retries cover the first moments.

export CFX_TEST_HOSTS="${spec# }"
export CFX_TEST_LINK="${rate:+--rate $rate} ${delay:+--delay $delay}"
export CFX_TEST_NETNS="${netnsList# }"
# In the background, so that a signal reaches the traps at once (bash runs traps only between
# foreground commands).
set +e
"$@" &
child=$!
wait "$child"
rc=$?
set -e
exit "$rc"

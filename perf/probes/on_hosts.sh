#!/bin/sh
# Runs one Conflux program as every rank of the tests/netns/hosts.sh layout (CFX_TEST_HOSTS:
# "ns:ip:ranks ..."), each inside its host's namespace, rank 0 serving the bootstrap at the first
# host's address; prints rank 0's output. Usage, under hosts.sh:
#   tests/netns/hosts.sh --layout 2,2 [--rate 2gbit] -- perf/probes/on_hosts.sh build/perf/vcoll_padding [args]
set -eu
[ -n "${CFX_TEST_HOSTS:-}" ] || { echo "on_hosts.sh: run it under tests/netns/hosts.sh" >&2; exit 2; }
n=0
for h in $CFX_TEST_HOSTS; do n=$((n + ${h##*:})); done
first=${CFX_TEST_HOSTS%% *}
ip0=$(echo "$first" | cut -d: -f2)
port=$((20000 + $$ % 30000))
secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
rank=0
pids=""
for h in $CFX_TEST_HOSTS; do
  ns=${h%%:*}
  ranks=${h##*:}
  local_rank=0
  while [ "$local_rank" -lt "$ranks" ]; do
    if [ "$rank" -eq 0 ]; then out=/dev/stdout; else out=/dev/null; fi
    ip netns exec "$ns" env CFX_RANK=$rank CFX_NRANKS=$n CFX_LOCAL_RANK=$local_rank CFX_ROOT_ADDR="$ip0:$port" \
      CFX_SECRET="$secret" "$@" > "$out" &
    pids="$pids $!"
    rank=$((rank + 1))
    local_rank=$((local_rank + 1))
  done
done
status=0
for p in $pids; do wait "$p" || status=1; done
exit $status

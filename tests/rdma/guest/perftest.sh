#!/bin/sh
# Run a perftest tool between the two guests, bounded by a timeout.
# usage (inside a guest): perftest.sh TOOL TIMEOUT_S [perftest args...]
# Guest a is the server, guest b the client (connects to $PEER, retrying
# until the server listens). GID index 1 = the RoCEv2 IPv4-mapped GID on rxe.
HERE=$(dirname "$0")
TOOL=$1; T=$2; shift 2
"$HERE/counters.sh"
ibv_devinfo -d rxe0 | grep -E 'active_mtu|state:'
start=$(cut -d' ' -f1 /proc/uptime)
if [ "$NAME" = a ]; then
  timeout -s KILL "$T" $TOOL -d rxe0 -x 1 -F "$@"; rc=$?
else
  rc=1; i=0
  while [ $i -lt 20 ]; do
    i=$((i+1))
    # until the server listens the client fails at once with "Couldn't connect"
    timeout -s KILL "$T" $TOOL -d rxe0 -x 1 -F "$@" "$PEER" > /tmp/pt.out 2>&1; rc=$?
    if grep -q "Couldn't connect\|Unable to open file descriptor" /tmp/pt.out && [ $rc != 137 ]; then sleep 1; continue; fi
    break
  done
  cat /tmp/pt.out
fi
end=$(cut -d' ' -f1 /proc/uptime)
echo "$TOOL rc=$rc ($NAME, $(echo "$end - $start" | bc) s; 137 = killed by timeout)"
"$HERE/counters.sh"
exit 0

# Boot "healthy": both guests at netdev MTU 9000 (rxe active MTU 4096), the
# switch passes every frame. Scenarios (tests/rdma/README.md):
#   roundtrip  every block size over RDMA at mtu 4096, traffic class 104
#   tcp        the same over MEMKV_TRANSPORT=tcp (plumbing, no verbs)
#   refusal    guest b at netdev MTU 1500 (active 1024): memkv start with
#              rdma.mtu 4096 refuses, with 1024 it starts; then back to 9000
#   doctor     memkv doctor on rxe0, then with --peer across the switch: the
#              path works and carries MemKV's marking (DSCP 26)
#   stall      the server dies (kill -9) under a put+get loop: errors within
#              the deadline, never a hang
# Guest a serves, guest b is the client. Sourced with lib.sh.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$NAME" = a ]; then
  counters a_before
  if start_server s4096 9900 4096; then signal a-ready; else signal a-failed; fi
  await b-stall 240 b-done && sleep 3
  say "kill -9 server s4096"
  kill -9 "$(cat s4096.pid)"
  signal a-killed
  await b-done 120
  counters a_after
  exit 0
fi

# --- guest b ---
# Whatever happens, release guest a when done.
trap 'signal b-done' EXIT
# refusal first: nothing talks to guest a yet, so its MTU can change freely.
ip link set eth0 mtu 1500 && await_active_mtu 1024 30
active_mtu > refusal_active_mtu.txt
server_config refuse4096.yaml 9920 4096
timeout -s KILL 20 "$MEMKV" start --config refuse4096.yaml --data-dir /tmp/refuse4096 \
  > refuse4096.out 2> refuse4096.err
echo $? > refuse4096.rc
say "refusal: memkv start with rdma.mtu 4096 at active MTU $(active_mtu): rc=$(cat refuse4096.rc)"
if start_server accept1024 9930 1024; then kill "$(cat accept1024.pid)"; fi
ip link set eth0 mtu 9000 && await_active_mtu 4096 30

await a-ready 120 a-failed || exit 1
# shellcheck disable=SC2034  # read by step (lib.sh)
SERVERS=$PEER:9900
step wait 90 MEMKV_TRANSPORT=tcp -- wait --seconds 60
counters b_before
step roundtrip 150 MEMKV_TRANSPORT="$RDMA" MEMKV_RDMA_MTU=4096 -- roundtrip
counters b_after_roundtrip
step tcp 120 MEMKV_TRANSPORT=tcp -- roundtrip
counters b_after_tcp
# The server config this host would run (rxe0, mtu 4096, a 64 MiB pool that
# the reserved hugepages cover).
server_config doctor.yaml 9940 4096
doctor_step doctor-host 120 -- --config doctor.yaml --json --interval-ms 200
doctor_step doctor-peer 150 MEMKV_RDMA_MTU=4096 -- --config doctor.yaml --json --interval-ms 200 \
  --peer "$PEER:9900" --peer-blocks 8
signal b-stall
step stall 60 MEMKV_TRANSPORT="$RDMA" MEMKV_RDMA_MTU=4096 MEMKV_TIMEOUT_MS=5000 -- \
  stall --size 4m --seconds 40 --after-error 8
counters b_after_stall
exit 0

# Boot "lossy-hop": both guests at netdev MTU 9000 (rxe active MTU 4096), the
# switch drops every frame longer than 1514 bytes (a 1500-MTU hop on the
# path): the runbook's cross-node failure. Scenarios (tests/rdma/README.md):
#   mtu1024    server and client at rdma mtu 1024: RDMA works across the hop
#   auto       both at 4096, MEMKV_TRANSPORT=auto: retries exhaust
#              (IBV_WC_RETRY_EXC_ERR), the client downgrades to TCP once, no
#              request lost
#   rdma       both at 4096, MEMKV_TRANSPORT=rdma: the error reaches the
#              caller naming IBV_WC_RETRY_EXC_ERR
#   doctor-hop memkv doctor --peer across the hop names the MTU problem
# Guest a serves (9900 at mtu 4096, 9910 at mtu 1024), guest b is the client.
set -u
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$NAME" = a ]; then
  counters a_before
  ok=1
  start_server s4096 9900 4096 || ok=0
  start_server s1024 9910 1024 || ok=0
  if [ $ok = 1 ]; then signal a-ready; else signal a-failed; fi
  await b-done 400
  counters a_after
  exit 0
fi

# --- guest b ---
# Whatever happens, release guest a when done.
trap 'signal b-done' EXIT
await a-ready 120 a-failed || exit 1
# shellcheck disable=SC2034  # read by step (lib.sh)
SERVERS=$PEER:9910
step wait 90 MEMKV_TRANSPORT=tcp -- wait --seconds 60
counters b_before
step mtu1024 120 MEMKV_TRANSPORT="$RDMA" MEMKV_RDMA_MTU=1024 -- load --count 16 --size 1m
counters b_after_mtu1024
# shellcheck disable=SC2034  # read by step (lib.sh)
SERVERS=$PEER:9900
step auto 150 MEMKV_TRANSPORT=auto MEMKV_RDMA_MTU=4096 MEMKV_TIMEOUT_MS=10000 -- load --count 16 --size 1m
counters b_after_auto
step rdma 90 MEMKV_TRANSPORT="$RDMA" MEMKV_RDMA_MTU=4096 MEMKV_TIMEOUT_MS=10000 -- load --count 4 --size 1m
counters b_after_rdma
server_config doctor.yaml 9940 4096
doctor_step doctor-hop 120 MEMKV_RDMA_MTU=4096 MEMKV_TIMEOUT_MS=10000 -- --config doctor.yaml --json \
  --interval-ms 200 --peer "$PEER:9900" --peer-blocks 4
exit 0

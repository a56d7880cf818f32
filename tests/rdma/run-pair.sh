#!/usr/bin/env bash
# Boot two Soft-RoCE guests (a = 10.77.0.1, b = 10.77.0.2) joined by switch.py,
# run a command in each, collect outputs, print the switch counters.
# usage: run-pair.sh [options] -- 'command in a' 'command in b'
#   --out DIR          results (default: mktemp); DIR/{a,b}/{log,rc,console.log,dmesg}, DIR/switch.json;
#                      DIR/pair is shared by both guests at /run/pair (signal files)
#   --mtu N            netdev MTU of both guests (default 9000); --mtu-a/--mtu-b for each
#   --max-frame N      switch drops frames longer than N bytes (1514 = a 1500-MTU hop)
#   --loss P --delay-ms D   passed to the switch
#   --timeout S        total wall-clock limit (default 300)
#   --silent-s S       a guest the switch hears nothing from for S s (not even
#                      its heartbeat) has a stalled NIC (default 15; 0: off)
# Commands run as root in the host's root filesystem (read-only) inside each
# guest, cwd /run/out (writable, shared back), with NAME, SELF, PEER exported.
# Exit status: 0 when both guests ran their command and it returned 0; 75 when
# a guest's emulated NIC stopped transmitting (NETDEV WATCHDOG on its console,
# or silent for --silent-s; DIR/nic-stall names it) and the boot was ended.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT=""; MTU_A=9000; MTU_B=9000; MAXF=0; LOSS=0; DELAY=0; TMO=300; SILENT=15
MAC_A=52:54:00:77:00:01; MAC_B=52:54:00:77:00:02
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2;;
    --mtu) MTU_A="$2"; MTU_B="$2"; shift 2;;
    --mtu-a) MTU_A="$2"; shift 2;;
    --mtu-b) MTU_B="$2"; shift 2;;
    --max-frame) MAXF="$2"; shift 2;;
    --loss) LOSS="$2"; shift 2;;
    --delay-ms) DELAY="$2"; shift 2;;
    --timeout) TMO="$2"; shift 2;;
    --silent-s) SILENT="$2"; shift 2;;
    --) shift; break;;
    *) break;;
  esac
done
[ $# -eq 2 ] || { sed -n '2,17p' "$0"; exit 2; }
[ -n "$OUT" ] || OUT="$(mktemp -d /tmp/memkv-rdma-pair.XXXXXX)"
rm -rf "$OUT"; mkdir -p "$OUT/a" "$OUT/b" "$OUT/pair"
OUT="$(cd "$OUT" && pwd)"
export MEMKV_RDMA_PAIR_DIR="$OUT/pair"
t0=$(date +%s.%N)
for g in a b; do
  if [ $g = a ]; then self=10.77.0.1; peer=10.77.0.2; cmd="$1"; else self=10.77.0.2; peer=10.77.0.1; cmd="$2"; fi
  { echo "export NAME=$g SELF=$self PEER=$peer PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; echo "$cmd"; } > "$OUT/$g/cmd.sh"
done
python3 "$HERE/switch.py" --port-file "$OUT/switch.port" --stats "$OUT/switch.json" \
  --max-frame "$MAXF" --loss "$LOSS" --delay-ms "$DELAY" --silent-s "$SILENT" --silent-file "$OUT/silent" & SW=$!
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$SW" 2>/dev/null || true; wait "$SW" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 100); do [ -f "$OUT/switch.port" ] && break; sleep 0.05; done
PORT="$(cat "$OUT/switch.port")"
"$HERE/run-guest.sh" "$OUT/a" a 10.77.0.1/24 "$MTU_A" "$MAC_A" "$PORT" "$TMO" & pids+=($!)
"$HERE/run-guest.sh" "$OUT/b" b 10.77.0.2/24 "$MTU_B" "$MAC_B" "$PORT" "$TMO" & pids+=($!)
# A guest whose emulated NIC stops transmitting (QEMU's virtio-net transmit
# queue stalled) can reach no one until the pair powers off. Two signs: its
# kernel logs NETDEV WATCHDOG (a full transmit ring), or the switch hears
# not even its heartbeat for $SILENT s. End the boot there, say so, exit 75.
stall=""
while [ -z "$stall" ]; do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [ "$alive" = 1 ] || break
  for g in a b; do
    line="$(grep -a -m1 'NETDEV WATCHDOG' "$OUT/$g/console.log" 2>/dev/null | tr -d '\r')" || true
    [ -n "$line" ] && stall="guest $g: $line" && break
  done
  if [ -z "$stall" ] && [ -f "$OUT/silent" ]; then
    read -r mac secs < "$OUT/silent"
    g="?"; [ "$mac" = "$MAC_A" ] && g=a; [ "$mac" = "$MAC_B" ] && g=b
    stall="guest $g: sent no frame for $secs s, not even its heartbeat (one a second)"
  fi
  [ -n "$stall" ] || sleep 1
done
if [ -n "$stall" ]; then
  echo "$stall" > "$OUT/nic-stall"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
fi
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
pids=()
t1=$(date +%s.%N)
kill "$SW"; wait "$SW" 2>/dev/null || true; trap - EXIT
total=$(echo "$t1 - $t0" | bc)
status=0
for g in a b; do
  grc="$(cat "$OUT/$g/rc" 2>/dev/null || echo none)"
  echo "== guest $g: rc=$grc ready_at=$(cat "$OUT/$g/ready_uptime" 2>/dev/null || echo ?)s (guest uptime)"
  sed 's/^/  | /' "$OUT/$g/log" 2>/dev/null || true
  [ "$grc" = 0 ] || status=1
done
[ "$rc" = 0 ] || [ -n "$stall" ] || { echo "== qemu exit status $rc (124 = total timeout)"; status=1; }
echo "== switch: $(cat "$OUT/switch.json" 2>/dev/null)"
echo "== total ${total}s, results in $OUT"
if [ -n "$stall" ]; then
  echo "== boot ended: the emulated NIC of $stall"
  echo "   (a virtio-net transmit queue that QEMU stopped serving, as tests/rdma/README.md describes, or a guest that stopped running; boot the pair again)"
  exit 75
fi
exit $status

#!/usr/bin/env bash
# MemKV against real verbs: the scenarios below, two boots of a guest
# pair (README.md here), after two short ones that check run-pair.sh's
# watch for a stalled emulated NIC. Guest a runs `memkv start`, guest b the probe.
#   healthy    switch passes 9000-byte frames: round trips of every block
#              size over RDMA (per-transport counters, rxe hw_counters, DSCP
#              at the switch), the same over TCP, start-up refusal at active
#              MTU 1024, a server killed mid-transfer
#   lossy-hop  switch drops frames > 1514 bytes: mtu 1024 works over RDMA,
#              mtu 4096 in auto downgrades to TCP losing nothing, in rdma the
#              error surfaces
# usage: memkv-scenarios.sh [--build DIR] [--results DIR] [--transport T] [BOOT...]
#   --build DIR     holds memkv and memkv-rdma-probe (default: build)
#   --transport T   MEMKV_TRANSPORT of the steps that want rdma (default rdma);
#                   tcp proves the harness on a build without RDMA (the RDMA
#                   checks then fail, the plumbing ones pass)
#   --results DIR   default /tmp/memkv-rdma-stage; RESULTS/BOOT is the pair's
#                   --out directory, RESULTS/BOOT.txt its run-pair output
#   BOOT...         healthy lossy-hop (default: both)
# Needs setup.sh to have run. Prints PASS/FAIL per check (checks.py); exit 1
# when any failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD=build; R=/tmp/memkv-rdma-stage; BOOTS=(); TRANSPORT=rdma
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2;;
    --results) R="$2"; shift 2;;
    --transport) TRANSPORT="$2"; shift 2;;
    -h|--help) sed -n '2,21p' "$0"; exit 0;;
    healthy|lossy-hop) BOOTS+=("$1"); shift;;
    *) echo "memkv-scenarios: unknown argument '$1'" >&2; sed -n '2,21p' "$0" >&2; exit 2;;
  esac
done
[ ${#BOOTS[@]} -gt 0 ] || BOOTS=(healthy lossy-hop)
# shellcheck source=host-lib.sh
. "$HERE/host-lib.sh"
stage_for_guests memkv-scenarios "$BUILD" memkv memkv-rdma-probe || exit 2
mkdir -p "$R"; R="$(cd "$R" && pwd)"

# One key per run; the guests see it in their environment only.
KEY="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
GUEST="MEMKV=$BIN/memkv PROBE=$BIN/memkv-rdma-probe AUTH_KEY=$KEY RDMA=$TRANSPORT"
# Two servers with 64 MiB pools each in guest a, registered with rxe.
export MEMKV_RDMA_MEM="${MEMKV_RDMA_MEM:-1024}"

boot() { # name, run-pair options...
  local n=$1; shift; local t rc try
  for try in 1 2; do
    t=$(date +%s)
    rm -rf "${R:?}/$n"
    echo "-- boot $n: run-pair.sh $*"
    "$HERE/run-pair.sh" --out "$R/$n" "$@" -- "$GUEST sh $SCRIPTS/$n.sh" "$GUEST sh $SCRIPTS/$n.sh" \
      > "$R/$n.txt" 2>&1
    rc=$?
    echo "   ($n: rc=$rc, $(( $(date +%s) - t )) s; guest logs in $R/$n.txt, files in $R/$n/{a,b})"
    # 75: a guest's emulated NIC stopped transmitting (run-pair.sh); the
    # boot proves nothing about MemKV, so it runs once more. A second stall
    # stays, and checks.py fails it by name.
    [ "$rc" = 75 ] && [ "$try" = 1 ] || break
    rm -rf "${R:?}/$n.stalled"; mv "$R/$n" "$R/$n.stalled"; mv "$R/$n.txt" "$R/$n.stalled.txt"
    echo "   ($n: the emulated NIC of $(cat "$R/$n.stalled/nic-stall"); booting the pair again, first boot kept in $R/$n.stalled)"
  done
}

# The stall watch itself (run-pair.sh), both signs: guest a logs the line a
# full, stalled transmit ring logs, or takes its link down so that not even
# its heartbeat leaves; b sleeps. The boot must end (75, guest a named in
# nic-stall) before b is done.
nic_watch() { # name, what the nic-stall line must hold, guest a's command, run-pair options...
  local n=$1 want=$2 cmd=$3 t rc stall; shift 3; t=$(date +%s)
  "$HERE/run-pair.sh" --out "$R/$n" --timeout 120 "$@" -- "$cmd; sleep 100" 'sleep 100' > "$R/$n.txt" 2>&1
  rc=$?
  echo "   ($n: rc=$rc, $(( $(date +%s) - t )) s; log in $R/$n.txt)"
  stall="$(cat "$R/$n/nic-stall" 2>/dev/null)"
  if [ "$rc" = 75 ] && [[ "$stall" == "guest a: "*"$want"* ]] && [ ! -e "$R/$n/b/rc" ]; then
    echo "PASS $n: run-pair.sh ended the boot (exit 75) before guest b was done: $stall"
  else
    echo "FAIL $n: run-pair.sh exit $rc (want 75), nic-stall '${stall:-missing}' (want guest a and '$want'), guest b rc file $([ -e "$R/$n/b/rc" ] && echo present || echo absent) (want absent)"
    return 1
  fi
}

watch_rc=0
nic_watch nic-watch-log "NETDEV WATCHDOG" \
  'echo "<2>virtio_net virtio3 eth0: NETDEV WATCHDOG: CPU: 0: transmit queue 0 timed out (written by memkv-scenarios.sh)" > /dev/kmsg' \
  || watch_rc=1
nic_watch nic-watch-silent "sent no frame" 'ip link set eth0 down' --silent-s 5 || watch_rc=1
for b in "${BOOTS[@]}"; do
  case "$b" in
    healthy) boot healthy --timeout 240;;
    lossy-hop) boot lossy-hop --max-frame 1514 --timeout 240;;
  esac
done
python3 "$HERE/checks.py" "$R" "${BOOTS[@]}" && exit "$watch_rc"

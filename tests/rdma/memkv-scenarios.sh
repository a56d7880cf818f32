#!/usr/bin/env bash
# MemKV against real verbs: the scenarios below, two boots of a guest
# pair (README.md here). Guest a runs `memkv start`, guest b the probe.
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
  local n=$1; shift; local t; t=$(date +%s)
  rm -rf "${R:?}/$n"
  echo "-- boot $n: run-pair.sh $*"
  "$HERE/run-pair.sh" --out "$R/$n" "$@" -- "$GUEST sh $SCRIPTS/$n.sh" "$GUEST sh $SCRIPTS/$n.sh" \
    > "$R/$n.txt" 2>&1
  echo "   ($n: rc=$?, $(( $(date +%s) - t )) s; guest logs in $R/$n.txt, files in $R/$n/{a,b})"
}

for b in "${BOOTS[@]}"; do
  case "$b" in
    healthy) boot healthy --timeout 240;;
    lossy-hop) boot lossy-hop --max-frame 1514 --timeout 240;;
  esac
done
python3 "$HERE/checks.py" "$R" "${BOOTS[@]}"

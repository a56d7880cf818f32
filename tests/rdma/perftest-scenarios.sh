#!/usr/bin/env bash
# The proof scenarios of the test-bed (see README.md). Each boots a fresh pair.
# usage: scenarios.sh [RESULTS_DIR]   (default /tmp/memkv-rdma-scenarios)
# Prints one PASS/FAIL line per scenario; exit 1 when any failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
G="$HERE/guest"
R="${1:-/tmp/memkv-rdma-scenarios}"; rm -rf "$R"; mkdir -p "$R"
"$HERE/setup.sh" > "$R/setup.log" 2>&1 || { cat "$R/setup.log"; exit 1; }
fails=0; T0=$(date +%s)
sw() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1/switch.json" "$2"; }
check() { # name, condition-description, bool
  if [ "$3" = 1 ]; then echo "PASS $1: $2"; else echo "FAIL $1: $2"; fails=$((fails+1)); fi
}
run() { # name, run-pair args...
  local n=$1; shift; local t=$(date +%s.%N)
  timeout 330 "$HERE/run-pair.sh" --out "$R/$n" "$@" > "$R/$n.txt" 2>&1
  echo "  ($n: $(echo "$(date +%s.%N) - $t" | bc | cut -c1-5) s, log $R/$n.txt)"
}
has() { grep -q -- "$2" "$R/$1.txt" && echo 1 || echo 0; }

# 1. devices: netdev MTU 9000 -> active_mtu 4096; MTU 1500 -> 1024
DEV='ibv_devices; ibv_devinfo -d rxe0 | grep -E "state|mtu|link_layer"; rdma link show; for i in 0 1; do echo "gid $i $(cat /sys/class/infiniband/rxe0/ports/1/gids/$i) $(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i)"; done'
run devices --mtu-a 9000 --mtu-b 1500 --timeout 120 -- "$DEV" "$DEV"
check devices "rxe0 active_mtu 4096 at MTU 9000 (a), 1024 at MTU 1500 (b)" \
  $([ "$(grep -A30 '== guest a' "$R/devices.txt" | grep -c 'active_mtu:.*4096')" = 1 ] && [ "$(grep -A30 '== guest b' "$R/devices.txt" | grep -c 'active_mtu:.*1024')" = 1 ] && echo 1 || echo 0)

# 2. RDMA WRITE and READ, MTU 9000 / path MTU 4096, DSCP 26 (tclass 104)
PT="$G/perftest.sh"
run write4096 --timeout 150 -- "$PT ib_write_bw 60 -m 4096 -s 1048576 -n 100 --tclass=104" "$PT ib_write_bw 60 -m 4096 -s 1048576 -n 100 --tclass=104"
check write4096 "ib_write_bw 1 MiB x100 at 4096, RoCE DSCP 26 counted: $(sw "$R/write4096" 'd["roce_v2_by_dscp"]')" \
  $([ "$(grep -c 'ib_write_bw rc=0' "$R/write4096.txt")" = 2 ] && [ "$(sw "$R/write4096" 'd["roce_v2_by_dscp"].get("26",0)>25000')" = True ] && echo 1 || echo 0)
run read4096 --timeout 150 -- "$PT ib_read_bw 60 -m 4096 -s 1048576 -n 100 --tclass=104" "$PT ib_read_bw 60 -m 4096 -s 1048576 -n 100 --tclass=104"
check read4096 "ib_read_bw 1 MiB x100 at 4096" $([ "$(grep -c 'ib_read_bw rc=0' "$R/read4096.txt")" = 2 ] && echo 1 || echo 0)

# 3. the runbook's cross-node failure: both MTU 9000, the switch drops frames > 1514
run drop4096 --max-frame 1514 --timeout 150 -- "$PT ib_write_bw 40 -m 4096 -s 1048576 -n 20 --tclass=104" "$PT ib_write_bw 40 -m 4096 -s 1048576 -n 20 --tclass=104"
check drop4096 "path MTU 4096 over a 1514-byte hop does not complete (killed at 40 s); switch dropped $(sw "$R/drop4096" 'd["roce_v2_dropped_size"]') RoCE frames" \
  $([ "$(grep -c 'ib_write_bw rc=0' "$R/drop4096.txt")" = 0 ] && [ "$(sw "$R/drop4096" 'd["roce_v2_dropped_size"]>0')" = True ] && echo 1 || echo 0)
run drop1024 --max-frame 1514 --timeout 150 -- "$PT ib_write_bw 60 -m 1024 -s 1048576 -n 100 --tclass=104" "$PT ib_write_bw 60 -m 1024 -s 1048576 -n 100 --tclass=104"
check drop1024 "path MTU 1024 over the same hop works, max frame $(sw "$R/drop1024" 'd["max_frame_seen"]')" \
  $([ "$(grep -c 'ib_write_bw rc=0' "$R/drop1024.txt")" = 2 ] && [ "$(sw "$R/drop1024" 'd["dropped_size"]')" = 0 ] && echo 1 || echo 0)

echo "total $(( $(date +%s) - T0 )) s, $fails failed, results in $R"
[ $fails = 0 ]

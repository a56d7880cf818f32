#!/usr/bin/env bash
# The server's system calls, futex calls, context switches and CPU per put:
# a memkv server (any build) on loopback, driven by memkv-rdma-probe's bench
# over TCP, with `perf stat` on the server while the puts run
# (docs/benchmarks.md, "4 KiB puts in file mode: one commit per turn").
# Counts per put move far less with the machine's load than throughput does,
# so two builds compare on a shared VM; run them alternating.
# usage: bench/put_syscalls.sh [--memkv BIN] [--probe BIN] [--mode memory|file]
#                              [--sync interval|always] [--workers N]
#                              [--size S] [--depth D] [--batch B] [--seconds T]
#   --memkv BIN   the server (default build/memkv)
#   --probe BIN   the client (default build/memkv-rdma-probe)
#   --mode M      storage.mode (default file: one 2 GiB drive file)
#   --sync P      storage.sync in file mode (default interval)
#   --workers N   the server's --workers (default: its own default)
#   --size S      value size (default 4k); --depth D threads and connections
#                 (default 16); --batch B keys per BatchPut (default 1)
#   --seconds T   the measured run (default 3; a 2 s warm-up runs first)
# Prints one line: puts/s, and per put the server's system calls, futex
# calls, context switches and CPU microseconds. Needs perf
# (apt-get install linux-perf) and permission to read tracepoints (root).
set -euo pipefail
MEMKV=build/memkv; PROBE=build/memkv-rdma-probe; MODE=file; SYNC=interval; WORKERS=""
SIZE=4k; DEPTH=16; BATCH=1; SECS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --memkv) MEMKV="$2"; shift 2;;
    --probe) PROBE="$2"; shift 2;;
    --mode) MODE="$2"; shift 2;;
    --sync) SYNC="$2"; shift 2;;
    --workers) WORKERS="$2"; shift 2;;
    --size) SIZE="$2"; shift 2;;
    --depth) DEPTH="$2"; shift 2;;
    --batch) BATCH="$2"; shift 2;;
    --seconds) SECS="$2"; shift 2;;
    -h|--help) sed -n '2,21p' "$0"; exit 0;;
    *) echo "put_syscalls: unknown argument '$1'" >&2; sed -n '2,21p' "$0" >&2; exit 2;;
  esac
done
case "$MODE" in memory|file) ;; *) echo "put_syscalls: --mode is memory or file, not '$MODE'" >&2; exit 2;; esac
case "$SYNC" in interval|always) ;; *) echo "put_syscalls: --sync is interval or always, not '$SYNC'" >&2; exit 2;; esac
command -v perf > /dev/null || { echo "put_syscalls: perf not found (apt-get install linux-perf)" >&2; exit 2; }
[ -x "$MEMKV" ] && [ -x "$PROBE" ] || { echo "put_syscalls: $MEMKV or $PROBE is missing (build them first)" >&2; exit 2; }
OUT="$(mktemp -d)"
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
SERVER=""
KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
{
  printf 'network:\n  address: 127.0.0.1:0\n  auth_key: %s\nmemory:\n  max_size: 1GiB\nstorage:\n  mode: %s\n' \
    "$KEY" "$MODE"
  [ "$MODE" = file ] && printf '  sync: %s\n  drives:\n    - {media: %s/drive0.memkv, size: 2GiB}\n' "$SYNC" "$OUT"
} > "$OUT/config.yaml"
chmod 600 "$OUT/config.yaml"
ARGS=(start --config "$OUT/config.yaml" --data-dir "$OUT/data")
[ -n "$WORKERS" ] && ARGS+=(--workers "$WORKERS")
"$MEMKV" "${ARGS[@]}" > "$OUT/server.log" 2>&1 &
SERVER=$!
deadline=$((SECONDS + 120))
until grep -q '^ready' "$OUT/server.log"; do
  kill -0 $SERVER 2>/dev/null || { echo "put_syscalls: the server exited:" >&2; tail -5 "$OUT/server.log" >&2; exit 1; }
  [ $SECONDS -lt $deadline ] || { echo "put_syscalls: the server was not ready in 120 s" >&2; exit 1; }
  sleep 0.2
done
ADDR=$(sed -n 's/^ready //p' "$OUT/server.log" | head -1)
export MEMKV_SERVERS=$ADDR MEMKV_AUTH_KEY=$KEY MEMKV_NUM_CONNECTIONS=$DEPTH MEMKV_TIMEOUT_MS=60000
FLAGS=(--op put --size "$SIZE" --depth "$DEPTH" --batch "$BATCH")
"$PROBE" bench "${FLAGS[@]}" --seconds 2 > "$OUT/warm.out"
perf stat -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_futex,context-switches,task-clock -p $SERVER \
  -o "$OUT/perf.csv" &
PERF=$!
"$PROBE" bench "${FLAGS[@]}" --seconds "$SECS" > "$OUT/run.out"
kill -INT $PERF; wait $PERF 2>/dev/null || true
python3 - "$OUT" "$MODE" "$SYNC" "$BATCH" <<'PY'
import json, sys
out, mode, sync, batch = sys.argv[1:]
run = json.loads([l for l in open(f"{out}/run.out") if l.startswith("{")][-1])
if run["failed"] or run["ok"] == 0:
    sys.exit(f"put_syscalls: {run['failed']} puts failed: {run['first_error']}")
counts = {}
for line in open(f"{out}/perf.csv"):
    f = line.strip().split(",")
    if len(f) > 2 and f[0] and f[0][0].isdigit():
        counts[f[2]] = float(f[0])
# perf counted from its start until the probe ended; the probe's own rate
# times its run is the puts of that window (the ramp at either end is small).
puts = run["ok"]
print(f"{mode}{'/' + sync if mode == 'file' else ''} batch {batch}: {run['ok'] / run['seconds']:.0f} puts/s; "
      f"per put: {counts.get('raw_syscalls:sys_enter', 0) / puts:.2f} system calls, "
      f"{counts.get('syscalls:sys_enter_futex', 0) / puts:.2f} futex, "
      f"{counts.get('context-switches', 0) / puts:.2f} context switches, "
      f"{counts.get('task-clock', 0) * 1e3 / puts:.1f} us server CPU")
PY

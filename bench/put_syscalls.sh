#!/usr/bin/env bash
# The server's system calls, futex calls, context switches and CPU per put
# (or per get, with --op get), and the client's CPU per op: a memkv server (any build) on loopback,
# driven by memkv-rdma-probe's bench over TCP, with `perf stat` on the server
# and on the client while the puts run (docs/benchmarks.md, "4 KiB puts in
# file mode: one commit per turn"). With --peer redis, the same for
# redis-server with its append-only file (appendfsync everysec for
# --sync interval, always for --sync always; --mode memory: no persistence),
# driven by redis-benchmark (SET, --batch as its pipelining).
# Counts per put move far less with the machine's load than throughput does,
# so two builds, or memkv and Redis, compare on a shared VM; run them
# alternating.
# usage: bench/put_syscalls.sh [--peer memkv|redis] [--op put|get] [--memkv BIN] [--probe BIN]
#                              [--mode memory|file] [--sync interval|always]
#                              [--flush-on-loop-us N] [--workers N] [--size S] [--depth D] [--batch B]
#                              [--seconds T] [--requests N]
#   --peer P      the server measured: memkv (default) or redis
#   --op O        put (default) or get: gets read the keys the warm-up put
#                 wrote (memkv-rdma-probe's depth x batch keys, at least 8;
#                 as many keys for Redis)
#   --memkv BIN   the server (default build/memkv)
#   --probe BIN   the client (default build/memkv-rdma-probe)
#   --mode M      storage.mode (default file: one 2 GiB drive file)
#   --sync P      storage.sync in file mode (default interval)
#   --workers N   the server's --workers (default: its own default)
#   --busy-poll-us N  the server's network.busy_poll_us (default: its default)
#   --flush-on-loop-us N  the server's storage.flush_on_loop_us (with --sync
#                 always; default: its default, 0)
#   --size S      value size (default 4k); --depth D threads and connections
#                 (default 16); --batch B keys per BatchPut (default 1)
#   --seconds T   memkv's measured run (default 3; a 2 s warm-up runs first)
#   --requests N  Redis's measured run, in requests (default 60000; 10000 SETs
#                 warm up)
#   --wakeups     also records the scheduler's wakeups for 0.5 s of the run
#                 (perf record -a) and prints, per server and client thread,
#                 how long a woken thread waited to run (median, mean)
# Prints one line: ops/s, and per op the server's system calls, futex
# calls, context switches and CPU microseconds, and the client's CPU
# microseconds; for memkv also the workers' idle spells per op, the share the
# poll caught a request in (memkv_worker_idle_spells_total) and the time
# polled per op (memkv_worker_poll_seconds_total). Needs perf (apt-get
# install linux-perf) and permission to read tracepoints (root); --peer redis
# needs redis-server and redis-benchmark (apt-get install redis-server
# redis-tools).
set -euo pipefail
PEER=memkv; MEMKV=build/memkv; PROBE=build/memkv-rdma-probe; MODE=file; SYNC=interval; WORKERS=""
SIZE=4k; DEPTH=16; BATCH=1; SECS=3; REQUESTS=60000; WAKEUPS=0; BUSY_POLL=""; FLUSH_ON_LOOP=""; OP=put
while [ $# -gt 0 ]; do
  case "$1" in
    --peer) PEER="$2"; shift 2;;
    --op) OP="$2"; shift 2;;
    --memkv) MEMKV="$2"; shift 2;;
    --probe) PROBE="$2"; shift 2;;
    --mode) MODE="$2"; shift 2;;
    --sync) SYNC="$2"; shift 2;;
    --workers) WORKERS="$2"; shift 2;;
    --busy-poll-us) BUSY_POLL="$2"; shift 2;;
    --flush-on-loop-us) FLUSH_ON_LOOP="$2"; shift 2;;
    --size) SIZE="$2"; shift 2;;
    --depth) DEPTH="$2"; shift 2;;
    --batch) BATCH="$2"; shift 2;;
    --seconds) SECS="$2"; shift 2;;
    --requests) REQUESTS="$2"; shift 2;;
    --wakeups) WAKEUPS=1; shift;;
    -h|--help) sed -n '2,40p' "$0"; exit 0;;
    *) echo "put_syscalls: unknown argument '$1'" >&2; sed -n '2,40p' "$0" >&2; exit 2;;
  esac
done
case "$PEER" in memkv|redis) ;; *) echo "put_syscalls: --peer is memkv or redis, not '$PEER'" >&2; exit 2;; esac
case "$OP" in put|get) ;; *) echo "put_syscalls: --op is put or get, not '$OP'" >&2; exit 2;; esac
case "$MODE" in memory|file) ;; *) echo "put_syscalls: --mode is memory or file, not '$MODE'" >&2; exit 2;; esac
case "$SYNC" in interval|always) ;; *) echo "put_syscalls: --sync is interval or always, not '$SYNC'" >&2; exit 2;; esac
command -v perf > /dev/null || { echo "put_syscalls: perf not found (apt-get install linux-perf)" >&2; exit 2; }
if [ "$PEER" = memkv ]; then
  [ -x "$MEMKV" ] && [ -x "$PROBE" ] || { echo "put_syscalls: $MEMKV or $PROBE is missing (build them first)" >&2; exit 2; }
else
  command -v redis-server > /dev/null && command -v redis-benchmark > /dev/null ||
    { echo "put_syscalls: redis-server or redis-benchmark not found (apt-get install redis-server redis-tools)" >&2; exit 2; }
fi
OUT="$(mktemp -d)"
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$OUT"' EXIT
SERVER=""
EVENTS=raw_syscalls:sys_enter,syscalls:sys_enter_futex,context-switches,task-clock

# Waits until `ready` (a command) succeeds while the server lives.
wait_ready() {
  local deadline=$((SECONDS + 120))
  until "$@"; do
    kill -0 $SERVER 2>/dev/null || { echo "put_syscalls: the server exited:" >&2; tail -5 "$OUT/server.log" >&2; exit 1; }
    [ $SECONDS -lt $deadline ] || { echo "put_syscalls: the server was not ready in 120 s" >&2; exit 1; }
    sleep 0.2
  done
}

# Runs the client command under perf stat (client.csv) with perf stat on the
# server (perf.csv) for as long as it runs; its stdout goes to run.out.
measure() {
  perf stat -x, -e "$EVENTS" -p $SERVER -o "$OUT/perf.csv" &
  local perf=$!
  local sched=""
  if [ "$WAKEUPS" = 1 ]; then
    (sleep 1; perf record -q -e sched:sched_switch,sched:sched_wakeup -a -o "$OUT/sched.data" -- sleep 0.5 \
       > /dev/null 2>&1; ls /proc/$SERVER/task > "$OUT/server.tids") &
    sched=$!
  fi
  perf stat -x, -e task-clock -o "$OUT/client.csv" "$@" > "$OUT/run.out"
  kill -INT $perf; wait $perf 2>/dev/null || true
  if [ -n "$sched" ]; then
    wait $sched
    perf script -i "$OUT/sched.data" -F tid,time,event,trace > "$OUT/sched.txt" 2>/dev/null
  fi
}

if [ "$PEER" = memkv ]; then
  KEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  {
    printf 'network:\n  address: 127.0.0.1:0\n  auth_key: %s\n' "$KEY"
    [ -n "$BUSY_POLL" ] && printf '  busy_poll_us: %s\n' "$BUSY_POLL"
    printf 'memory:\n  max_size: 1GiB\nstorage:\n  mode: %s\n' "$MODE"
    [ "$MODE" = file ] && printf '  sync: %s\n  drives:\n    - {media: %s/drive0.memkv, size: 2GiB}\n' "$SYNC" "$OUT"
    [ -n "$FLUSH_ON_LOOP" ] && printf '  flush_on_loop_us: %s\n' "$FLUSH_ON_LOOP"
  } > "$OUT/config.yaml"
  chmod 600 "$OUT/config.yaml"
  ARGS=(start --config "$OUT/config.yaml" --data-dir "$OUT/data")
  [ -n "$WORKERS" ] && ARGS+=(--workers "$WORKERS")
  "$MEMKV" "${ARGS[@]}" > "$OUT/server.log" 2>&1 &
  SERVER=$!
  wait_ready grep -q '^ready' "$OUT/server.log"
  ADDR=$(sed -n 's/^ready //p' "$OUT/server.log" | head -1)
  # DEPTH + 1: stores may hold all but one connection (docs/client-library.md,
  # "Loads before stores"), so each of the DEPTH threads has one of its own.
  export MEMKV_SERVERS=$ADDR MEMKV_AUTH_KEY=$KEY MEMKV_NUM_CONNECTIONS=$((DEPTH + 1)) MEMKV_TIMEOUT_MS=60000
  FLAGS=(--size "$SIZE" --depth "$DEPTH" --batch "$BATCH")
  ADMIN=$(sed -n 's/.*admin endpoint on \(http:[^ ;]*\).*/\1/p' "$OUT/server.log" | head -1)
  "$PROBE" bench --op put "${FLAGS[@]}" --seconds 2 > "$OUT/warm.out"
  curl -sf "$ADMIN/v1/metrics" > "$OUT/metrics.before" || true
  measure "$PROBE" bench --op "$OP" "${FLAGS[@]}" --seconds "$SECS"
  curl -sf "$ADMIN/v1/metrics" > "$OUT/metrics.after" || true
else
  BYTES=$(numfmt --from=iec "$(echo "$SIZE" | tr 'a-z' 'A-Z' | sed 's/IB$//; s/B$//')")
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  PERSIST=(--save '')
  if [ "$MODE" = file ]; then
    PERSIST+=(--appendonly yes --appendfsync "$([ "$SYNC" = interval ] && echo everysec || echo always)")
  fi
  redis-server --bind 127.0.0.1 --port "$PORT" --dir "$OUT" "${PERSIST[@]}" > "$OUT/server.log" 2>&1 &
  SERVER=$!
  redis_up() { redis-cli -p "$PORT" ping > /dev/null 2>&1; }
  wait_ready redis_up
  # Gets read as many keys as the probe's (depth x batch, at least 8), all
  # written by the warm-up.
  KEYS=$([ "$OP" = put ] && echo 1000000 || echo $((DEPTH * BATCH > 8 ? DEPTH * BATCH : 8)))
  FLAGS=(-p "$PORT" -c "$DEPTH" -d "$BYTES" -P "$BATCH" -r "$KEYS" -q)
  redis-benchmark "${FLAGS[@]}" -t set -n 10000 > /dev/null
  # redis-benchmark names its tests by command: SET for a put, GET for a get.
  measure redis-benchmark "${FLAGS[@]}" -t "$([ "$OP" = put ] && echo set || echo get)" -n "$REQUESTS"
  # "SET: 10799.14 requests per second, p50=..." after the \r-separated progress.
  RATE=$(tr '\r' '\n' < "$OUT/run.out" | sed -n 's/^[A-Z]*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
  [ -n "$RATE" ] || { echo "put_syscalls: no rate in redis-benchmark's output:" >&2; cat "$OUT/run.out" >&2; exit 1; }
  printf '{"ok": %d, "failed": 0, "seconds": %s}\n' "$REQUESTS" "$(python3 -c "print($REQUESTS / $RATE)")" \
    > "$OUT/run.out"
fi
python3 - "$OUT" "$PEER" "$MODE" "$SYNC" "$BATCH" "$OP" <<'PY'
import json, os, re, sys
out, peer, mode, sync, batch, op = sys.argv[1:]
run = json.loads([l for l in open(f"{out}/run.out") if l.startswith("{")][-1])
if run["failed"] or run["ok"] == 0:
    sys.exit(f"put_syscalls: {run['failed']} {op}s failed: {run['first_error']}")
def counts(path):
    c = {}
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 2 and f[0] and f[0][0].isdigit():
            c[f[2]] = float(f[0])
    return c
server, client = counts(f"{out}/perf.csv"), counts(f"{out}/client.csv")
# perf counted from its start until the client ended; the client's own count
# of puts is the puts of that window (the ramp at either end is small). The
# client's CPU includes its start (connecting), small beside the run.
puts = run["ok"]
print(f"{peer} {mode}{'/' + sync if mode == 'file' else ''} batch {batch}: {run['ok'] / run['seconds']:.0f} {op}s/s; "
      f"per {op}: {server.get('raw_syscalls:sys_enter', 0) / puts:.2f} system calls, "
      f"{server.get('syscalls:sys_enter_futex', 0) / puts:.2f} futex, "
      f"{server.get('context-switches', 0) / puts:.2f} context switches, "
      f"{server.get('task-clock', 0) * 1e3 / puts:.1f} us server CPU, "
      f"{client.get('task-clock', 0) * 1e3 / puts:.1f} us client CPU")
def poll_counts(path):
    c = {}
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r'memkv_worker_(idle_spells_total\{outcome="(\w+)"\}|poll_seconds_total) (\S+)', line)
            if m:
                c[m.group(2) or "poll_seconds"] = float(m.group(3))
            m = re.match(r'memkv_drive_(journal_commits|loop_commits)_total (\S+)', line)
            if m:
                c[m.group(1)] = float(m.group(2))
    return c
before, after = poll_counts(f"{out}/metrics.before"), poll_counts(f"{out}/metrics.after")
if "polled" in before and "polled" in after:
    # The workers' idle spells over the measured run (and the moments around
    # it): how many the poll caught a request in, and the time polled.
    polled = after["polled"] - before["polled"]
    slept = after["slept"] - before["slept"]
    secs = after["poll_seconds"] - before["poll_seconds"]
    print(f"  idle spells per {op}: {(polled + slept) / puts:.2f} ({polled / max(polled + slept, 1) * 100:.0f}% caught "
          f"by the poll, {slept / puts:.2f} slept); polling {secs * 1e6 / puts:.1f} us per {op}")
if "journal_commits" in before and "journal_commits" in after:
    # Group commit: the drives' journal writes (each one flush with `sync:
    # always`), and of the turns, those the workers flushed themselves.
    commits = after["journal_commits"] - before["journal_commits"]
    loop = after.get("loop_commits", 0) - before.get("loop_commits", 0)
    print(f"  journal commits per {op}: {commits / puts:.3f} ({puts / max(commits, 1):.1f} {op}s each); "
          f"turns flushed on the loop: {loop / puts:.3f} per {op}")
if os.path.exists(f"{out}/sched.txt"):
    # From a thread's sched_wakeup to the sched_switch that runs it.
    server_tids = set(open(f"{out}/server.tids").read().split())
    woken, waits, names = {}, {}, {}
    for line in open(f"{out}/sched.txt"):
        m = re.match(r"\s*\d+\s+([\d.]+):\s+sched:(\w+):\s+(.*)", line)
        if not m:
            continue
        t, event, trace = float(m.group(1)), m.group(2), m.group(3)
        if event == "sched_wakeup":
            w = re.search(r"comm=(\S+) pid=(\d+)", trace)
            if w:
                woken[w.group(2)] = t
                names[w.group(2)] = w.group(1)
        else:
            n = re.search(r"next_pid=(\d+)", trace)
            if n and n.group(1) in woken:
                waits.setdefault(n.group(1), []).append((t - woken.pop(n.group(1))) * 1e6)
    for tid, v in sorted(waits.items(), key=lambda kv: -len(kv[1])):
        side = "server" if tid in server_tids else "client" if names[tid].startswith(("memkv-rdma", "redis-bench")) else ""
        if side and len(v) >= 100:
            v.sort()
            print(f"  {side} thread {names[tid]}: {len(v)} wakeups in 0.5 s, woken to running "
                  f"median {v[len(v) // 2]:.1f} us, mean {sum(v) / len(v):.1f} us")
PY

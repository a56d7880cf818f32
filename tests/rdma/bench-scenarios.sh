#!/usr/bin/env bash
# MemKV's RDMA path against perftest on the Soft-RoCE guest pair, in one boot
# (README.md here, "The bench scenario"). A benchmark, not a check: it is in
# neither stage.sh nor CI.
# Guest a runs `memkv start` with RDMA on rxe0 (mtu 4096, as in the healthy
# boot) and the perftest servers; guest b runs, per size and round, in turn:
#   put    memkv-rdma-probe bench --op put (MEMKV_TRANSPORT=rdma): RDMA WRITE
#   write  ib_write_bw -D SECS+2 -f 1 -m 4096 -s SIZE
#   get    memkv-rdma-probe bench --op get: RDMA READ
#   read   ib_read_bw, the same flags
# one cell at a time, each bounded, noting both guests' CPU counters around
# it while the host samples its own. Prints the table size / op / memkv MiB/s
# / perftest MiB/s / ratio (the median over the rounds), then the CPU each
# cell used.
# usage: bench-scenarios.sh [--build DIR] [--results DIR] [--sizes LIST]
#                           [--flights LIST] [--seconds S] [--rounds N]
#                           [--transport T]
#   --build DIR     holds memkv and memkv-rdma-probe (default: build)
#   --results DIR   default /tmp/memkv-rdma-bench; DIR/bench is the pair's
#                   --out directory, DIR/bench.txt its output, DIR/table.txt
#                   what this prints, DIR/table.json its summary (per size,
#                   flight and op: the medians, the ratio and each round;
#                   null where no round gave a figure), DIR/host_cpu.txt the
#                   host's samples
#   --sizes LIST    value and message sizes in bytes (default 65536,2097152)
#   --flights LIST  what is in flight (default d1,d16,b64); a size and flight
#                   whose keys would take more than 32 MiB of the guest's
#                   64 MiB pool (2 MiB in batches of 64) is left out
#   --seconds S     traffic per cell (default 3; perftest runs S+2 with a
#                   1 s margin at each end)
#   --rounds N      alternations of the whole sweep (default 2)
#   --transport T   MEMKV_TRANSPORT of the memkv cells (default rdma)
#   --rdma-timeout N  the QPs' ACK timeout, 4.096 us x 2^N, on both sides:
#                   MEMKV_RDMA_TIMEOUT of the memkv cells, perftest's -u
#                   (default: each one's own, 14)
# Needs setup.sh to have run. Exit 1 when a cell failed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD=build; R=/tmp/memkv-rdma-bench; SIZES=65536,2097152; FLIGHTS=d1,d16,b64; SECS=3; ROUNDS=2; TRANSPORT=rdma
RDMA_TIMEOUT=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2;;
    --results) R="$2"; shift 2;;
    --sizes) SIZES="$2"; shift 2;;
    --flights) FLIGHTS="$2"; shift 2;;
    --seconds) SECS="$2"; shift 2;;
    --rounds) ROUNDS="$2"; shift 2;;
    --transport) TRANSPORT="$2"; shift 2;;
    --rdma-timeout) RDMA_TIMEOUT="$2"; shift 2;;
    -h|--help) sed -n '2,36p' "$0"; exit 0;;
    *) echo "bench-scenarios: unknown argument '$1'" >&2; sed -n '2,36p' "$0" >&2; exit 2;;
  esac
done
if [ -n "$RDMA_TIMEOUT" ] && ! [[ "$RDMA_TIMEOUT" =~ ^[1-9][0-9]?$ && "$RDMA_TIMEOUT" -le 31 ]]; then
  echo "bench-scenarios: --rdma-timeout '$RDMA_TIMEOUT' is not an exponent in 1..31 (4.096 us x 2^N)" >&2; exit 2
fi
# shellcheck source=host-lib.sh
. "$HERE/host-lib.sh"
stage_for_guests bench-scenarios "$BUILD" memkv memkv-rdma-probe || exit 2
mkdir -p "$R"; R="$(cd "$R" && pwd)"

for f in ${FLIGHTS//,/ }; do
  [[ "$f" =~ ^[db][1-9][0-9]*$ ]] || { echo "bench-scenarios: bad flight '$f' (dN or bN, N >= 1)" >&2; exit 2; }
done
CELLS=""; n=0
for _ in $(seq "$ROUNDS"); do
  for s in ${SIZES//,/ }; do
    for f in ${FLIGHTS//,/ }; do
      # the probe's keys: at least 8 and at least N, a multiple of N
      k=${f:1}; k=$(( (8 + k - 1) / k * k ))
      [ $((k * s)) -gt $((32 << 20)) ] && continue
      for op in put write get read; do CELLS="$CELLS,$op:$s:$f"; n=$((n + 1)); done
    done
  done
done
CELLS="${CELLS#,}"
KEY="$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
GUEST="MEMKV=$BIN/memkv PROBE=$BIN/memkv-rdma-probe AUTH_KEY=$KEY RDMA=$TRANSPORT RDMA_TIMEOUT=$RDMA_TIMEOUT CELLS=$CELLS SECS=$SECS"
export MEMKV_RDMA_MEM="${MEMKV_RDMA_MEM:-1024}"

# The host's CPU (/proc/stat) and that of the pair's processes (the two QEMUs,
# the switch: their command lines name R/bench), every 0.5 s.
python3 - "$R/bench" > "$R/host_cpu.txt" <<'PY' & SAMPLER=$!
import json, os, sys, time
tag = sys.argv[1]
while True:
    procs = {}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            if tag not in cmd: continue
            stat = open(f"/proc/{p}/stat").read()
            comm, f = stat[stat.index("(") + 1:stat.rindex(")")], stat.rsplit(")", 1)[1].split()
            who = ("switch" if "switch.py" in cmd else None) if comm.startswith("python") else \
                  ("qemu-a" if f"{tag}/a/" in cmd else "qemu-b") if comm.startswith("qemu-system") else None
            if who: procs[who] = int(f[11]) + int(f[12])
        except OSError:
            pass
    print(json.dumps({"t": time.time(), "cpu": [int(x) for x in open("/proc/stat").readline().split()[1:]], "procs": procs}), flush=True)
    time.sleep(0.5)
PY
trap 'kill $SAMPLER 2>/dev/null; [ -n "${BIN:-}" ] && [ "$BIN" != "$BUILD" ] && rm -rf "$BIN"' EXIT

echo "-- boot bench: $n cells ($CELLS), $SECS s each"
t=$(date +%s)
timeout $((n * (SECS + 40) + 180)) "$HERE/run-pair.sh" --out "$R/bench" --timeout $((n * (SECS + 30) + 150)) -- \
  "$GUEST sh $SCRIPTS/bench.sh" "$GUEST sh $SCRIPTS/bench.sh" > "$R/bench.txt" 2>&1
rc=$?
echo "   (bench: rc=$rc, $(( $(date +%s) - t )) s; guest logs in $R/bench.txt, files in $R/bench/{a,b})"
[ "$rc" = 75 ] && echo "   (bench ended early: the emulated NIC of $(cat "$R/bench/nic-stall"); the cells after it did not run, run the bench again)"
kill $SAMPLER 2>/dev/null; wait $SAMPLER 2>/dev/null

python3 - "$R" "$CELLS" "$SECS" "$ROUNDS" <<'PY' | tee "$R/table.txt"
import json, os, re, statistics, sys
R, cells, secs, rounds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), sys.argv[4]
B = f"{R}/bench"
HZ = os.sysconf("SC_CLK_TCK")

def read(p):
    try: return open(p).read()
    except OSError: return ""

def guest_cpu(g):  # cell -> (busy s, user, system, softirq, wall s)
    marks = {}
    for line in read(f"{B}/{g}/cpu.txt").splitlines():
        w = line.split()
        marks[(w[0], w[1])] = (float(w[2]), [int(x) for x in w[4:]])
    out = {}
    for i in range(1, len(cells) + 1):
        s, e = marks.get((f"c{i}", "start")), marks.get((f"c{i}", "end"))
        if not s or not e: continue
        d = [b - a for a, b in zip(s[1], e[1])]
        total = sum(d[:8]) or 1
        busy = total - d[3] - d[4]
        out[i] = dict(busy=100 * busy / total, usr=100 * (d[0] + d[1]) / total, sys=100 * d[2] / total,
                      si=100 * (d[5] + d[6]) / total, wall=e[0] - s[0])
    return out

ga, gb = guest_cpu("a"), guest_cpu("b")

WATCH = ("completer_retry_err", "retry_exceeded_err", "rcvd_seq_err", "duplicate_request", "out_of_seq_request",
         "rcvd_rnr_err", "send_rnr_err")
def hw(g):  # cell -> {counter: delta} for the error and retry counters that moved
    marks = {}
    for line in read(f"{B}/{g}/hw.txt").splitlines():
        w = line.split()
        marks[(w[0], w[1])] = {k: int(v) for k, v in (x.split("=") for x in w[3:] if "=" in x)}
    out = {}
    for i in range(1, len(cells) + 1):
        s, e = marks.get((f"c{i}", "start")), marks.get((f"c{i}", "end"))
        if s is not None and e is not None:
            out[i] = {k: e.get(k, 0) - s.get(k, 0) for k in WATCH if e.get(k, 0) != s.get(k, 0)}
    return out
hwa, hwb = hw("a"), hw("b")
host = [json.loads(l) for l in read(f"{R}/host_cpu.txt").splitlines() if l.strip()]

def host_cpu(i):  # over the cell, by the host clock: signal files cN-ack .. cN-end
    try: t0, t1 = os.stat(f"{B}/pair/c{i}-ack").st_mtime, os.stat(f"{B}/pair/c{i}-end").st_mtime
    except OSError: return None
    s = [h for h in host if t0 <= h["t"] <= t1]
    if len(s) < 2: return None
    a, b = s[0], s[-1]
    d = [y - x for x, y in zip(a["cpu"], b["cpu"])]
    total = sum(d[:8]) or 1
    ncpu = os.cpu_count()
    per = {k: 100 * (b["procs"].get(k, 0) - a["procs"].get(k, 0)) / HZ / (b["t"] - a["t"]) for k in ("qemu-a", "qemu-b", "switch")}
    return dict(busy=100 * (total - d[3] - d[4]) / total * ncpu, **per)

res, failed, unread = {}, [], set()
for i, c in enumerate(cells, 1):
    op, size, flight = c.split(":"); size = int(size)
    out = read(f"{B}/b/c{i}.out")
    mib, note = None, ""
    if op in ("put", "get"):
        js = [l for l in out.splitlines() if l.startswith("{")]
        if js:
            j = json.loads(js[-1]); st = j["stats"]
            if j["failed"] == 0 and j["mismatched"] == 0 and j["ok"] > 0:
                mib = j["mib_s"]
            note = f"{j['ok']} ops, rdma_ops {st['rdma_ops']}, tcp_ops {st['tcp_ops']}, zero-copy {st.get('rdma_zero_copy_ops')}, spare-slot puts {st.get('rdma_spare_puts')}, client cpu usr {j['cpu_user_s']} sys {j['cpu_sys_s']} s"
            if st["tcp_ops"] or st["fallbacks"] or st["rdma_reissued"]: note += f" (NOT all RDMA: fallbacks {st['fallbacks']}, reissued {st['rdma_reissued']})"
            if j["failed"] or j["mismatched"]: note += f"; FAILED {j['failed']}, mismatched {j['mismatched']}: {j['first_error'][:200]}"
        else:
            note = f"no result (rc {read(f'{B}/b/c{i}.rc').strip() or '?'}): {read(f'{B}/b/c{i}.err').strip()[-200:]}"
    else:
        m = re.search(rf"^\s*{size}\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", out, re.M)
        if m:
            mib = float(m.group(3))
            note = f"{m.group(1)} iterations in the {secs} s window ({int(m.group(1)) * size / 2**20 / secs:.1f} MiB/s by count)"
            if mib == 0 and int(m.group(1)) > 0:  # perftest's average, not the traffic: no figure for this round
                mib = None
                unread.add(i)
                note += "; perftest printed an average of 0.00 MiB/s: left out of the medians and ratios"
        else:
            note = "no result: " + (re.findall(r"ib_\w+_bw rc=\d+.*", out) or ["perftest did not report"])[0]
    if mib is None and i not in unread: failed.append(i)
    res[i] = dict(op=op, size=size, flight=flight, mib=mib, note=note)

def fmt_size(s): return f"{s >> 20} MiB" if s % 2**20 == 0 else f"{s >> 10} KiB" if s % 1024 == 0 else f"{s} B"
pair = {"get": "read", "put": "write"}
print(f"{'size':>8}  {'flight':<7} {'op':<4} {'memkv MiB/s':>12} {'perftest MiB/s':>15} {'ratio':>6}   (perftest: ib_read_bw for get, ib_write_bw for put, -t N; median of {rounds} rounds)")
print("flight: dN = N ops in flight (the probe's --depth N), bN = batches of N (--batch N)")
summary = []
for size, flight in dict.fromkeys((r["size"], r["flight"]) for r in res.values()):
    for op in ("get", "put"):
        mine = [r["mib"] for r in res.values() if (r["size"], r["flight"], r["op"]) == (size, flight, op)]
        ref = [r["mib"] for r in res.values() if (r["size"], r["flight"], r["op"]) == (size, flight, pair[op])]
        rs = [x / y for x, y in zip(mine, ref) if x and y]
        f = lambda v, d=1: f"{statistics.median(v):.{d}f}" if v else "-"
        print(f"{fmt_size(size):>8}  {flight:<7} {op:<4} {f([x for x in mine if x is not None]):>12} {f([x for x in ref if x is not None]):>15} {f(rs, 2):>6}")
        med = lambda v: statistics.median(v) if v else None
        summary.append(dict(size_bytes=size, flight=flight, op=op, memkv_mib_s=med([x for x in mine if x is not None]),
                            perftest_mib_s=med([x for x in ref if x is not None]), ratio=med(rs),
                            memkv_rounds=mine, perftest_rounds=ref))
with open(f"{R}/table.json", "w") as out:
    json.dump({"rounds": int(rounds), "seconds": secs, "cells": summary}, out, indent=1)
ping = re.search(r"min/avg/max = ([\d.]+)/([\d.]+)/([\d.]+)", read(f"{B}/b/ping.out"))
print(f"\nping b -> a (IP round trip, guests' stacks and the switch): " + (f"min/avg/max {ping.group(1)}/{ping.group(2)}/{ping.group(3)} ms" if ping else "no result"))
print()
print("per cell (busy % of the guest's one CPU: usr/sys/softirq; host: % of one core, all cores together and the pair's processes)")
print(f"{'cell':<5} {'op':<5} {'size':>7} {'flight':<6} {'MiB/s':>7}  {'guest a busy':>20}  {'guest b busy':>20}  {'host':>5} {'qemu-a':>6} {'qemu-b':>6} {'switch':>6}  notes")
for i, r in res.items():
    def g(x): return f"{x['busy']:3.0f} ({x['usr']:2.0f}/{x['sys']:2.0f}/{x['si']:2.0f})" if x else "-"
    h = host_cpu(i)
    hs = f"{h['busy']:5.0f} {h['qemu-a']:6.0f} {h['qemu-b']:6.0f} {h['switch']:6.0f}" if h else f"{'-':>5} {'-':>6} {'-':>6} {'-':>6}"
    mib = f"{r['mib']:7.1f}" if r["mib"] is not None else f"{'-':>7}"
    moved = "; ".join(f"{n} rxe " + " ".join(f"{k}+{v}" for k, v in d.items()) for n, d in (("a", hwa.get(i)), ("b", hwb.get(i))) if d)
    print(f"c{i:<4} {r['op']:<5} {fmt_size(r['size']):>7} {r['flight']:<6} {mib}  {g(ga.get(i)):>20}  {g(gb.get(i)):>20}  {hs}  {r['note']}" + (f"; {moved}" if moved else ""))
if failed: print(f"cells without a result: {', '.join('c%d' % i for i in failed)} (see {B}/b/cN.out, .err, {R}/bench.txt)")
sys.exit(1 if failed else 0)
PY

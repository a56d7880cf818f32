#!/usr/bin/env bash
# Starts a memkv server (memory store) on a free loopback port and runs
# against it, under libmemkv_preload.so:
#   1. memkv-preload-bench: 16 MiB files through the shim against the C
#      client, alternating in one process;
#   2. the storage calls of MLPerf Storage's KV-cache benchmark (NumPy .npy
#      entries: open 'wb' + np.save + flush + fsync + close, then exists +
#      open + posix_fadvise(DONTNEED) + close + np.load, then unlink; 4
#      threads), through the shim and on a local directory (its filesystem,
#      the same calls), storage MB/s of each phase. Needs python3-numpy;
#      skipped without it. MLPERF_ENTRIES (default 48) entries of 8 to 64 MiB.
# Usage: bench/preload_bench.sh BUILD_DIR [rounds] [files] [JSON_PATH]
#   JSON_PATH: the 16 MiB medians also as JSON (bench/run-all reads it), with
#   the MLPerf phases under "mlperf" (shim, local, local_fs)
set -euo pipefail
build=$(cd "$1" && pwd)
shift
. "$(dirname "$0")/../tests/shell_test.sh" preload-bench
local_dir=${LOCAL_DIR:-$scratch/local}
start_memory_server "$build/memkv" "2 GiB"
MEMKV_SERVERS=$address MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp \
  MEMKV_PRELOAD_PREFIX=/memkv-bench LD_PRELOAD="$build/src/preload/libmemkv_preload.so" \
  "$build/memkv-preload-bench" /memkv-bench "$@"

/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "MLPerf-style workload skipped: no NumPy (python3-numpy)"; exit 0; }
cat >"$scratch/mlperf.py" <<'PY'
# The KV-cache benchmark's file-tier calls, timed per phase (all threads).
import os, sys, threading, time
import numpy as np
cache_dir, entries = sys.argv[1], int(sys.argv[2])
json_path = sys.argv[3] if len(sys.argv) > 3 else None  # the phases' figures as JSON
threads, mib = 4, 1 << 20
sizes = [8, 16, 32, 64]  # MiB, cycled
os.makedirs(cache_dir, exist_ok=True)
arrays = {s: np.full((32, 2, s * mib // (32 * 2 * 8 * 128 * 2), 8, 128), s, dtype=np.float16) for s in sizes}
plan = [[(f"t{t}_e{i}", sizes[i % len(sizes)]) for i in range(t, entries, threads)] for t in range(threads)]
def path(name): return os.path.join(cache_dir, name + ".npy")
def write(items):
    for name, size in items:
        with open(path(name), "wb") as f:
            np.save(f, arrays[size], allow_pickle=False); f.flush(); os.fsync(f.fileno())
def read(items):
    for name, size in items:
        assert os.path.exists(path(name))
        fd = os.open(path(name), os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
        assert np.array(np.load(path(name), allow_pickle=False)).nbytes == size * mib
def unlink(items):
    for name, _ in items: os.unlink(path(name))
total = sum(size for items in plan for _, size in items)
figures = {"entries": entries, "mib": total}
for phase in (write, read, unlink):
    start = time.perf_counter()
    ts = [threading.Thread(target=phase, args=(items,)) for items in plan]
    for t in ts: t.start()
    for t in ts: t.join()
    took = time.perf_counter() - start
    rate = f"{total / took:10.0f}" if phase is not unlink else f"{entries / took:10.0f} /s"
    print(f"{phase.__name__:8} {rate}  ({took:.2f} s)")
    figures[phase.__name__ + "_s"] = took
    figures[phase.__name__ + ("_mib_per_s" if phase is not unlink else "_per_s")] = (
        total if phase is not unlink else entries) / took
if json_path:
    import json
    with open(json_path, "w") as f: json.dump(figures, f)
PY
entries=${MLPERF_ENTRIES:-48}
echo
echo "MLPerf KV-cache storage calls: $entries .npy entries of 8-64 MiB, 4 threads, MiB/s (unlink: entries/s)"
echo "through the shim:"
MEMKV_SERVERS=$address MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp MEMKV_TIMEOUT_MS=60000 \
  MEMKV_PRELOAD_PREFIX=/memkv-bench LD_PRELOAD="$build/src/preload/libmemkv_preload.so" \
  /usr/bin/python3 "$scratch/mlperf.py" /memkv-bench/mlperf "$entries" "$scratch/mlperf-shim.json"
local_fs=$(df --output=source,fstype "$(dirname "$local_dir")" | tail -n 1 | tr -s ' ')
echo "on a local directory ($local_fs):"
/usr/bin/python3 "$scratch/mlperf.py" "$local_dir/mlperf" "$entries" "$scratch/mlperf-local.json"
# With a JSON path, its "mlperf" object: both sides' phases and the local
# directory's device and filesystem.
if [ $# -ge 3 ]; then
  /usr/bin/python3 - "$3" "$scratch/mlperf-shim.json" "$scratch/mlperf-local.json" "$local_fs" <<'PY'
import json, sys
out, shim, local, fs = sys.argv[1:]
with open(out) as f: doc = json.load(f)
doc["mlperf"] = {"shim": json.load(open(shim)), "local": json.load(open(local)), "local_fs": fs}
with open(out, "w") as f: json.dump(doc, f, indent=1)
PY
fi

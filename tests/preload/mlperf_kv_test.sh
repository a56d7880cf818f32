#!/usr/bin/env bash
# mlperf_kv_test.py (the storage calls of MLPerf Storage's KV-cache benchmark,
# entries up to 3 GiB, several threads) under libmemkv_preload.so against
# a real `memkv start` (file mode, a 512 MiB pool, two 3 GiB drive files), and
# from outside: nothing under the prefix on the real filesystem, no key left
# on the server. Needs about 10 GiB of free memory (a 3 GiB entry up to three
# times in the test's process: its memfd, the array np.load makes and the
# copy np.array makes) and 6 GiB of disk.
#
# Usage: mlperf_kv_test.sh MEMKV_BINARY PRELOAD_LIBRARY PY_PROGRAM
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 MEMKV PRELOAD_LIB PY_PROGRAM" >&2; exit 2; }
memkv=$1 lib=$2 py_program=$3
. "$(dirname "$0")/../shell_test.sh" preload_mlperf_test

/usr/bin/python3 -c 'import numpy' 2>/dev/null || { log "SKIP: no NumPy (Debian: python3-numpy)"; exit 77; }
export HOME="$scratch/home"
mkdir -p "$HOME"
# File mode, as the benchmark's storage tier is meant to be: a 512 MiB pool
# (faulted in as values arrive) before two 3 GiB drive files; entries over a
# quarter of the pool go to the drives in pieces, so the server holds little
# of them in memory.
start_server "$memkv" server "memory:\n  max_size: 512 MiB\n  prefault: false\nstorage:\n  mode: file\n  drives:\n    - {media: $scratch/d0.memkv, size: 3 GiB}\n    - {media: $scratch/d1.memkv, size: 3 GiB}\n"
server_pid=$started_pid
address=$started_address
export MEMKV_SERVERS=$address MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp
# A 3 GiB put or get takes seconds on a loaded 2-core machine.
export MEMKV_TIMEOUT_MS=120000
kv=$scratch/kv
export MEMKV_PRELOAD_PREFIX=$kv
log "server ready on $MEMKV_SERVERS (file mode, 512 MiB pool, two 3 GiB drives); prefix $kv"

LD_PRELOAD=$lib MEMKV_PRELOAD_STATS="$scratch/stats" /usr/bin/python3 "$py_program" "$memkv" "$kv/run1" run1 ||
  fail "the MLPerf KV-cache storage calls failed"
[ ! -e "$kv" ] || fail "the prefix $kv exists on the real filesystem: $(find "$kv" | head)"
grep -q 'put errors 0 (0 unreported),.*get errors 0, keys lost 0' "$scratch/stats" ||
  fail "the shim's counters at exit: $(cat "$scratch/stats")"
# What is left is the directory the benchmark made (os.makedirs: its marker).
"$memkv" ls >"$scratch/ls.out" || fail "memkv ls failed"
[ "$(cat "$scratch/ls.out")" = "run1/" ] || fail "the server holds, besides run1/: $(head "$scratch/ls.out")"
log "$(cat "$scratch/stats")"
log "PASS"

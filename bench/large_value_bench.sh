#!/usr/bin/env bash
# Runs memkv-large-value-bench (one 4 GiB value against 2 MiB values, the
# same bytes, alternating in one run) against a memkv server on a free
# loopback port, once per storage mode:
#   memory  a 6 GiB pool, which holds the 4 GiB value whole;
#   file    a 1 GiB pool and two drive files of 5 GiB under $TMPDIR (the
#           4 GiB value goes to the drives and back a window at a time;
#           2 MiB values are written through the pool).
# Needs about 14 GiB of memory and 10 GiB of disk.
# Usage: bench/large_value_bench.sh BUILD_DIR [memory|file|both] [--json PATH]
#                                   [memkv-large-value-bench flags]
#   --json PATH: every mode's figures also as JSON, {"runs": [...]} with one
#   object per mode run: storage_mode, pool_bytes and the members of
#   memkv-large-value-bench's --json object
set -euo pipefail
build=$(cd "$1" && pwd)
modes=${2:-both}
shift $(($# < 2 ? $# : 2))
[ "$modes" = both ] && modes="memory file"
. "$(dirname "$0")/../tests/shell_test.sh" large-value-bench
json=""
flags=()
while [ $# -gt 0 ]; do
  if [ "$1" = --json ]; then
    [ $# -ge 2 ] || fail "--json needs a path"
    json=$2
    shift 2
  else
    flags+=("$1")
    shift
  fi
done
runs=()

for mode in $modes; do
  case "$mode" in
    memory) pool="6 GiB"; pool_bytes=$((6 << 30)); storage="storage:\n  mode: memory\n" ;;
    file) pool="1 GiB"; pool_bytes=$((1 << 30))
          storage="storage:\n  mode: file\n  drives:\n    - {media: $scratch/d0.memkv, size: 5 GiB}\n    - {media: $scratch/d1.memkv, size: 5 GiB}\n" ;;
    *) fail "unknown mode '$mode': memory, file or both" ;;
  esac
  start_server "$build/memkv" "$mode" "memory:\n  max_size: $pool\n$storage"
  server_pid=$started_pid
  echo "== storage.mode $mode (pool $pool)"
  MEMKV_SERVERS=$started_address MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp \
    MEMKV_TIMEOUT_MS=60000 "$build/memkv-large-value-bench" "${flags[@]}" --json "$scratch/$mode.json"
  doc=$(cat "$scratch/$mode.json")
  runs+=("{\"storage_mode\":\"$mode\",\"pool_bytes\":$pool_bytes,${doc#\{}")
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  rm -f "$scratch"/d*.memkv
done
if [ -n "$json" ]; then
  (IFS=,; printf '{"runs":[%s]}\n' "${runs[*]}") >"$json"
fi

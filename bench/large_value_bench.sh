#!/usr/bin/env bash
# Runs memkv-large-value-bench (one 4 GiB value against 2 MiB values, the
# same bytes, alternating in one run) against a memkv server on a free
# loopback port, once per storage mode:
#   memory  a 6 GiB pool, which holds the 4 GiB value whole;
#   file    a 1 GiB pool and two drive files of 5 GiB under $TMPDIR (the
#           4 GiB value goes to the drives and back a window at a time;
#           2 MiB values are written through the pool).
# Needs about 14 GiB of memory and 10 GiB of disk.
# Usage: bench/large_value_bench.sh BUILD_DIR [memory|file|both] [memkv-large-value-bench flags]
set -euo pipefail
build=$(cd "$1" && pwd)
modes=${2:-both}
shift $(($# < 2 ? $# : 2))
[ "$modes" = both ] && modes="memory file"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/memkv-large-bench.XXXXXX")
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"' EXIT
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

for mode in $modes; do
  case "$mode" in
    memory) storage="storage:\n  mode: memory\n"; pool="6 GiB" ;;
    file) storage="storage:\n  mode: file\n  drives:\n    - {media: $scratch/d0.memkv, size: 5 GiB}\n    - {media: $scratch/d1.memkv, size: 5 GiB}\n"
          pool="1 GiB" ;;
    *) echo "unknown mode '$mode': memory, file or both" >&2; exit 2 ;;
  esac
  printf "network:\n  address: 127.0.0.1:0\n  auth_key: %s\nmemory:\n  max_size: %s\n$storage" "$key" "$pool" \
    >"$scratch/server.yaml"
  : >"$scratch/out"
  HOME=$scratch "$build/memkv" start --config "$scratch/server.yaml" --data-dir "$scratch/data-$mode" \
    >"$scratch/out" 2>"$scratch/err" &
  pid=$!
  deadline=$((SECONDS + 120))
  until grep -q '^ready ' "$scratch/out"; do
    kill -0 "$pid" 2>/dev/null || { cat "$scratch/err" >&2; exit 1; }
    [ $SECONDS -lt $deadline ] || { echo "server not ready in 120 s" >&2; exit 1; }
    sleep 0.1  # poll interval; the deadline bounds the wait
  done
  echo "== storage.mode $mode (pool $pool)"
  MEMKV_SERVERS=$(sed -n 's/^ready //p' "$scratch/out") MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp \
    MEMKV_TIMEOUT_MS=60000 "$build/memkv-large-value-bench" "$@"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  rm -f "$scratch"/d*.memkv
done

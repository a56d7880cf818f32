#!/usr/bin/env bash
# Starts a memkv server (memory store) on a free loopback port and runs
# memkv-preload-bench under libmemkv_preload.so against it.
# Usage: bench/preload_bench.sh BUILD_DIR [rounds] [files]
set -euo pipefail
build=$(cd "$1" && pwd)
shift
scratch=$(mktemp -d "${TMPDIR:-/tmp}/memkv-preload-bench.XXXXXX")
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$scratch"' EXIT
key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
printf 'network:\n  address: 127.0.0.1:0\n  auth_key: %s\nmemory:\n  max_size: 2 GiB\nstorage:\n  mode: memory\n' \
  "$key" >"$scratch/server.yaml"
: >"$scratch/out"
HOME=$scratch "$build/memkv" start --config "$scratch/server.yaml" --data-dir "$scratch/data" >"$scratch/out" 2>"$scratch/err" &
pid=$!
deadline=$((SECONDS + 60))
until grep -q '^ready ' "$scratch/out"; do
  kill -0 "$pid" 2>/dev/null || { cat "$scratch/err" >&2; exit 1; }
  [ $SECONDS -lt $deadline ] || { echo "server not ready in 60 s" >&2; exit 1; }
  sleep 0.1  # poll interval; the deadline bounds the wait
done
MEMKV_SERVERS=$(sed -n 's/^ready //p' "$scratch/out") MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp \
  MEMKV_PRELOAD_PREFIX=/memkv-bench LD_PRELOAD="$build/src/preload/libmemkv_preload.so" \
  "$build/memkv-preload-bench" /memkv-bench "$@"

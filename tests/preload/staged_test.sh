#!/usr/bin/env bash
# Staged writes of libmemkv_preload.so (docs/preload.md) against a real
# `memkv start` server: preload_staged_writes checks each file it writes by
# reading it back through the shim; then the values of a long file and of
# the short file written after it (the same recycled buffer) are checked
# without the shim (memkv get).
# Usage: staged_test.sh MEMKV_BINARY PRELOAD_LIBRARY STAGED_WRITES_PROGRAM
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 MEMKV PRELOAD_LIB STAGED_WRITES_PROGRAM" >&2; exit 2; }
memkv=$1 lib=$2 program=$3
. "$(dirname "$0")/../shell_test.sh" preload_staged_test

start_memory_server "$memkv" "256 MiB"
export MEMKV_SERVERS=$address MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp
kv=$scratch/kv
export MEMKV_PRELOAD_PREFIX=$kv

LD_PRELOAD=$lib "$program" "$kv/staged" "$scratch" || fail "preload_staged_writes failed"

"$memkv" get staged/short.bin -o "$scratch/short" || fail "memkv get staged/short.bin failed"
[ "$(cat "$scratch/short")" = s ] || fail "staged/short.bin is not the 1 byte written last"
"$memkv" get staged/long.bin -o "$scratch/long" || fail "memkv get staged/long.bin failed"
[ "$(stat -c %s "$scratch/long")" = $((6 << 20)) ] || fail "staged/long.bin is not 6 MiB"
[ -z "$(tr -d '\245' <"$scratch/long" | head -c 1)" ] || fail "staged/long.bin holds other bytes than 0xA5"
[ ! -e "$kv" ] || fail "something reached the real filesystem under the prefix"
log "staged writes: ok"

#!/usr/bin/env bash
# Runs memkv-match-prefix-bench (MatchPrefix against BatchExists, 128 keys
# by default, alternating in one run) against four memkv servers on free
# loopback ports, memory mode, 256 MiB pools.
# Usage: bench/match_prefix_bench.sh BUILD_DIR [memkv-match-prefix-bench flags]
#   --json PATH (a memkv-match-prefix-bench flag): the flags, the median and
#   p99 latency of each call and their ratios also as JSON
set -euo pipefail
build=$(cd "$1" && pwd)
shift
. "$(dirname "$0")/../tests/shell_test.sh" match-prefix-bench

pids=()
addresses=()
for i in 0 1 2 3; do
  start_server "$build/memkv" "server$i" "memory:\n  max_size: 256 MiB\nstorage:\n  mode: memory\n"
  pids+=("$started_pid")
  addresses+=("$started_address")
done
servers=$(IFS=,; echo "${addresses[*]}")
MEMKV_SERVERS=$servers MEMKV_AUTH_KEY=$key MEMKV_TRANSPORT=tcp "$build/memkv-match-prefix-bench" "$@"
for pid in "${pids[@]}"; do
  kill "$pid"
  wait "$pid" 2>/dev/null || true
done

# What the shell tests (install, package, preload) share, sourced as
#   . "$(dirname "$0")/../shell_test.sh" NAME
# - log and fail, prefixed with NAME;
# - $scratch, a fresh directory removed when the script exits, after the
#   server whose pid the script keeps in $server_pid is killed;
# - start_memory_server: a memory-mode `memkv start` on a free loopback port.
test_name=$1
log() { echo "$test_name: $*"; }
fail() {
  echo "$test_name: FAIL: $*" >&2
  exit 1
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/memkv-$test_name.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# start_memory_server MEMKV_BINARY POOL_SIZE: runs it in the background with a
# fresh key and data directory under $scratch, waits for its "ready" line, and
# sets server_pid, key (64 hex) and address (127.0.0.1:PORT). Its stdout and
# stderr are $scratch/server.out and $scratch/server.err.
start_memory_server() {
  key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  printf 'network:\n  address: 127.0.0.1:0\n  auth_key: %s\nmemory:\n  max_size: %s\nstorage:\n  mode: memory\n' \
    "$key" "$2" >"$scratch/server.yaml"
  : >"$scratch/server.out"
  "$1" start --config "$scratch/server.yaml" --data-dir "$scratch/data" >"$scratch/server.out" \
    2>"$scratch/server.err" &
  server_pid=$!
  local deadline=$((SECONDS + 60))
  until grep -q '^ready ' "$scratch/server.out"; do
    kill -0 "$server_pid" 2>/dev/null || { cat "$scratch/server.err" >&2; fail "memkv start exited early"; }
    [ $SECONDS -lt $deadline ] || { cat "$scratch/server.err" >&2; fail "memkv start not ready within 60 s"; }
    sleep 0.1  # poll interval; the deadline above bounds the wait
  done
  address=$(sed -n 's/^ready \(127\.0\.0\.1:[0-9]*\)$/\1/p' "$scratch/server.out")
  [ -n "$address" ] || fail "cannot read the address from '$(cat "$scratch/server.out")'"
}

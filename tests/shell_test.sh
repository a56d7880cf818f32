# What the shell tests (install, package, preload) share, sourced as
#   . "$(dirname "$0")/../shell_test.sh" NAME
# - log and fail, prefixed with NAME;
# - $scratch, a fresh directory removed when the script exits, after the
#   server whose pid the script keeps in $server_pid is killed;
# - start_server, start_memory_server: a `memkv start` on a free loopback port.
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

# start_server MEMKV_BINARY NAME SECTIONS: `memkv start` in the background,
# its config the network section (127.0.0.1, port 0, the key $key, made fresh
# when unset) and SECTIONS (printf %b: the memory and storage sections), its
# data directory $scratch/NAME-data, its stdout and stderr $scratch/NAME.out
# and $scratch/NAME.err. Waits for its "ready" line and sets started_pid and
# started_address (127.0.0.1:PORT); a server that does not get ready is
# killed and the script fails.
start_server() {
  [ -n "${key:-}" ] || key=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
  printf 'network:\n  address: 127.0.0.1:0\n  auth_key: %s\n%b' "$key" "$3" >"$scratch/$2.yaml"
  : >"$scratch/$2.out"
  "$1" start --config "$scratch/$2.yaml" --data-dir "$scratch/$2-data" >"$scratch/$2.out" 2>"$scratch/$2.err" &
  started_pid=$!
  local deadline=$((SECONDS + 60))
  until grep -q '^ready ' "$scratch/$2.out"; do
    kill -0 "$started_pid" 2>/dev/null || { cat "$scratch/$2.err" >&2; fail "memkv start ($2) exited early"; }
    if [ $SECONDS -ge $deadline ]; then
      kill -KILL "$started_pid" 2>/dev/null || true
      cat "$scratch/$2.err" >&2
      fail "memkv start ($2) not ready within 60 s"
    fi
    sleep 0.1  # poll interval; the deadline above bounds the wait
  done
  started_address=$(sed -n 's/^ready \(127\.0\.0\.1:[0-9]*\)$/\1/p' "$scratch/$2.out")
  [ -n "$started_address" ] || fail "cannot read the address from '$(cat "$scratch/$2.out")'"
}

# start_memory_server MEMKV_BINARY POOL_SIZE: start_server NAME server, a
# memory-mode store of POOL_SIZE; sets server_pid, key (64 hex) and address.
start_memory_server() {
  start_server "$1" server "memory:\n  max_size: $2\nstorage:\n  mode: memory\n"
  server_pid=$started_pid
  address=$started_address
}

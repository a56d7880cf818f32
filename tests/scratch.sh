# Sourced by the shell tests (install, package, preload) as
#   . "$(dirname "$0")/../scratch.sh" NAME
# Makes $scratch, a fresh directory removed when the script exits, and kills
# the server whose pid the script puts in $server_pid first.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/memkv-$1.XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

#!/usr/bin/env bash
# The MEMKV NIXL backend against a real NIXL agent, in one command:
#
#   scripts/nixl-check.sh NIXL_PREFIX [--blocks N] [--repeat N] [--transport tcp|auto|rdma]
#                         [--batch-size N] [--workers N]
#
# NIXL_PREFIX is where NIXL is installed ($NIXL_PREFIX/include/nixl.h, libnixl.so); the
# Abseil NIXL was built with is found under it or through CMAKE_PREFIX_PATH.
# Builds MemKV with -DMEMKV_NIXL_PREFIX in build-nixl/ (libplugin_MEMKV.so
# and memkv-nixl-check), starts a memkv server on loopback and runs the agent
# program's three scenarios against it (docs/nixl.md):
#   runpath (first, without a server) the plugin and libmemkv.so.0 installed
#           under a scratch DESTDIR: the plugin must find libmemkv.so.0 by
#           its RUNPATH alone
#   verify  --blocks blocks of 64 KiB and of 2 MiB written and read back
#           through the agent, compared byte for byte; queryMem
#   bench   GiB/s through the agent against the C++ client, same batches
#   kill    the server SIGKILLed mid-transfer: the request must end in an
#           error status, not hang
# Prints each scenario's output; exits non-zero when one fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

if [ $# -lt 1 ] || [ ! -f "$1/include/nixl.h" ]; then
  echo "usage: $0 NIXL_PREFIX [--blocks N] [--repeat N] [--transport T] [--batch-size N] [--workers N]" >&2
  echo "  NIXL_PREFIX must hold include/nixl.h (an installed NIXL; see NIXL's own documentation)" >&2
  exit 2
fi
prefix="$(cd "$1" && pwd)"
shift
blocks=1000
repeat=9
transport=tcp
engine_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --blocks) blocks="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --transport) transport="$2"; shift 2 ;;
    --batch-size|--workers) engine_args+=("$1" "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

build="$root/build-nixl"
cmake -S . -B "$build" -G Ninja -DMEMKV_NIXL_PREFIX="$prefix" \
  -DCMAKE_PREFIX_PATH="${CMAKE_PREFIX_PATH:-$prefix}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target memkv memkv_nixl_plugin memkv-nixl-check

# NIXL's libraries, and the libraries of what it was built with (Abseil)
# under CMAKE_PREFIX_PATH, for the loader.
lib_path="$(dirname "$(find "$prefix" -name 'libnixl.so' -print -quit)")"
for dir in $(tr ':;' '  ' <<<"${CMAKE_PREFIX_PATH:-}"); do
  [ -d "$dir/lib" ] && lib_path="$lib_path:$dir/lib"
done
work="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

key="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
# Every block of both sizes fits: 1000 x (64 KiB + 2 MiB) and room to spare.
pool_mib=$(( blocks * 2112 / 1024 + 512 ))

start_server() {
  rm -rf "$work/data" "$work/out"
  cat >"$work/memkv.yaml" <<EOF
network:
  address: 127.0.0.1:0
  auth_key: $key
memory:
  max_size: ${pool_mib} MiB
storage:
  mode: memory
EOF
  "$build/memkv" start --config "$work/memkv.yaml" --data-dir "$work/data" >"$work/out" 2>"$work/err" &
  server_pid=$!
  for _ in $(seq 1 600); do
    if grep -q '^ready ' "$work/out" 2>/dev/null; then break; fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/err" >&2; exit 1; }
    sleep 0.1
  done
  grep -q '^ready ' "$work/out" || { echo "memkv did not become ready" >&2; cat "$work/err" >&2; exit 1; }
  address="$(sed -n 's/^ready //p' "$work/out" | head -1)"
}

check() {  # scenario, extra args...
  local scenario="$1"; shift
  echo "== $scenario"
  NIXL_PLUGIN_DIR="$build/src/nixl" LD_LIBRARY_PATH="$lib_path:$build/src/capi${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$build/src/nixl/memkv-nixl-check" "$scenario" --servers "$address" --auth-key "$key" \
    --transport "$transport" --blocks "$blocks" ${engine_args[@]+"${engine_args[@]}"} "$@"
}

# Installed as the build's configuration says (under a scratch DESTDIR),
# the plugin must resolve libmemkv.so.0 to the installed copy by its RUNPATH:
# NIXL reports a plugin whose dependency does not load only as an
# "unsupported backend".
runpath_check() {
  echo "== runpath"
  local cache prefix libdir plugin_dir dest resolved
  cache="$(cmake -LA -N "$build")"
  prefix="$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' <<<"$cache")"
  libdir="$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' <<<"$cache")"
  [[ "$libdir" = /* ]] || libdir="$prefix/$libdir"
  plugin_dir="$(sed -n 's/^MEMKV_NIXL_PLUGIN_DIR:PATH=//p' <<<"$cache")"
  dest="$work/destdir"
  DESTDIR="$dest" cmake --install "$build" --component nixl >/dev/null
  mkdir -p "$dest$libdir"
  cp -P "$build"/src/capi/libmemkv.so.0* "$dest$libdir/"
  # "=> /path" through $ORIGIN/../..: normalized; "=> not found": empty.
  resolved="$(LD_LIBRARY_PATH="$lib_path" ldd "$dest$plugin_dir/libplugin_MEMKV.so" |
              awk '$1 == "libmemkv.so.0" && $3 ~ /^\// { print $3 }')"
  [ -n "$resolved" ] && resolved="$(realpath -e "$resolved")"
  if [[ -n "$resolved" && "$resolved" == "$(realpath -m "$dest$libdir")/"* ]]; then
    echo "runpath: $plugin_dir/libplugin_MEMKV.so finds libmemkv.so.0 in $libdir by its RUNPATH"
    echo PASS
  else
    echo "runpath: $plugin_dir/libplugin_MEMKV.so resolves libmemkv.so.0 to '${resolved:-nothing}', not $libdir"
    echo FAIL
    return 1
  fi
}

status=0
runpath_check || status=1
start_server
check verify || status=1
check bench --repeat "$repeat" || status=1
check kill --kill-pid "$server_pid" --sizes 2MiB --timeout-ms 5000 --deadline-ms 60000 || status=1
# Killed by the kill scenario, unless it failed before that.
kill -9 "$server_pid" 2>/dev/null || true
wait "$server_pid" 2>/dev/null || true
server_pid=""
exit $status

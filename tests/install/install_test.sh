#!/usr/bin/env bash
# `cmake --install` into a scratch prefix, then programs built against it as
# a user of the library would build them, outside the source tree
# (docs/client-library.md):
#   1. every installed file is under the prefix (install_manifest.txt), and
#      the expected ones are there: binary, library with its SONAME, headers,
#      memkv.pc, the CMake package, the unit and config under the prefix;
#   2. libmemkv.so exports only the public API (memkv_* and memkv::Client,
#      Status, ...), and links its own dependencies (nothing undefined);
#   3. a C program built with `pkg-config --cflags --libs memkv` and a C++
#      program built with find_package(memkv) / memkv::memkv, both run
#      against the installed server on a free loopback port;
#   4. the installed Python package imports with Debian's python3 and round
#      trips a value (when the tree built it).
#
# Usage: tests/install/install_test.sh BUILD_DIR   (memkv and memkv_shared built)
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../shell_test.sh" install_test

for tool in cmake pkg-config cc c++ nm readelf; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/install-deps.sh installs it)"
done

prefix="$scratch/prefix"

# --- 1. Install; everything under the prefix ---------------------------------
cmake --install "$build_dir" --prefix "$prefix" >"$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log" >&2; fail "cmake --install failed"; }
manifest="$build_dir/install_manifest.txt"
[ -s "$manifest" ] || fail "no $manifest after cmake --install"
if grep -v "^$prefix/" "$manifest"; then fail "the files above were installed outside the prefix $prefix"; fi
libdir=$(sed -n 's|^\(.*\)/libmemkv\.so\.0$|\1|p' "$manifest")
[ -n "$libdir" ] || fail "libmemkv.so.0 was not installed"
for f in bin/memkv include/memkv/client.h include/memkv/async.h include/memkv/memkv.h include/memkv/status.h \
  lib/systemd/system/memkv.service etc/memkv/config.yaml; do
  [ -f "$prefix/$f" ] || fail "$prefix/$f missing"
done
for f in libmemkv.so libmemkv.so.0 pkgconfig/memkv.pc cmake/memkv/memkvConfig.cmake \
  cmake/memkv/memkvConfigVersion.cmake cmake/memkv/memkvTargets.cmake; do
  [ -e "$libdir/$f" ] || fail "$libdir/$f missing"
done
log "installed $(wc -l <"$manifest") files, all under the prefix"

# --- 2. The library's ABI surface ------------------------------------------------
lib="$libdir/libmemkv.so.0"
readelf -d "$lib" >"$scratch/dynamic"
grep -q 'Library soname: \[libmemkv.so.0\]' "$scratch/dynamic" || fail "libmemkv's SONAME is not libmemkv.so.0"
nm -D --defined-only "$lib" | awk '$2 != "A" { print $3 }' | c++filt >"$scratch/exports"
if grep -Ev '^((memkv_[a-z0-9_]+|memkv::(Client|Status)::.*|memkv::(StatusCodeName|ClientLogLevelName|LibraryVersion)\(.*|typeinfo (name )?for memkv::Client)@@MEMKV_0|(memkv_options_set|memkv::(ClientOptionTable|FindClientOption|SetClientOption|SetClientOptionList|ClientOptionText|CheckClientOptions|SetClientOptionsFromEnvironment|ClientOptionsMarkdown)(\[abi:cxx11\])?\(.*)@@MEMKV_0\.1|(memkv_async_[a-z]+|memkv::(AsyncOpName|ClientStatsTable)\(.*|typeinfo (name )?for memkv::AsyncQueue)@@MEMKV_0\.2|memkv_(put_options_init|put_with|batch_put_with|match_prefix)@@MEMKV_0\.3|(memkv_(report_restores|identity_tag)|memkv::CacheIdentity::.*)@@MEMKV_0\.4)$' \
  "$scratch/exports"; then
  fail "libmemkv.so exports the symbols above, outside the public API"
fi
for sym in memkv_client_open memkv_put memkv_get memkv_match_prefix 'memkv::Client::Create(memkv::ClientOptions const&)'; do
  grep -qF "$sym" "$scratch/exports" || fail "libmemkv.so does not export $sym"
done
# --no-undefined at link time; here: it loads with only what it links.
ldd -r "$lib" >"$scratch/ldd" 2>&1 || true
if grep -E 'undefined symbol|not found' "$scratch/ldd"; then fail "libmemkv.so has unresolved dependencies"; fi
log "libmemkv.so.0: $(wc -l <"$scratch/exports") exported symbols, all public API"

# --- A server from the installed binary ----------------------------------------
export HOME="$scratch/home"  # nothing may fall back to the real ~/.memkv
mkdir -p "$HOME"
start_memory_server "$prefix/bin/memkv" "64 MiB"
log "installed server ready on $address"

# --- 3a. C with pkg-config -----------------------------------------------------
mkdir -p "$scratch/capp"
cp "$source_dir/tests/install/app.c" "$scratch/capp/app.c"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
flags=$(pkg-config --cflags --libs memkv) || fail "pkg-config --cflags --libs memkv failed"
# shellcheck disable=SC2086  # the flags are words
(cd "$scratch/capp" && cc -std=c11 -Wall -Wextra -Werror app.c $flags -Wl,-rpath,"$libdir" -o app) ||
  fail "building the C program with '$flags' failed"
readelf -d "$scratch/capp/app" | grep -q 'Shared library: \[libmemkv.so.0\]' || fail "the C program does not link libmemkv.so.0"
size=$(stat -c %s "$scratch/capp/app")
[ "$size" -lt 1000000 ] || fail "the C program is $size bytes: it should only link libmemkv.so"
"$scratch/capp/app" "$address" "$key" || fail "the C program failed against $address"
log "C program (pkg-config: $flags; $size bytes): ok"

# --- 3b. C++ with find_package(memkv) ------------------------------------------
mkdir -p "$scratch/cxxapp"
cp "$source_dir/tests/install/app.cc" "$scratch/cxxapp/app.cc"
cat >"$scratch/cxxapp/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(memkv_user LANGUAGES CXX)
find_package(memkv 0.1 REQUIRED)
add_executable(app app.cc)
target_link_libraries(app PRIVATE memkv::memkv)
EOF
cmake -S "$scratch/cxxapp" -B "$scratch/cxxapp/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$scratch/cxx-configure.log" 2>&1 ||
  { cat "$scratch/cxx-configure.log" >&2; fail "configuring the C++ program (find_package(memkv)) failed"; }
cmake --build "$scratch/cxxapp/build" >"$scratch/cxx-build.log" 2>&1 ||
  { cat "$scratch/cxx-build.log" >&2; fail "building the C++ program against memkv::memkv failed"; }
"$scratch/cxxapp/build/app" "$address" "$key" || fail "the C++ program failed against $address"
log "C++ program (find_package(memkv), memkv::memkv): ok"

# --- 4. Python -----------------------------------------------------------------
pydir=$(sed -n 's|^\(.*\)/memkv/__init__\.py$|\1|p' "$manifest" | head -n 1)
if [ -n "$pydir" ]; then
  PYTHONPATH="$pydir" /usr/bin/python3 - "$address" "$key" "$pydir" <<'EOF' || fail "the installed Python package failed"
import sys
import memkv
with memkv.Client(servers=[sys.argv[1]], auth_key=sys.argv[2], transport="tcp") as c:
    c.put("install-test", b"from python")
    assert c.get("install-test") == b"from python"
    assert memkv.__file__.startswith(sys.argv[3]), memkv.__file__
# The engine adapters import without their engines installed.
import memkv.adapters.lmcache, memkv.adapters.sglang, memkv.adapters.vllm
print("python ok", memkv.__version__)
EOF
  log "Python package in $pydir: ok"
else
  log "no Python package in this tree: skipped"
fi

kill -TERM "$server_pid"
wait "$server_pid" || fail "the server exited non-zero after SIGTERM"
server_pid=""
log "PASS"

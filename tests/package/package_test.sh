#!/usr/bin/env bash
# The Debian packages, end to end (docs/packaging.md):
#   1. cpack -G DEB from BUILD_DIR into a scratch directory: memkv,
#      libmemkv0, libmemkv-dev and python3-memkv, and the -dbgsym .ddeb of
#      each package with ELF files;
#   2. memkv's metadata (dpkg-deb --info), control files (conffiles,
#      maintainer scripts) and every package's exact file list (dpkg-deb
#      --contents): no test, bench or fuzz binaries; the binary stripped, its
#      debug info in the -dbgsym .ddeb; the library packages' dependencies;
#   3. dpkg -x into a scratch root; the packaged binary's --version, and
#      --check of the packaged config as shipped;
#   4. systemd-analyze verify of the packaged unit (skipped without it);
#   5. the packaged binary started with the packaged config rewritten to
#      scratch paths, a put and a get through its client verbs, SIGTERM ->
#      exit 0; the drive file and auth.key created; a second start re-adopts
#      both and still serves the value; meanwhile a C program built against
#      the unpacked libmemkv-dev and the unpacked python3-memkv read it too.
#
# Usage: tests/package/package_test.sh BUILD_DIR   (memkv built in it)
# Needs cpack, dpkg-deb, dpkg-shlibdeps (dpkg-dev), file, readelf, pkg-config, cc.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/../shell_test.sh" package_test

[ -f "$build_dir/CPackConfig.cmake" ] || fail "$build_dir/CPackConfig.cmake missing: configure $build_dir first"
[ -x "$build_dir/memkv" ] || fail "$build_dir/memkv missing: ninja -C $build_dir memkv"
for tool in cpack dpkg-deb dpkg file readelf; do
  command -v "$tool" >/dev/null || fail "$tool not found (scripts/install-deps.sh installs it)"
done
started=$SECONDS

# --- 1. Build the package --------------------------------------------------
log "cpack -G DEB ($build_dir -> $scratch/out)"
if ! cpack -G DEB --config "$build_dir/CPackConfig.cmake" -B "$scratch/out" >"$scratch/cpack.log" 2>&1; then
  cat "$scratch/cpack.log" >&2
  fail "cpack failed"
fi
# one_file GLOB: the one file in $scratch/out matching GLOB.
one_file() {
  shopt -s nullglob
  local found=("$scratch"/out/$1)
  shopt -u nullglob
  [ ${#found[@]} -eq 1 ] || fail "expected one $1 in $scratch/out, found ${#found[@]}: $(ls "$scratch/out")"
  echo "${found[0]}"
}
deb=$(one_file 'memkv_*.deb')
ddeb=$(one_file 'memkv-dbgsym_*.ddeb')
lib_deb=$(one_file 'libmemkv0_*.deb')
dev_deb=$(one_file 'libmemkv-dev_*.deb')
py_deb=$(one_file 'python3-memkv_*.deb')
one_file 'libmemkv0-dbgsym_*.ddeb' >/dev/null
one_file 'python3-memkv-dbgsym_*.ddeb' >/dev/null
for f in "$scratch"/out/*.deb "$scratch"/out/*.ddeb; do log "built $(basename "$f") ($(du -h "$f" | cut -f1))"; done

# --- 2. Metadata, control files, contents ------------------------------------
dpkg-deb --info "$deb" >"$scratch/info"
field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = memkv ] || fail "Package is '$(field Package)', want memkv"
[ "$(field Maintainer)" = "MemKV developers" ] || fail "Maintainer is '$(field Maintainer)'"
[ "$(field Section)" = database ] || fail "Section is '$(field Section)'"
[ "$(field Priority)" = optional ] || fail "Priority is '$(field Priority)'"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture is '$(field Architecture)'"
[ -n "$(field Description)" ] || fail "no Description"
version=$(field Version)
# dpkg-shlibdeps computed the library dependencies.
depends=$(field Depends)
for lib in libc6 libstdc++6 libssl3 libyaml-cpp libzmq5; do
  case "$depends" in *"$lib"*) ;; *) fail "Depends lacks $lib: $depends" ;; esac
done
# libibverbs is loaded at run time where it is installed, never required.
case "$depends" in *libibverbs*) fail "Depends names libibverbs: $depends" ;; esac
case "$(field Recommends)" in *ibverbs-providers*) ;; *) fail "Recommends lacks ibverbs-providers" ;; esac

dpkg-deb --control "$deb" "$scratch/control"
grep -qx /etc/memkv/config.yaml "$scratch/control/conffiles" ||
  fail "conffiles does not list /etc/memkv/config.yaml: $(cat "$scratch/control/conffiles" 2>/dev/null)"
for script in postinst prerm postrm; do
  [ -x "$scratch/control/$script" ] || fail "$script missing or not executable"
  sh -n "$scratch/control/$script" || fail "$script: syntax error"
done

# expect_files DEB: DEB holds exactly the paths on standard input (files and
# links; directories aside) and no test, benchmark or fuzz binary.
expect_files() {
  local name
  name=$(basename "$1")
  sort >"$scratch/$name.expected"
  dpkg-deb --contents "$1" | awk '$1 !~ /^d/ { sub(/^\.\//, "/", $6); print $6 }' | sort >"$scratch/$name.actual"
  if ! diff -u "$scratch/$name.expected" "$scratch/$name.actual" >"$scratch/$name.diff"; then
    cat "$scratch/$name.diff" >&2
    fail "$name contents differ from the expected list (+ unexpected, - missing)"
  fi
  if grep -Ei '_test|test_|bench|fuzz|crashtest' "$scratch/$name.actual" | grep -v '^/usr/share/doc/'; then
    fail "a test, benchmark or fuzz binary is packaged in $name"
  fi
}
dpkg-deb --contents "$deb" >"$scratch/contents"
{
  echo /usr/bin/memkv
  echo /lib/systemd/system/memkv.service
  echo /etc/memkv/config.yaml
  echo /usr/share/doc/memkv/README.md
  for doc in "$source_dir"/docs/*.md; do echo "/usr/share/doc/memkv/$(basename "$doc")"; done
} | expect_files "$deb"
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build_dir/CMakeCache.txt")
printf '%s\n' "/usr/$libdir/libmemkv.so.$version" "/usr/$libdir/libmemkv.so.0" "/usr/$libdir/libkv_store_memkv.so" \
  "/usr/$libdir/libmemkv_preload.so" | expect_files "$lib_deb"
{
  for h in async.h client.h identity.h kv_store.h memkv.h put_options.h status.h; do echo "/usr/include/memkv/$h"; done
  echo "/usr/$libdir/libmemkv.so"
  echo "/usr/$libdir/pkgconfig/memkv.pc"
  for f in memkvConfig.cmake memkvConfigVersion.cmake memkvTargets.cmake memkvTargets-relwithdebinfo.cmake; do
    echo "/usr/$libdir/cmake/memkv/$f"
  done
} | expect_files "$dev_deb"
dpkg-deb --contents "$py_deb" | awk '$1 !~ /^d/ { print $6 }' >"$scratch/python.contents"
for want in '__init__\.py' 'py\.typed' '[a-z_]*\.pyi' '_memkv[^/]*\.so' 'adapters/_common\.py' \
  'adapters/sglang\.py' 'adapters/vllm\.py' 'adapters/lmcache\.py'; do
  grep -qx "\./usr/lib/python3/dist-packages/memkv/$want" "$scratch/python.contents" ||
    fail "python3-memkv lacks /usr/lib/python3/dist-packages/memkv/$want"
done
grep -qx '\./usr/lib/python3/dist-packages/memkv-[0-9.]*\.dist-info/entry_points\.txt' "$scratch/python.contents" ||
  fail "python3-memkv lacks the dist-info with the vllm.general_plugins entry point"
if grep -v '^\./usr/lib/python3/dist-packages/\(memkv/\|memkv-[0-9.]*\.dist-info/\)' "$scratch/python.contents"; then
  fail "python3-memkv holds the files above, outside its package directory"
fi
# The library packages' relations.
lib_depends=$(dpkg-deb --field "$lib_deb" Depends)
for lib in libc6 libstdc++6 libssl3; do
  case "$lib_depends" in *"$lib"*) ;; *) fail "libmemkv0 Depends lacks $lib: $lib_depends" ;; esac
done
# The library links xxhash in, reads its config without yaml-cpp and loads
# libibverbs at run time, and publishes no block events (libzmq, msgpack-c):
# none of them is a dependency.
for lib in libyaml-cpp libxxhash libibverbs libzmq libmsgpack; do
  case "$lib_depends" in *"$lib"*) fail "libmemkv0 Depends names $lib: $lib_depends" ;; esac
done
dpkg-deb --control "$lib_deb" "$scratch/lib-control"
grep -q "^libmemkv 0 libmemkv0 (= $version)" "$scratch/lib-control/shlibs" || fail "libmemkv0 has no shlibs entry"
for pkg in "$dev_deb" "$py_deb"; do
  case "$(dpkg-deb --field "$pkg" Depends)" in
    *"libmemkv0 (= $version)"*) ;;
    *) fail "$(basename "$pkg") does not depend on libmemkv0 (= $version)" ;;
  esac
done
grep -q '^-rwxr-xr-x root/root .* \./usr/bin/memkv$' "$scratch/contents" || fail "/usr/bin/memkv is not root-owned 0755"
grep -q '^-rw-r--r-- root/root .* \./etc/memkv/config.yaml$' "$scratch/contents" ||
  fail "/etc/memkv/config.yaml is not root-owned 0644"

# --- 3. Extract; the binary and the shipped config --------------------------
root="$scratch/root"
dpkg -x "$deb" "$root"
memkv="$root/usr/bin/memkv"
# (readelf into files, not into grep -q: with pipefail an early grep exit
# would make readelf's SIGPIPE decide the result.)
readelf -S "$memkv" >"$scratch/sections"
if grep -q '\.debug_info' "$scratch/sections"; then fail "packaged memkv still has debug info"; fi
dpkg -x "$ddeb" "$scratch/dbgsym"
build_id=$(readelf -n "$memkv" | awk '/Build ID:/ { print $3 }')
[ -n "$build_id" ] || fail "packaged memkv has no build ID"
debug_file="$scratch/dbgsym/usr/lib/debug/.build-id/${build_id:0:2}/${build_id:2}.debug"
[ -f "$debug_file" ] || fail "the .ddeb lacks $debug_file"
readelf -S "$debug_file" >"$scratch/debug-sections" 2>/dev/null || true
grep -q '\.debug_info' "$scratch/debug-sections" || fail "$debug_file has no .debug_info"

version_line=$("$memkv" --version)
case "$version_line" in
  "memkv $version "*) log "packaged binary: $version_line" ;;
  *) fail "memkv --version printed '$version_line', package version is $version" ;;
esac
# Same bytes apart from the stripped debug info: it is the build's memkv.
[ "$("$build_dir/memkv" --version)" = "$version_line" ] || fail "build and packaged memkv disagree on --version"

"$memkv" start --check --config "$root/etc/memkv/config.yaml" --data-dir "$scratch/check-data" >"$scratch/check.out" ||
  fail "memkv start --check rejects the packaged config: $(cat "$scratch/check.out")"
grep -qx 'storage.mode: file' "$scratch/check.out" || fail "packaged config is not storage.mode file"
grep -qx 'storage.drive: /var/lib/memkv/drive0.memkv' "$scratch/check.out" || fail "packaged drive is not under /var/lib/memkv"
[ ! -e "$scratch/check-data" ] || fail "--check created $scratch/check-data"

# --- 4. The unit ----------------------------------------------------------
unit="$root/lib/systemd/system/memkv.service"
grep -qx 'ExecStart=/usr/bin/memkv start --config /etc/memkv/config.yaml --data-dir /var/lib/memkv' "$unit" ||
  fail "memkv.service has an unexpected ExecStart"
for setting in Restart=on-failure DynamicUser=yes StateDirectory=memkv LimitMEMLOCK=infinity LimitNOFILE=1048576 \
  KillSignal=SIGTERM; do
  grep -qx "$setting" "$unit" || fail "memkv.service lacks $setting"
done
if grep -Eq '^(PrivateDevices=(yes|true|1)|DeviceAllow=|ProtectClock=(yes|true|1)|ProcSubset=pid)' "$unit"; then
  fail "memkv.service cuts off /dev/infiniband, raw drives or /proc (PrivateDevices, DeviceAllow, ProtectClock, ProcSubset)"
fi
if command -v systemd-analyze >/dev/null; then
  # verify wants ExecStart's binary to exist: a copy pointing at the scratch one.
  mkdir -p "$scratch/unit"
  sed "s|^ExecStart=/usr/bin/memkv |ExecStart=$memkv |" "$unit" >"$scratch/unit/memkv.service"
  if ! systemd-analyze verify --man=no "$scratch/unit/memkv.service" >"$scratch/verify.log" 2>&1; then
    cat "$scratch/verify.log" >&2
    fail "systemd-analyze verify rejects memkv.service"
  fi
  if grep -i 'memkv.service' "$scratch/verify.log"; then fail "systemd-analyze verify warns about memkv.service"; fi
  log "systemd-analyze verify: ok"
else
  log "systemd-analyze not found: skipping the unit's verification"
fi

# --- 5. Serve with the packaged config, rewritten to scratch paths ---------
data="$root/var/lib/memkv"
mkdir -p -m 0700 "$data"
config="$scratch/config.yaml"
# No RDMA (a device name no host has): on a host with a NIC the pool would
# otherwise be pinned and need free hugepages. The client says tcp to match.
sed -e 's|^  address: 127\.0\.0\.1:9900$|  address: 127.0.0.1:0|' \
  -e 's|^  max_size: .*$|  max_size: 64 MiB|' \
  -e "s|media: /var/lib/memkv/drive0.memkv, size: [^}]*}|media: $data/drive0.memkv, size: 256 MiB}|" \
  "$root/etc/memkv/config.yaml" >"$config"
printf 'rdma:\n  device: memkv-package-test-none\n' >>"$config"
for want in '  address: 127.0.0.1:0' '  max_size: 64 MiB' "    - {media: $data/drive0.memkv, size: 256 MiB}"; do
  grep -qxF -- "$want" "$config" || fail "rewriting the packaged config did not produce '$want' (has its layout changed?)"
done
export HOME="$scratch/home" # nothing may fall back to ~/.memkv
mkdir -p "$HOME"

# start_server LOG: starts the packaged server, sets server_pid and port.
start_server() {
  local out="$scratch/$1.stdout" err="$scratch/$1.stderr"
  : >"$out" # exists before the first poll, whenever the child opens it
  "$memkv" start --config "$config" --data-dir "$data" >"$out" 2>"$err" &
  server_pid=$!
  local deadline=$((SECONDS + 60))
  until grep -q '^ready ' "$out"; do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      cat "$err" >&2
      fail "memkv start exited before it was ready"
    fi
    if [ $SECONDS -ge $deadline ]; then
      cat "$err" >&2
      fail "memkv start not ready within 60 s"
    fi
    sleep 0.1 # poll interval; the deadline above bounds the wait
  done
  port=$(sed -n 's/^ready 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out")
  [ -n "$port" ] || fail "cannot read the port from '$(cat "$out")'"
  log "server ready on 127.0.0.1:$port (pid $server_pid)"
}

# stop_server LOG: SIGTERM, and the exit code must be 0 within 30 s.
stop_server() {
  kill -TERM "$server_pid"
  local deadline=$((SECONDS + 30))
  while kill -0 "$server_pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      cat "$scratch/$1.stderr" >&2
      fail "memkv did not exit within 30 s of SIGTERM"
    fi
    sleep 0.1 # poll interval; the deadline above bounds the wait
  done
  local rc=0
  wait "$server_pid" || rc=$?
  server_pid=""
  if [ $rc -ne 0 ]; then
    cat "$scratch/$1.stderr" >&2
    fail "memkv exited $rc after SIGTERM, want 0"
  fi
  log "server stopped by SIGTERM, exit 0"
}

client() {
  MEMKV_SERVERS="127.0.0.1:$port" MEMKV_AUTH_KEY="$(cat "$data/auth.key")" MEMKV_TRANSPORT=tcp "$memkv" "$@"
}

start_server first
[ -f "$data/auth.key" ] || fail "no $data/auth.key after the first start"
[ "$(stat -c %a "$data/auth.key")" = 600 ] || fail "$data/auth.key has mode $(stat -c %a "$data/auth.key"), want 600"
head -c $((3 * 1024 * 1024 + 123)) /dev/urandom >"$scratch/value.in"
client put package-test-key "$scratch/value.in" || fail "memkv put failed (exit $?)"
client get package-test-key -o "$scratch/value.out" || fail "memkv get failed (exit $?)"
cmp -s "$scratch/value.in" "$scratch/value.out" || fail "memkv get returned other bytes than were put"
log "put and get of $(stat -c %s "$scratch/value.in") bytes: ok"
stop_server first

drive="$data/drive0.memkv"
[ -f "$drive" ] || fail "the drive file $drive was not created"
[ "$(stat -c %s "$drive")" = $((256 * 1024 * 1024)) ] || fail "$drive is $(stat -c %s "$drive") bytes, want 256 MiB"
grep -q 'creating 1 drive file' "$scratch/first.stderr" || fail "the first start did not log creating the drive file"

# A restart (what systemd's Restart= or an upgrade does) re-adopts the drive
# file and the key: the value comes back from the drive tier.
key_before=$(cat "$data/auth.key")
start_server second
[ "$(cat "$data/auth.key")" = "$key_before" ] || fail "the second start replaced auth.key"
grep -q 'creating 1 drive file' "$scratch/second.stderr" && fail "the second start created the drive file again"
client get package-test-key -o "$scratch/value.again" || fail "memkv get after restart failed (exit $?)"
cmp -s "$scratch/value.in" "$scratch/value.again" || fail "the value read after a restart differs"

# The library packages, unpacked beside the server's: a C program built with
# the -dev package's pkg-config file, and the Python package, read the value.
for pkg in "$lib_deb" "$dev_deb" "$py_deb"; do dpkg -x "$pkg" "$root"; done
key_hex=$(cat "$data/auth.key")
flags=$(PKG_CONFIG_PATH="$root/usr/$libdir/pkgconfig" pkg-config --cflags --libs memkv) ||
  fail "pkg-config cannot read the packaged memkv.pc"
# shellcheck disable=SC2086  # the flags are words
cc -std=c11 -Wall -Werror "$source_dir/tests/install/app.c" $flags -Wl,-rpath,"$root/usr/$libdir" \
  -o "$scratch/c-app" || fail "building a C program against libmemkv-dev failed"
"$scratch/c-app" "127.0.0.1:$port" "$key_hex" >/dev/null || fail "the C program built against libmemkv-dev failed"
PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 - "127.0.0.1:$port" "$key_hex" \
  "$scratch/value.in" "$root" <<'EOF' || fail "python3-memkv could not read the value"
import sys
import memkv
assert memkv.__file__.startswith(sys.argv[4]), memkv.__file__
with memkv.Client(servers=[sys.argv[1]], auth_key=sys.argv[2], transport="tcp") as c:
    with open(sys.argv[3], "rb") as f:
        assert c.get("package-test-key") == f.read()
EOF
log "libmemkv-dev (C, pkg-config) and python3-memkv read the value"
stop_server second

log "PASS in $((SECONDS - started)) s"

#!/usr/bin/env bash
# The Python wheel end to end, as an engine user meets it:
#   1. pip wheel . --no-build-isolation --no-deps (no package index), through
#      pyproject.toml's backend; the wheel's tag and contents;
#   2. every shared object's DT_NEEDED against the allowed list (glibc with
#      its libresolv, for the client's DNS discovery,
#      libstdc++, libgcc, libcrypto 3, and libmemkv.so.0 inside the wheel),
#      RUNPATH $ORIGIN only;
#   3. a fresh `python3 -m venv` (no system site packages) gets the wheel with
#      pip --no-index; venv_check.py imports memkv there, round-trips values
#      through a real server and finds the vllm.general_plugins entry point;
#   4. the same with libibverbs.so.1 hidden (a private mount namespace binds
#      /dev/null over it): memkv imports and serves over TCP;
#   5. an interpreter the extension was not built for gets an ImportError
#      naming both Pythons;
#   6. the sdist carries what a build needs.
# Usage: wheel_test.sh BUILD_DIR (where the memkv binary is). Keeps its wheel
# build tree in BUILD_DIR/wheel-build, so a second run only relinks.
set -euo pipefail
build="$(cd "$1" && pwd)"
root="$(cd "$(dirname "$0")/../.." && pwd)"
python=/usr/bin/python3
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1

fail() { echo "wheel_test: FAIL: $*" >&2; exit 1; }

echo "== 1. pip wheel"
"$python" -m pip wheel "$root" --no-build-isolation --no-deps -w "$work/dist" \
  --config-settings "build-dir=$build/wheel-build" >"$work/pip-wheel.log" 2>&1 \
  || { tail -40 "$work/pip-wheel.log"; fail "pip wheel failed"; }
wheels=("$work"/dist/memkv-*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || fail "expected one wheel in $work/dist: ${wheels[*]}"
wheel="${wheels[0]}"
tag="$("$python" -c 'import sys,sysconfig; v=sys.version_info; p=sysconfig.get_platform().replace("-","_").replace(".","_"); print(f"cp{v.major}{v.minor}-cp{v.major}{v.minor}-{p}")')"
case "$(basename "$wheel")" in
  memkv-*-"$tag".whl) ;;
  *) fail "wheel $(basename "$wheel") is not tagged $tag" ;;
esac
echo "wheel: $(basename "$wheel"), $(stat -c %s "$wheel") bytes"
mkdir "$work/unpacked"
"$python" - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = z.namelist()
    z.extractall(dest)
    dist = [n.split("/")[0] for n in names if n.endswith(".dist-info/WHEEL")][0]
    entry = z.read(f"{dist}/entry_points.txt").decode()
    meta = z.read(f"{dist}/METADATA").decode()
need = ["memkv/__init__.py", "memkv/libmemkv.so.0", "memkv/adapters/vllm.py", "memkv/adapters/sglang.py",
        "memkv/adapters/lmcache.py", "memkv/llama_cpp/__init__.py", "memkv/llama_cpp/server.py", "memkv/py.typed",
        f"{dist}/RECORD"]
missing = [n for n in need if n not in names]
assert not missing, f"wheel lacks {missing}"
assert any(n.startswith("memkv/_memkv.") and n.endswith(".so") for n in names), "wheel lacks the extension"
assert "[vllm.general_plugins]" in entry and "memkv = memkv.adapters.vllm:register" in entry, entry
assert "Requires-Python: >=3.9" in meta, meta
print(f"contents: {len(names)} files, entry point and metadata present")
PY

echo "== 2. DT_NEEDED and RUNPATH"
allowed=" libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libresolv.so.2 ld-linux-x86-64.so.2 libstdc++.so.6 libgcc_s.so.1 libcrypto.so.3 libmemkv.so.0 "
for so in "$work"/unpacked/memkv/*.so*; do
  needed="$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  echo "$(basename "$so"): $needed"
  for lib in $needed; do
    case "$allowed" in *" $lib "*) ;; *) fail "$(basename "$so") needs $lib (allowed:$allowed)" ;; esac
  done
  runpath="$(readelf -d "$so" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')"
  [ -z "$runpath" ] || [ "$runpath" = '$ORIGIN' ] || fail "$(basename "$so") has RUNPATH '$runpath' (allowed: \$ORIGIN)"
done

echo "== 3. a fresh venv, pip install --no-index, a real server"
"$python" -m venv "$work/venv"
grep -q 'include-system-site-packages = false' "$work/venv/pyvenv.cfg" || fail "venv sees system site packages"
"$work/venv/bin/python" -m pip install --no-index "$wheel" >"$work/pip-install.log" 2>&1 \
  || { cat "$work/pip-install.log"; fail "pip install of the wheel failed"; }
# Nothing from the build tree: no PYTHONPATH, and run from outside the source.
(cd "$work" && env -u PYTHONPATH "$work/venv/bin/python" "$root/tests/wheel/venv_check.py" "$build/memkv" with-verbs)

echo "== 4. the same without libibverbs.so.1"
verbs="$(ldconfig -p | sed -n 's/.*libibverbs\.so\.1 (libc6,x86-64) => \(.*\)/\1/p' | head -1)"
if [ -z "$verbs" ]; then
  echo "libibverbs.so.1 is not installed on this host: step 3 already ran without it"
else
  command -v unshare >/dev/null || fail "unshare (util-linux) is needed to hide $verbs"
  (cd "$work" && env -u PYTHONPATH unshare --mount --propagation private -- bash -c \
    'mount --bind /dev/null "$1" && exec "$2" "$3" "$4" without-verbs' _ \
    "$(readlink -f "$verbs")" "$work/venv/bin/python" "$root/tests/wheel/venv_check.py" "$build/memkv")
fi

echo "== 5. another Python gets a clear ImportError"
other="$work/other/memkv"
mkdir -p "$work/other"
cp -r "$work/unpacked/memkv" "$other"
ext="$(basename "$other"/_memkv.*.so)"
mv "$other/$ext" "$other/_memkv.cpython-399-x86_64-linux-gnu.so"
out="$(cd "$work" && PYTHONPATH="$work/other" "$python" -c 'import memkv' 2>&1 || true)"
version="$("$python" -c 'import sys; print(f"Python {sys.version_info.major}.{sys.version_info.minor}")')"
case "$out" in
  *"built for another Python"*"_memkv.cpython-399-x86_64-linux-gnu.so"*"$version"*) echo "ok: ${out##*ImportError: }" ;;
  *) echo "$out"; fail "the ImportError does not name both Pythons" ;;
esac

echo "== 6. the sdist"
"$python" - "$root" "$work/sdist" <<'PY'
import os, sys, tarfile
root, dest = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "python", "build_backend"))
import memkv_build
name = memkv_build.build_sdist(dest)
with tarfile.open(os.path.join(dest, name)) as t:
    names = set(t.getnames())
base = name[:-len(".tar.gz")]
need = ["pyproject.toml", "PKG-INFO", "CMakeLists.txt", "python/build_backend/memkv_build.py",
        "python/CMakeLists.txt", "src/client/client.cc", "src/verbs/ibverbs_api.cc", "include/memkv/client.h"]
missing = [n for n in need if f"{base}/{n}" not in names]
assert not missing, f"sdist lacks {missing}"
print(f"sdist: {name}, {len(names)} files")
PY
echo "wheel_test: all steps passed"

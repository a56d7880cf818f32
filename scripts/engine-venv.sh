#!/usr/bin/env bash
# A virtualenv of an engine's released packages, for the engine tests and
# benchmarks, cached between runs on one machine.
#
#   scripts/engine-venv.sh NAME            build (or find) the venv; prints its path
#   scripts/engine-venv.sh --bump NAME     re-resolve tests/engines/NAME/requirements.in
#                                          and rewrite its requirements.lock
#
# NAME is a folder of tests/engines (llama_cpp, lmcache, vllm, sglang, nixl). The venv is made from
# Debian's /usr/bin/python3, the interpreter the build's memkv module is built
# for, so PYTHONPATH=build/python imports memkv in it. It holds exactly the
# lock's packages (pip --no-deps) and lives in
# ${MEMKV_ENGINE_VENVS:-~/.cache/memkv/engine-venvs}/NAME-<lock digest>: a
# bumped lock makes a new one. Packages that compile (llama-cpp-python builds
# llama.cpp) are built once, here, for this machine's CPU.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python=/usr/bin/python3

usage() { echo "usage: scripts/engine-venv.sh [--bump] NAME (a folder of tests/engines)" >&2; exit 2; }
bump=0
if [ "${1:-}" = "--bump" ]; then bump=1; shift; fi
[ $# -eq 1 ] || usage
name="$1"
dir="$root/tests/engines/$name"
[ -f "$dir/requirements.in" ] || { echo "engine-venv: no $dir/requirements.in" >&2; usage; }
"$python" -m venv --help >/dev/null 2>&1 || bash "$root/scripts/install-deps.sh"

# The requirements.in lines, split by the "# no-deps" marker.
with_deps=(); without_deps=()
while IFS= read -r line; do
  spec="${line%%#*}"; spec="$(echo "$spec" | xargs)"
  [ -n "$spec" ] || continue
  if [[ "$line" == *"# no-deps"* ]]; then without_deps+=("$spec"); else with_deps+=("$spec"); fi
done <"$dir/requirements.in"

export PIP_DISABLE_PIP_VERSION_CHECK=1
# llama.cpp's multimodal library is not needed: leave it out of the build.
# Nor its AMX kernels: built for this machine's CPU (-march=native), a VM
# whose CPU reports AMX while its hypervisor does not run tile instructions
# (Sapphire Rapids guests) crashes on the first ldtilecfg, in every decode.
# The -mno-amx flags stand against -march=native whatever their order.
# (x86 flags: other machines get none.)
build_args="-DLLAVA_BUILD=OFF"
if [ "$(uname -m)" = x86_64 ]; then
  no_amx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  build_args="$build_args '-DCMAKE_C_FLAGS=$no_amx' '-DCMAKE_CXX_FLAGS=$no_amx'"
fi
export CMAKE_ARGS="${CMAKE_ARGS:-$build_args}"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"

if [ "$bump" = 1 ]; then
  work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
  "$python" -m venv "$work/venv"
  "$work/venv/bin/pip" install -q "${with_deps[@]}" >&2
  [ ${#without_deps[@]} -eq 0 ] || "$work/venv/bin/pip" install -q --no-deps "${without_deps[@]}" >&2
  { echo "# Pinned from requirements.in on $(date -u +%F) with $("$python" --version) (scripts/engine-venv.sh --bump $name"
    echo "# rewrites this file); installed with pip --no-deps: every dependency is listed."
    "$work/venv/bin/pip" freeze --all | grep -vE '^(pip|setuptools|wheel)=='; } >"$dir/requirements.lock"
  echo "engine-venv: wrote $dir/requirements.lock" >&2
  exit 0
fi

lock="$dir/requirements.lock"
[ -f "$lock" ] || { echo "engine-venv: no $lock: run scripts/engine-venv.sh --bump $name" >&2; exit 1; }
# The venv is named by the pins (not the comments), the interpreter, the
# machine and the flags that packages which compile are built with.
digest="$( (grep -v '^#' "$lock"; "$python" --version; uname -m; echo "$CMAKE_ARGS") | sha256sum | cut -c1-12)"
venvs="${MEMKV_ENGINE_VENVS:-$HOME/.cache/memkv/engine-venvs}"
venv="$venvs/$name-$digest"
if [ -f "$venv/.complete" ]; then echo "$venv"; exit 0; fi

mkdir -p "$venvs"
exec 9>"$venvs/.$name.lock"
flock 9  # one build at a time; a second caller waits and finds it done
if [ ! -f "$venv/.complete" ]; then
  echo "engine-venv: building $venv from $lock (a package that compiles, as llama.cpp does, takes minutes)" >&2
  start=$SECONDS
  rm -rf "$venv"  # what an interrupted build left
  "$python" -m venv "$venv"
  # --no-cache-dir: pip's cache keeps wheels it built by the sdist alone, so
  # a wheel built with other CMAKE_ARGS would come back from it.
  if ! "$venv/bin/pip" install -q --no-cache-dir --no-deps -r "$lock" >"$venvs/$name-build.log" 2>&1; then
    tail -40 "$venvs/$name-build.log" >&2
    echo "engine-venv: pip install -r $lock failed (log: $venvs/$name-build.log)" >&2
    exit 1
  fi
  touch "$venv/.complete"
  echo "engine-venv: built $venv in $((SECONDS - start)) s" >&2
fi
echo "$venv"

#!/usr/bin/env bash
# The two quick-start commands (README):
#   scripts/dev.sh start [memkv start options]   build, then run a server
#   scripts/dev.sh test                          check the layering and the docs, build
#                                                (and the library again with clang's
#                                                lock checks), then run every test (unit and
#                                                integration, the Soft-RoCE stage, then
#                                                again under ASan+UBSan)
# Both install missing Debian packages first (scripts/install-deps.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

jobs="$(nproc)"

configure() {  # dir, extra cmake args...
  local dir="$1"; shift
  cmake -S . -B "$dir" -G Ninja -DMEMKV_WERROR=ON "$@" >/dev/null
}

configure_and_build() {  # dir, extra cmake args...
  configure "$@"
  cmake --build "$1" -j "$jobs"
}

# ctest in build dir $1 (more ctest args after it). When a test fails, the
# failed ones run again, one at a time, so that their output closes the log
# (a failure mid-run scrolls away under the passes that follow); the stage
# fails whatever the second run says.
run_ctest() {  # dir, extra ctest args...
  local dir="$1"; shift
  if (cd "$dir" && ctest --output-on-failure -j "$jobs" "$@"); then return 0; fi
  echo "== failed tests of $dir, again one at a time:"
  # By name: ctest's --rerun-failed goes by test number, and a rerun has
  # been seen to number the tests differently and run a test that passed.
  local names
  names="$(sed -n 's/^[0-9]*://p' "$dir/Testing/Temporary/LastTestsFailed.log" 2>/dev/null |
    sed 's/[][\\.^$*+?(){}|]/\\&/g' | paste -sd'|')" || true
  [ -z "$names" ] || (cd "$dir" && ctest --output-on-failure -j 1 -R "^($names)\$") || true
  return 1
}

# Runs a stage (a name, then a command) and prints how long it took and the
# disk left where the builds and the tests' files go; the test command's
# stages add up to the run's time (CI keeps it under 60 min).
stage() {  # name, command...
  local name="$1"; shift
  local start=$SECONDS
  echo "== stage: $name"
  local status=0
  "$@" || status=$?
  echo "== stage: $name: $((SECONDS - start)) s$([ $status -eq 0 ] || echo ", FAILED ($status)"); free: $(free_disk)"
  return $status
}

# "here 40G, /tmp 7.5G": the free space of the checkout's and $TMPDIR's file systems.
free_disk() {
  echo "here $(df -h --output=avail . | tail -1 | tr -d ' '), ${TMPDIR:-/tmp} $(df -h --output=avail "${TMPDIR:-/tmp}" | tail -1 | tr -d ' ')"
}

# The locks checked by the compiler (docs/threads.md): the library, the
# memkv executable and the plugins built with clang and -Wthread-safety
# (MEMKV_THREAD_SAFETY). No tests or benchmarks: the analysis is about the
# library's own locks, and the stage stays a few minutes. -Werror, as in
# GCC's build: any clang warning fails the stage, thread-safety or not.
thread_safety_build() {  # dir
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMEMKV_WERROR=ON \
    -DMEMKV_THREAD_SAFETY=ON >/dev/null
  cmake --build "$1" -j "$jobs" --target memkv memkv_shared memkv_kv_store memkv_preload memkv_nixl_core \
    memkv_verbs_fake
}

# Waits for the engine venvs made in the background; prints what they printed.
wait_for_venvs() {
  local status=0
  wait "$venvs_pid" || status=$?
  cat "$venvs_log"
  return $status
}

cmd="${1:-}"
shift || true
case "$cmd" in
  start)
    bash scripts/install-deps.sh
    configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cmake --build build -j "$jobs" --target memkv
    exec build/memkv start "$@"
    ;;
  test)
    stage "install dependencies" bash scripts/install-deps.sh
    stage "check layers" bash scripts/check-layers.sh
    stage "check docs" bash scripts/check-docs.sh
    # The engines' released packages (tests/engines): a venv each, cached on
    # this machine. Those pip only installs (downloads, mostly) are made while
    # the build compiles; llama-cpp-python's, which compiles llama.cpp, after it.
    venvs_log="$(mktemp)"
    (for name in lmcache lmcache_prev vllm vllm_prev sglang sglang_prev nixl; do
       venv="$(bash scripts/engine-venv.sh "$name")" || exit 1
       echo "engine venv $name: $venv"
     done) >"$venvs_log" 2>&1 &
    venvs_pid=$!
    trap 'kill "$venvs_pid" 2>/dev/null || true' EXIT
    stage "build" configure_and_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    stage "thread-safety build (clang)" thread_safety_build build-clang
    stage "engine venv llama_cpp" bash scripts/engine-venv.sh llama_cpp
    stage "engine venvs of lmcache, vllm, sglang, nixl (made during the build)" wait_for_venvs
    # install-deps.sh installed promtool: its checks must run, not skip.
    export MEMKV_REQUIRE_PROMTOOL=1
    stage "tests" run_ctest build
    if [ "${MEMKV_SKIP_RDMA_STAGE:-0}" != "1" ]; then
      echo "== RDMA on real Soft-RoCE: two QEMU guests joined by a frame switch (tests/rdma/README.md)"
      stage "RDMA on Soft-RoCE" bash tests/rdma/stage.sh build
    fi
    if [ "${MEMKV_SKIP_SANITIZERS:-0}" != "1" ]; then
      # Not the Python tests: Debian's python3 cannot load an ASan-built module
      # unless the ASan runtime is preloaded into the interpreter; nor the
      # preload shim's end-to-end test, for the same reason with cp and cat.
      # Nor the flood test of the unauthenticated limit: it asserts that a
      # client answering at once is never shed, and the sanitizers slow the
      # server's side of that race (it runs in the stage above).
      echo "== tests again under AddressSanitizer + UndefinedBehaviorSanitizer"
      stage "sanitizer build" configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug -DMEMKV_SANITIZE=address,undefined
      stage "sanitizer tests" run_ctest build-asan -LE 'slow|package|python|preload|engine' \
        -E 'FloodOfKeylessConnectionsNeverLocksOutAPromptClient'
    fi
    echo "== all stages passed in $SECONDS s"
    ;;
  *)
    echo "usage: scripts/dev.sh start [options] | scripts/dev.sh test" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# The two quick-start commands (README):
#   scripts/dev.sh start [memkv start options]   build, then run a server
#   scripts/dev.sh test                          check the layering and the docs, build,
#                                                then run every test (unit and
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
  (cd "$dir" && ctest --rerun-failed --output-on-failure -j 1) || true
  return 1
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
    bash scripts/install-deps.sh
    bash scripts/check-layers.sh
    bash scripts/check-docs.sh
    configure_and_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo
    # install-deps.sh installed promtool: its checks must run, not skip.
    export MEMKV_REQUIRE_PROMTOOL=1
    run_ctest build
    if [ "${MEMKV_SKIP_RDMA_STAGE:-0}" != "1" ]; then
      echo "== RDMA on real Soft-RoCE: two QEMU guests joined by a frame switch (tests/rdma/README.md)"
      bash tests/rdma/stage.sh build
    fi
    if [ "${MEMKV_SKIP_SANITIZERS:-0}" != "1" ]; then
      # Not the Python tests: Debian's python3 cannot load an ASan-built module
      # unless the ASan runtime is preloaded into the interpreter; nor the
      # preload shim's end-to-end test, for the same reason with cp and cat.
      echo "== tests again under AddressSanitizer + UndefinedBehaviorSanitizer"
      configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug -DMEMKV_SANITIZE=address,undefined
      run_ctest build-asan -LE 'slow|package|python|preload'
    fi
    ;;
  *)
    echo "usage: scripts/dev.sh start [options] | scripts/dev.sh test" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# CI entry of the Soft-RoCE stage (README.md here): set up the test-bed
# (packages, Debian kernel, initramfs), then run the MemKV scenarios against
# real verbs in two QEMU guest pairs, judge them, print a summary.
# usage: tests/rdma/stage.sh [BUILD_DIR]   (default: build; must hold memkv
#        and memkv-rdma-probe, and must not live under /tmp or /run)
# env:   MEMKV_RDMA_RESULTS  results (default /tmp/memkv-rdma-stage)
#        MEMKV_RDMA_CACHE    kernel, modules, initramfs (default ~/.cache/memkv-rdma)
# Exit status: 0 when every check passed.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${1:-build}"
R="${MEMKV_RDMA_RESULTS:-/tmp/memkv-rdma-stage}"
mkdir -p "$R"
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 )) s"; }

echo "== rdma stage: setup (log $R/setup.log)"
if ! "$HERE/setup.sh" > "$R/setup.log" 2>&1; then
  tail -n 30 "$R/setup.log" | sed 's/^/  | /'
  echo "FAIL setup: see $R/setup.log"
  echo "== rdma stage: FAILED at setup after $(elapsed)"
  exit 1
fi
sed 's/^/  /' "$R/setup.log"

echo "== rdma stage: MemKV scenarios (build $BUILD, results $R)"
"$HERE/memkv-scenarios.sh" --build "$BUILD" --results "$R" 2>&1 | tee "$R/checks.txt"
rc=${PIPESTATUS[0]}
pass=$(grep -c '^PASS ' "$R/checks.txt")
fail=$(grep -c '^FAIL ' "$R/checks.txt")
if [ "$rc" = 0 ] && [ "$fail" = 0 ] && [ "$pass" -gt 0 ]; then
  echo "== rdma stage: PASSED, $pass checks in $(elapsed); results in $R"
  exit 0
fi
echo "== rdma stage: FAILED, $fail of $((pass + fail)) checks failed (exit $rc) in $(elapsed); results in $R"
grep '^FAIL ' "$R/checks.txt" | sed 's/^/  /'
exit 1

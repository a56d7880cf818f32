# Helpers of the host-side scenario scripts (memkv-scenarios.sh,
# bench-scenarios.sh); sourced, bash. HERE must be tests/rdma.

# The guests mount their own /tmp, /run, /dev, /proc and /sys: a build or a
# checkout under one of them (cloned into /tmp) is invisible there.
guest_visible() { case "$1/" in /tmp/*|/run/*|/dev/*|/proc/*|/sys/*) return 1;; esac; }

# stage_for_guests WHO BUILD BINARY...: checks that BUILD holds the binaries
# and sets BUILD (absolute), BIN (the directory holding the binaries as the
# guests see it) and SCRIPTS (tests/rdma/guest). When BUILD or the checkout
# is invisible in the guests, copies the binaries and the guest scripts into
# a scratch directory of the cache they see (removed on exit). Returns 1
# (after saying why) when it cannot.
stage_for_guests() {
  local who=$1 given=$2 build cache b; shift 2
  build="$(cd "$given" 2>/dev/null && pwd)" || { echo "$who: no build directory '$given'" >&2; return 1; }
  for b in "$@"; do
    [ -x "$build/$b" ] || { echo "$who: $build/$b is missing; build it: cmake --build $build --target $*" >&2; return 1; }
  done
  BUILD="$build"
  BIN="$build"
  SCRIPTS="$HERE/guest"
  guest_visible "$build" && guest_visible "$HERE" && return 0
  cache="${MEMKV_RDMA_CACHE:-$HOME/.cache/memkv-rdma}"
  mkdir -p "$cache" && cache="$(cd "$cache" && pwd)"
  guest_visible "$cache" || cache=/var/tmp/memkv-rdma
  mkdir -p "$cache"
  BIN="$(mktemp -d "$cache/bin.XXXXXX")" || { echo "$who: cannot make a directory under $cache" >&2; return 1; }
  trap 'rm -rf "$BIN"' EXIT
  for b in "$@"; do cp "$build/$b" "$BIN/"; done
  cp -R "$HERE/guest" "$BIN/guest"
  SCRIPTS="$BIN/guest"
  echo "$who: $build or $HERE is not visible in the guests; running copies from $BIN"
}

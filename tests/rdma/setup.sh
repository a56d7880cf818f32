#!/usr/bin/env bash
# Idempotent setup of the Soft-RoCE test-bed: host packages, Debian 6.1 kernel,
# extracted modules (with deps resolved by depmod), busybox initramfs.
# Everything large lives in $MEMKV_RDMA_CACHE (default ~/.cache/memkv-rdma).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MEMKV_RDMA_CACHE:-$HOME/.cache/memkv-rdma}"
mkdir -p "$CACHE"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

# bc: run-pair.sh's timings; python3: switch.py and checks.py.
pkgs=(qemu-system-x86 busybox-static kmod rdma-core ibverbs-utils perftest cpio bc)
command -v python3 >/dev/null || pkgs+=(python3)
export DEBIAN_FRONTEND=noninteractive
updated=0
apt_update() { # once per run: CI machines may start with empty package lists
  [ $updated = 1 ] && return 0
  echo "setup: apt-get update"
  timeout 600 $SUDO apt-get update -q >/dev/null; updated=1
}
missing=()
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt_update
  echo "setup: installing ${missing[*]}"
  timeout 900 $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# Kernel package: newest linux-image-6.1.0-N-amd64 (plain flavour; has rdma_rxe).
newest_kpkg() {
  apt-cache pkgnames linux-image-6.1.0- | grep -E '^linux-image-6\.1\.0-[0-9]+-amd64$' | sort -t- -k5,5n | tail -1
}
KPKG="${MEMKV_RDMA_KPKG:-$(newest_kpkg)}"
if [ -z "$KPKG" ]; then apt_update; KPKG="$(newest_kpkg)"; fi
[ -n "$KPKG" ] || { echo "setup: no linux-image-6.1.0-*-amd64 in apt even after apt-get update (needs Debian 12's main repository)" >&2; exit 1; }
KREL="${KPKG#linux-image-}"
KDIR="$CACHE/kernel-$KREL"
if [ ! -f "$KDIR/.done" ]; then
  rm -rf "$KDIR"; mkdir -p "$KDIR/deb"
  echo "setup: downloading $KPKG"
  (cd "$KDIR/deb" && timeout 600 apt-get download -q "$KPKG" >/dev/null) ||
    { apt_update; (cd "$KDIR/deb" && timeout 600 apt-get download -q "$KPKG" >/dev/null); }
  dpkg-deb -x "$KDIR"/deb/*.deb "$KDIR/root"
  touch "$KDIR/.done"
fi
echo "$KREL" > "$CACHE/kernel-release"
ln -sfn "$KDIR" "$CACHE/kernel"
echo "setup: kernel $KREL in $KDIR"

"$HERE/mkinitramfs.sh"

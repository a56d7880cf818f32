#!/usr/bin/env bash
# Build $CACHE/initramfs.cpio.gz: busybox-static + the kernel modules needed for
# virtio-net, virtio-9p and rdma_rxe, in dependency order resolved by
# modprobe --show-depends on the extracted kernel tree (depmod -b run first).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${MEMKV_RDMA_CACHE:-$HOME/.cache/memkv-rdma}"
KREL="$(cat "$CACHE/kernel-release")"
KROOT="$CACHE/kernel/root"
OUT="$CACHE/initramfs.cpio.gz"
# modules we want; everything they depend on is added automatically
WANT=(virtio_pci virtio_net 9pnet_virtio 9p rdma_rxe crc32_generic)

stamp="$(cat "$HERE/init" "$0" | sha256sum | cut -c1-16)-$KREL"
if [ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "initramfs: up to date ($OUT)"; exit 0
fi
depmod -b "$KROOT" "$KREL"
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
mkdir -p "$W"/{bin,sbin,proc,sys,dev,host,out,tmp,lib/modules}
cp /bin/busybox "$W/bin/busybox"
for a in sh mount umount insmod mkdir ip cat echo sleep poweroff chroot ls dmesg grep sync mknod date uname cut tr hostname; do
  ln -s busybox "$W/bin/$a"
done
: > "$W/modules.order"
for m in "${WANT[@]}"; do
  modprobe -d "$KROOT" -S "$KREL" --show-depends "$m" | while read -r kw path _; do
    [ "$kw" = insmod ] || continue
    b="$(basename "$path")"
    if ! grep -qx "$b" "$W/modules.order"; then
      cp "$path" "$W/lib/modules/$b"
      echo "$b" >> "$W/modules.order"
    fi
  done
done
echo "initramfs: modules: $(tr '\n' ' ' < "$W/modules.order")"
cp "$HERE/init" "$W/init"; chmod +x "$W/init"
(cd "$W" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"; echo "$stamp" > "$OUT.stamp"
echo "initramfs: built $OUT ($(du -h "$OUT" | cut -f1))"

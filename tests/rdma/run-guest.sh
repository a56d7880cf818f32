#!/usr/bin/env bash
# Boot one Soft-RoCE guest under TCG and wait for it to power off.
# usage: run-guest.sh OUTDIR NAME IP/PREFIX MTU MAC PORT|none [TIMEOUT_S]
# OUTDIR must contain cmd.sh; the guest writes log, rc, dmesg, ready_uptime
# there, and QEMU's serial console goes to OUTDIR/console.log.
# MEMKV_RDMA_PAIR_DIR, when set, is shared writable (uncached) at /run/pair in
# the guest: the two guests of a pair signal each other with files there.
set -euo pipefail
CACHE="${MEMKV_RDMA_CACHE:-$HOME/.cache/memkv-rdma}"
OUT="$(cd "$1" && pwd)"; NAME="$2"; IP="$3"; MTU="$4"; MAC="$5"; PORT="$6"; TMO="${7:-240}"
KREL="$(cat "$CACHE/kernel-release")"
# event_idx=off: with virtio's event-index notification suppression, a busy
# host stalls a guest's transmit queue for good within a minute or two
# (tests/rdma/README.md, "When the emulated NIC stalls"); without it, in none
# of 5 boots under the same load.
NET=(-netdev socket,id=n0,connect=127.0.0.1:$PORT -device virtio-net-pci,netdev=n0,mac=$MAC,event_idx=off)
PAIR=()
[ -n "${MEMKV_RDMA_PAIR_DIR:-}" ] && PAIR=(-virtfs "local,path=$MEMKV_RDMA_PAIR_DIR,mount_tag=pair,security_model=none")
[ "$PORT" = none ] && NET=(-netdev user,id=n0,restrict=on -device virtio-net-pci,netdev=n0,mac=$MAC,event_idx=off)
exec timeout -k 5 "$TMO" qemu-system-x86_64 \
  -accel tcg,thread=multi -cpu max -m "${MEMKV_RDMA_MEM:-512}" -smp "${MEMKV_RDMA_SMP:-1}" \
  -nodefaults -no-reboot -display none -monitor none \
  -serial "file:$OUT/console.log" \
  -kernel "$CACHE/kernel/root/boot/vmlinuz-$KREL" -initrd "$CACHE/initramfs.cpio.gz" \
  -append "console=ttyS0 panic=-1 loglevel=4 memkv.name=$NAME memkv.ip=$IP memkv.mtu=$MTU" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$OUT,mount_tag=out,security_model=none" \
  "${PAIR[@]}" "${NET[@]}"

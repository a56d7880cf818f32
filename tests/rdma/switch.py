#!/usr/bin/env python3
"""Ethernet frame switch (hub) for QEMU `-netdev socket,connect=127.0.0.1:PORT`.

QEMU's stream socket netdev (net/socket.c in 7.2) sends each Ethernet frame as a
4-byte big-endian length followed by the frame (no FCS). Every frame received
from one guest is forwarded to all other connected guests unless dropped.

Options model the fabric:
  --max-frame N   drop frames whose Ethernet length (header + payload, no FCS)
                  exceeds N; 1514 models a 1500-MTU hop. TCP still crosses
                  it, as on a real fabric: the switch clamps the MSS option
                  of IPv4 TCP SYNs to fit N (what routers at such a hop do;
                  --no-clamp-mss turns it off). It sends no ICMP
                  "fragmentation needed": that would teach the guest
                  kernels a path MTU that rxe, which rides the kernel's IP
                  stack, would then obey while a hardware RNIC would not.
  --loss P        drop each frame with probability P (seeded by --seed).
  --delay-ms D    delay every forwarded frame by D ms.
  --silent-s S --silent-file F
                  a connected guest that sends no frame for S seconds
                  (each guest sends one a second, tests/rdma/init) is
                  written to F, once: "SRC-MAC SECONDS", its NIC stalled.
Counters (frames, bytes, drops, RoCEv2 packets = UDP dst port 4791 by IP
DSCP, in total and per source address) are written as JSON on SIGTERM/SIGINT to --stats (default stdout).
"""
import argparse, asyncio, json, os, random, signal, struct, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, default=0)
ap.add_argument("--port-file", help="write the listening port here")
ap.add_argument("--max-frame", type=int, default=0)
ap.add_argument("--no-clamp-mss", action="store_true")
ap.add_argument("--loss", type=float, default=0.0)
ap.add_argument("--delay-ms", type=float, default=0.0)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--stats", help="write JSON counters here at exit")
ap.add_argument("--silent-s", type=float, default=0.0)
ap.add_argument("--silent-file")
args = ap.parse_args()
rng = random.Random(args.seed)

C = {"frames": 0, "bytes": 0, "forwarded": 0, "dropped_size": 0,
     "dropped_loss": 0, "max_frame_seen": 0, "roce_v2": 0,
     "roce_v2_by_dscp": {}, "roce_v2_by_src": {}, "roce_v2_dropped_size": 0,
     "roce_v2_max_udp_payload": 0, "mss_clamped": 0, "clients": 0,
     "started": time.time()}
clients = []
heard = {}  # writer -> [source MAC of its first frame, time of its last frame]


def classify(f):
    """Return (dscp, udp_payload_len, source IP) for a RoCEv2 frame, else None."""
    if len(f) < 14:
        return None
    et = struct.unpack_from("!H", f, 12)[0]
    off = 14
    if et == 0x8100 and len(f) >= 18:           # VLAN tag
        et = struct.unpack_from("!H", f, 16)[0]; off = 18
    if et == 0x0800 and len(f) >= off + 28:
        ihl = (f[off] & 0x0F) * 4
        if f[off + 9] != 17:
            return None
        dscp = f[off + 1] >> 2
        src = ".".join(str(b) for b in f[off + 12:off + 16])
        u = off + ihl
    elif et == 0x86DD and len(f) >= off + 48:
        if f[off + 6] != 17:
            return None
        dscp = ((struct.unpack_from("!H", f, off)[0] >> 6) & 0xFF) >> 2
        src = f[off + 8:off + 24].hex()
        u = off + 40
    else:
        return None
    if len(f) < u + 8:
        return None
    dport, ulen = struct.unpack_from("!HH", f, u + 2)
    return (dscp, ulen - 8, src) if dport == 4791 else None


def checksum16(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def clamp_mss(f, limit_frame):
    """Lower the MSS option of an IPv4 TCP SYN so that segments fit in
    frames of limit_frame bytes; returns the frame (a new one if changed)."""
    if len(f) < 14 + 20 + 20 or struct.unpack_from("!H", f, 12)[0] != 0x0800:
        return f
    ip = 14
    ihl = (f[ip] & 0x0F) * 4
    if f[ip + 9] != 6:
        return f
    tcp = ip + ihl
    total = struct.unpack_from("!H", f, ip + 2)[0]
    if len(f) < tcp + 20 or not f[tcp + 13] & 0x02:  # SYN
        return f
    doff = (f[tcp + 12] >> 4) * 4
    limit = limit_frame - 14 - 20 - 20
    o = tcp + 20
    while o < tcp + doff:
        kind = f[o]
        if kind == 0:
            break
        if kind == 1:
            o += 1
            continue
        if o + 1 >= len(f) or f[o + 1] < 2:
            break
        if kind == 2 and f[o + 1] == 4 and struct.unpack_from("!H", f, o + 2)[0] > limit:
            g = bytearray(f)
            struct.pack_into("!H", g, o + 2, limit)
            struct.pack_into("!H", g, tcp + 16, 0)
            seg = bytes(g[tcp:ip + total])
            pseudo = bytes(g[ip + 12:ip + 20]) + struct.pack("!BBH", 0, 6, len(seg))
            struct.pack_into("!H", g, tcp + 16, checksum16(pseudo + seg))
            C["mss_clamped"] += 1
            return bytes(g)
        o += f[o + 1]
    return f


async def forward(src, frame):
    if args.delay_ms:
        await asyncio.sleep(args.delay_ms / 1000)
    hdr = struct.pack("!I", len(frame))
    for w in list(clients):
        if w is not src:
            try:
                w.write(hdr + frame)
            except Exception:
                pass


async def handle(reader, writer):
    clients.append(writer); C["clients"] += 1
    try:
        while True:
            hdr = await reader.readexactly(4)
            (n,) = struct.unpack("!I", hdr)
            frame = await reader.readexactly(n)
            C["frames"] += 1; C["bytes"] += n
            if writer in heard:
                heard[writer][1] = time.monotonic()
            elif n >= 12:
                heard[writer] = [frame[6:12].hex(":"), time.monotonic()]
            C["max_frame_seen"] = max(C["max_frame_seen"], n)
            r = classify(frame)
            if r is not None:
                d = str(r[0])
                C["roce_v2"] += 1
                C["roce_v2_by_dscp"][d] = C["roce_v2_by_dscp"].get(d, 0) + 1
                by_src = C["roce_v2_by_src"].setdefault(r[2], {})
                by_src[d] = by_src.get(d, 0) + 1
                C["roce_v2_max_udp_payload"] = max(C["roce_v2_max_udp_payload"], r[1])
            if args.max_frame and n > args.max_frame:
                C["dropped_size"] += 1
                if r is not None:
                    C["roce_v2_dropped_size"] += 1
                continue
            if args.loss and rng.random() < args.loss:
                C["dropped_loss"] += 1
                continue
            if args.max_frame and not args.no_clamp_mss:
                frame = clamp_mss(frame, args.max_frame)
            C["forwarded"] += 1
            if args.delay_ms:
                asyncio.ensure_future(forward(writer, frame))
            else:
                await forward(writer, frame)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        clients.remove(writer)
        heard.pop(writer, None)
        writer.close()


def dump():
    C["elapsed_s"] = round(time.time() - C.pop("started", time.time()), 3)
    s = json.dumps(C, sort_keys=True)
    if args.stats:
        with open(args.stats, "w") as fh:
            fh.write(s + "\n")
    else:
        print(s, flush=True)


def write_whole(path, text):
    """Readers see the file complete or not at all."""
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.rename(path + ".tmp", path)


async def watch_silence():
    """Name, once, the first guest that falls silent for --silent-s."""
    tick = time.monotonic()
    while True:
        await asyncio.sleep(1)
        now = time.monotonic()
        late, tick = now - tick > 2, now
        if late:
            continue  # the switch itself did not run: let it read what waits first
        for mac, last in list(heard.values()):
            if now - last >= args.silent_s:
                write_whole(args.silent_file, "%s %.0f\n" % (mac, now - last))
                return


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", args.port)
    port = srv.sockets[0].getsockname()[1]
    if args.port_file:
        write_whole(args.port_file, f"{port}\n")
    if args.silent_s and args.silent_file:
        asyncio.ensure_future(watch_silence())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    srv.close()
    dump()

asyncio.run(main())

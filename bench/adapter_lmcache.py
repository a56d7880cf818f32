#!/usr/bin/python3
"""The LMCache L2 connector against the plain Python client, same server, same run.

    PYTHONPATH=build/python /usr/bin/python3 bench/adapter_lmcache.py

Starts a memkv server (memory mode, loopback; the binary from MEMKV_BINARY or
build/memkv), then for each shape (by default 64 x 256 KiB and 16 x 4 MiB;
--shapes) alternates timed rounds of the same batches:

- adapter: memkv.adapters.lmcache.MemKVL2Connector driven as LMCache's
  NativeConnectorL2Adapter drives it: submit_batch_set / submit_batch_get
  with one memoryview per chunk (ctypes arrays over an L1-like arena, as
  MemoryObj.byte_array makes them), wait on the eventfd with poll(), then
  drain_completions();
- client: memkv.Client.batch_put_ptr / batch_get_into_ptr with the same keys
  (the adapter's namespaced ones) and the same addresses.

Store and load rounds alternate, and so does which side goes first. Prints
chunks/s and GiB/s (medians over the rounds) and the ratio adapter / client;
--json writes every round. A program, not a test: run it on a quiet machine.
"""

import argparse
import ctypes
import json
import os
import select
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import memkv
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import memkv
import memkv.testing  # noqa: E402
import numpy as np  # noqa: E402
from memkv.adapters.lmcache import MemKVL2Connector  # noqa: E402
import pybench  # noqa: E402  (bench/pybench.py, beside this script)

GiB = float(1 << 30)


class Shape:
    """One batch shape: its keys, an arena of `count` chunks and the views and addresses into it."""

    def __init__(self, connector, count, size):
        self.count, self.size = count, size
        self.keys = [f"bench-model@00000000@0@{i:064x}{size:x}" for i in range(count)]
        self.memkv_keys = [connector.key_of(k) for k in self.keys]
        self.arena = np.zeros((count, size), dtype=np.uint8)
        base = self.arena.ctypes.data
        self.addresses = [base + i * size for i in range(count)]
        self.views = [memoryview((ctypes.c_ubyte * size).from_address(a)) for a in self.addresses]
        self.expected = np.random.default_rng(size).integers(0, 256, (count, size), dtype=np.uint8)

    def name(self):
        unit = f"{self.size >> 20} MiB" if self.size >= 1 << 20 else f"{self.size >> 10} KiB"
        return f"{self.count} x {unit}"


def adapter_call(connector, poller, op, shape):
    submit = connector.submit_batch_set if op == "store" else connector.submit_batch_get
    fid = submit(shape.keys, shape.views)
    while True:
        if not poller.poll(10000):
            raise RuntimeError("no completion within 10 s")
        for done_id, ok, error, bools in connector.drain_completions():
            if done_id == fid:
                if not ok:
                    raise RuntimeError(f"adapter {op}: {error}")
                return


def client_call(client, op, shape):
    call = client.batch_put_ptr if op == "store" else client.batch_get_into_ptr
    r = call(shape.memkv_keys, shape.addresses, shape.size)
    if not r.ok:
        raise RuntimeError(f"client {op}: {r.messages[:1]}")


def timed(fn, millis):
    fn()  # warm
    calls = 0
    start = now = time.monotonic()
    end = start + millis / 1000.0
    while now < end:
        fn()
        calls += 1
        now = time.monotonic()
    return calls, now - start


def one_round(side, op, shape, millis, connector, poller, client):
    shape.arena[:] = shape.expected if op == "store" else 0
    if side == "adapter":
        calls, seconds = timed(lambda: adapter_call(connector, poller, op, shape), millis)
    else:
        calls, seconds = timed(lambda: client_call(client, op, shape), millis)
    if op == "load" and not np.array_equal(shape.arena, shape.expected):
        raise RuntimeError(f"{side} load returned wrong bytes")
    return {"side": side, "op": op, "calls": calls, "chunks": calls * shape.count,
            "bytes": calls * shape.count * shape.size, "seconds": seconds}


def describe(args, server):
    return {**pybench.machine(memkv.__version__), "transport": args.transport, "server": server,
            "io_threads": args.io_threads, "round_ms": args.round_ms, "rounds": args.rounds}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", default=os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv"))
    p.add_argument("--rounds", type=int, default=5, help="rounds per side, operation and shape (default 5)")
    p.add_argument("--round-ms", type=int, default=500, help="length of one round (default 500)")
    p.add_argument("--transport", default="tcp", choices=["tcp", "auto", "rdma"])
    p.add_argument("--io-threads", type=int, default=4, help="the connector's io_threads (default 4)")
    p.add_argument("--shapes", default="64x262144,16x4194304",
                   help="COUNTxBYTES,... batches (default 64x262144,16x4194304: 64 x 256 KiB, 16 x 4 MiB)")
    p.add_argument("--json", help="write every round here")
    args = p.parse_args()
    sizes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]

    server = memkv.testing.LocalServer(args.binary, memory="512 MiB").start()
    connector = client = None
    try:
        connector = MemKVL2Connector(servers=[server.address], auth_key=server.auth_key, transport=args.transport,
                                     io_threads=args.io_threads, namespace="bench")
        client = memkv.Client([server.address], server.auth_key, transport=args.transport)
        poller = select.poll()
        poller.register(connector.event_fd(), select.POLLIN)
        info = describe(args, server.address)
        for k, v in info.items():
            print(f"# {k}: {v}")
        print(f"{'shape':>12} {'op':>5} {'adapter chunks/s':>17} {'GiB/s':>6} {'client chunks/s':>16} {'GiB/s':>6}"
              f" {'adapter/client':>15}")
        report = {"info": info, "results": []}
        for count, size in sizes:
            shape = Shape(connector, count, size)
            rounds = []
            for r in range(args.rounds):
                for op in ("store", "load"):
                    sides = ("adapter", "client") if r % 2 == 0 else ("client", "adapter")
                    for side in sides:
                        rounds.append(one_round(side, op, shape, args.round_ms, connector, poller, client))
            for op in ("store", "load"):
                med = {}
                for side in ("adapter", "client"):
                    rs = [x for x in rounds if x["side"] == side and x["op"] == op]
                    med[side] = (statistics.median(x["chunks"] / x["seconds"] for x in rs),
                                 statistics.median(x["bytes"] / x["seconds"] / GiB for x in rs))
                ratio = med["adapter"][1] / med["client"][1]
                print(f"{shape.name():>12} {op:>5} {med['adapter'][0]:>17.0f} {med['adapter'][1]:>6.2f}"
                      f" {med['client'][0]:>16.0f} {med['client'][1]:>6.2f} {ratio:>15.3f}")
                report["results"].append({"count": count, "size": size, "op": op,
                                          "adapter_chunks_per_s": med["adapter"][0],
                                          "adapter_gib_per_s": med["adapter"][1],
                                          "client_chunks_per_s": med["client"][0],
                                          "client_gib_per_s": med["client"][1], "ratio": ratio})
            report["rounds"] = report.get("rounds", []) + [dict(x, count=count, size=size) for x in rounds]
            del shape
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
    finally:
        if connector is not None:
            connector.close()
        if client is not None:
            client.close()
        server.stop()


if __name__ == "__main__":
    main()

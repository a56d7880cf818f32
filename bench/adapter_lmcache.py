#!/usr/bin/python3
"""The LMCache L2 connector against the plain Python client, same server, same run.

It runs in the LMCache partner venv (tests/engines/lmcache: LMCache's
released package on the CPU build of PyTorch):

    PYTHONPATH=build/python $(bash scripts/engine-venv.sh lmcache)/bin/python bench/adapter_lmcache.py

Starts a memkv server (memory mode, loopback; the binary from MEMKV_BINARY or
build/memkv), then for each shape (by default 64 x 256 KiB and 16 x 4 MiB;
--shapes) alternates timed rounds of the same batches:

- adapter: memkv.adapters.lmcache.MemKVL2Connector inside LMCache's own
  NativeConnectorL2Adapter, built by LMCache's L2 adapter registry from the
  `native_plugin` JSON an operator passes: submit_store_task /
  submit_load_task of LMCache ObjectKeys and MemoryObjs (from LMCache's
  HostMemoryAllocator), a poll() on the adapter's store or load eventfd,
  then pop_completed_store_tasks / query_load_result (LMCache's own thread
  moves each completion from the connector to the adapter);
- client: memkv.Client.batch_put_ptr / batch_get_into_ptr with the same keys
  (the connector's namespaced ones), the same addresses and the same put
  options (each chunk's hash).

Store and load rounds alternate, and so does which side goes first. Prints
chunks/s and GiB/s (medians over the rounds) and the ratio adapter / client;
--json writes every round. A program, not a test: run it on a quiet machine.
"""

import argparse
import hashlib
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
import torch  # noqa: E402
from memkv.adapters._common import put_options  # noqa: E402
from memkv.adapters.lmcache import chunk_hash_of  # noqa: E402
from lmcache.v1.distributed.api import ObjectKey  # noqa: E402
from lmcache.v1.distributed.l2_adapters import create_l2_adapter  # noqa: E402
from lmcache.v1.distributed.l2_adapters.config import (add_l2_adapters_args,  # noqa: E402
                                                       parse_args_to_l2_adapters_config)
from lmcache.v1.distributed.l2_adapters.native_connector_l2_adapter import _object_key_to_string  # noqa: E402
from lmcache.v1.platform.event_notifier import consume_fd  # noqa: E402
try:
    from lmcache.v1.memory_allocators.host_memory_allocator import HostMemoryAllocator
except ImportError:  # LMCache 0.4 has its allocators in memory_management
    from lmcache.v1.memory_management import HostMemoryAllocator
import pybench  # noqa: E402  (bench/pybench.py, beside this script)

GiB = float(1 << 30)


class Shape:
    """One batch shape: LMCache ObjectKeys, `count` MemoryObjs of `size` bytes
    from LMCache's allocator, and the connector's keys and the objects'
    addresses for the client."""

    def __init__(self, adapter, connector, count, size):
        self.count, self.size = count, size
        self.allocator = HostMemoryAllocator(count * size + (4 << 20))
        self.keys = [ObjectKey(chunk_hash=hashlib.sha256(f"{size}/{i}".encode()).digest(), model_name="bench-model", kv_rank=0,
                               object_group_id=0) for i in range(count)]
        self.memkv_keys = [connector.key_of(_object_key_to_string(k)) for k in self.keys]
        # The same put options as the connector's stores (each chunk's hash).
        self.options = [put_options(block_hash=chunk_hash_of(_object_key_to_string(k))) for k in self.keys]
        self.objs = [self.allocator.allocate(torch.Size([size]), torch.uint8) for _ in range(count)]
        assert all(o is not None for o in self.objs), "LMCache's allocator is full"
        self.addresses = [o.tensor.data_ptr() for o in self.objs]
        gen = torch.Generator().manual_seed(size)
        self.expected = [torch.randint(0, 256, (size,), dtype=torch.uint8, generator=gen) for _ in range(count)]

    def fill(self, expected):
        for obj, want in zip(self.objs, self.expected):
            obj.tensor.copy_(want) if expected else obj.tensor.zero_()

    def holds_expected(self):
        return all(torch.equal(o.tensor, want) for o, want in zip(self.objs, self.expected))

    def release(self):
        """Gives the objects back to LMCache's allocator."""
        for obj in self.objs:
            obj.ref_count_down()

    def name(self):
        unit = f"{self.size >> 20} MiB" if self.size >= 1 << 20 else f"{self.size >> 10} KiB"
        return f"{self.count} x {unit}"


def adapter_call(adapter, pollers, op, shape):
    """One task through LMCache's adapter, to its completion."""
    task = (adapter.submit_store_task if op == "store" else adapter.submit_load_task)(shape.keys, shape.objs)
    while True:
        if not pollers[op].poll(10000):
            raise RuntimeError("no completion within 10 s")
        consume_fd(adapter.get_store_event_fd() if op == "store" else adapter.get_load_event_fd())
        if op == "store":
            done = adapter.pop_completed_store_tasks()
            if task in done:
                if done[task] < 0:
                    raise RuntimeError(f"adapter store: LMCache's result {done[task]}")
                return
        else:
            bitmap = adapter.query_load_result(task)
            if bitmap is not None:
                missing = [i for i in range(shape.count) if not bitmap.test(i)]
                if missing:
                    raise RuntimeError(f"adapter load: chunks {missing[:8]} of {shape.count} not found")
                return


def client_call(client, op, shape):
    if op == "store":
        r = client.batch_put_ptr(shape.memkv_keys, shape.addresses, shape.size, options=shape.options)
    else:
        r = client.batch_get_into_ptr(shape.memkv_keys, shape.addresses, shape.size)
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


def one_round(side, op, shape, millis, adapter, pollers, client):
    shape.fill(expected=op == "store")
    if side == "adapter":
        calls, seconds = timed(lambda: adapter_call(adapter, pollers, op, shape), millis)
    else:
        calls, seconds = timed(lambda: client_call(client, op, shape), millis)
    if op == "load" and not shape.holds_expected():
        raise RuntimeError(f"{side} load returned wrong bytes")
    return {"side": side, "op": op, "calls": calls, "chunks": calls * shape.count,
            "bytes": calls * shape.count * shape.size, "seconds": seconds}


def describe(args, server):
    return {**pybench.machine(memkv.__version__), "transport": args.transport, "server": server,
            "async_threads": args.async_threads, "round_ms": args.round_ms, "rounds": args.rounds}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", default=os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv"))
    p.add_argument("--rounds", type=int, default=5, help="rounds per side, operation and shape (default 5)")
    p.add_argument("--round-ms", type=int, default=500, help="length of one round (default 500)")
    p.add_argument("--transport", default="tcp", choices=["tcp", "auto", "rdma"])
    p.add_argument("--async-threads", type=int, default=4, help="the client's async_threads (default 4)")
    p.add_argument("--shapes", default="64x262144,16x4194304",
                   help="COUNTxBYTES,... batches (default 64x262144,16x4194304: 64 x 256 KiB, 16 x 4 MiB)")
    p.add_argument("--json", help="write every round here")
    args = p.parse_args()
    sizes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]

    server = memkv.testing.LocalServer(args.binary, memory="512 MiB").start()
    adapter = client = None
    try:
        spec = {"type": "native_plugin", "module_path": "memkv.adapters.lmcache", "class_name": "MemKVL2Connector",
                "adapter_params": {"servers": [server.address], "auth_key": server.auth_key,
                                   "transport": args.transport, "async_threads": args.async_threads,
                                   "namespace": "bench"}}
        parser = add_l2_adapters_args(argparse.ArgumentParser())
        config = parse_args_to_l2_adapters_config(parser.parse_args(["--l2-adapter", json.dumps(spec)]))
        adapter = create_l2_adapter(config.adapters[0])
        connector = adapter._client  # the MemKVL2Connector LMCache's adapter drives
        client = memkv.Client([server.address], server.auth_key, transport=args.transport)
        pollers = {"store": select.poll(), "load": select.poll()}
        pollers["store"].register(adapter.get_store_event_fd(), select.POLLIN)
        pollers["load"].register(adapter.get_load_event_fd(), select.POLLIN)
        info = describe(args, server.address)
        for k, v in info.items():
            print(f"# {k}: {v}")
        print(f"{'shape':>12} {'op':>5} {'adapter chunks/s':>17} {'GiB/s':>6} {'client chunks/s':>16} {'GiB/s':>6}"
              f" {'adapter/client':>15}")
        report = {"info": info, "results": []}
        for count, size in sizes:
            shape = Shape(adapter, connector, count, size)
            rounds = []
            for r in range(args.rounds):
                for op in ("store", "load"):
                    sides = ("adapter", "client") if r % 2 == 0 else ("client", "adapter")
                    for side in sides:
                        rounds.append(one_round(side, op, shape, args.round_ms, adapter, pollers, client))
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
            shape.release()
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
    finally:
        if adapter is not None:
            adapter.close()
        if client is not None:
            client.close()
        server.stop()


if __name__ == "__main__":
    main()

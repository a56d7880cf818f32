"""Asynchronous batches against blocking ones of the same shape, in one run.

Starts a memory-mode server on a free loopback port, stores COUNT values of
SIZE bytes per shape, then alternates rounds of:

  blocking  batch_get_into (or batch_put) in a loop on one thread;
  async     submit_get_into (or submit_put), the completion taken by waiting
            on completion_fd() with select() and poll_completions(), keeping
            DEPTH submissions in flight (depth 1: the same one-at-a-time
            shape as the blocking loop, so the difference is the handoff to
            a driver thread and back).

It prints the median GiB/s of each and the ratio async / blocking per shape
and depth; --json writes every round.

    PYTHONPATH=build/python /usr/bin/python3 bench/async_batch.py   # --shapes 64x65536 --depths 1,4
"""

import argparse
import json
import os
import select
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pybench  # noqa: E402

import memkv  # noqa: E402
import memkv.testing  # noqa: E402

REPO = pybench.REPO


def keys_of(count, size):
    return [f"async-bench/{count}x{size}/{i}" for i in range(count)]


def blocking_round(client, op, keys, bufs, millis):
    calls = 0
    end = time.monotonic() + millis / 1000
    start = time.monotonic()
    while time.monotonic() < end:
        result = client.batch_get_into(keys, bufs) if op == "get" else client.batch_put(keys, bufs)
        if not result.ok:
            raise RuntimeError(f"blocking {op} failed: {result}")
        calls += 1
    return {"calls": calls, "seconds": time.monotonic() - start}


def async_round(client, op, keys, bufs, millis, depth):
    submit = client.submit_get_into if op == "get" else client.submit_put
    fd = client.completion_fd()
    calls = in_flight = 0
    end = time.monotonic() + millis / 1000
    start = time.monotonic()
    while True:
        now = time.monotonic()
        while now < end and in_flight < depth:
            submit(keys, bufs)
            in_flight += 1
        if in_flight == 0:
            break
        select.select([fd], [], [], 1.0)
        for c in client.poll_completions():
            if not c.result.ok:
                raise RuntimeError(f"async {op} failed: {c.result}")
            calls += 1
            in_flight -= 1
    return {"calls": calls, "seconds": time.monotonic() - start}


def gib_per_s(r, count, size):
    return r["calls"] * count * size / r["seconds"] / (1 << 30)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"), help="where memkv is")
    p.add_argument("--rounds", type=int, default=5, help="rounds per mode, op and shape (default 5)")
    p.add_argument("--round-ms", type=int, default=1000, help="length of one round (default 1000)")
    p.add_argument("--shapes", default="64x65536,16x1048576",
                   help="COUNTxBYTES,... (default 64x65536,16x1048576: 64 x 64 KiB, 16 x 1 MiB)")
    p.add_argument("--depths", default="1,4", help="submissions kept in flight by the async mode (default 1,4)")
    p.add_argument("--ops", default="get,put")
    p.add_argument("--json", help="write every round here")
    args = p.parse_args()
    shapes = [tuple(int(n) for n in s.split("x")) for s in args.shapes.split(",")]
    depths = [int(d) for d in args.depths.split(",")]

    server = memkv.testing.LocalServer(os.path.join(args.build_dir, "memkv"), memory="512 MiB").start()
    try:
        client = memkv.Client([server.address], server.auth_key, transport="tcp")
        info = pybench.machine(memkv.__version__)
        info.update({"server": server.address, "transport": "tcp", "round_ms": args.round_ms, "rounds": args.rounds})
        for k, v in info.items():
            print(f"# {k}: {v}")
        print(f"{'op':>4} {'shape':>14} {'depth':>5} {'blocking GiB/s':>15} {'async GiB/s':>12} {'async/blocking':>15}")
        report = {"info": info, "results": []}
        for count, size in shapes:
            keys = keys_of(count, size)
            rng = np.random.default_rng(size)
            values = [rng.integers(0, 256, size, dtype=np.uint8) for _ in range(count)]
            if not client.batch_put(keys, values).ok:
                raise RuntimeError("batch_put failed")
            bufs = [np.empty(size, dtype=np.uint8) for _ in range(count)]
            for op in args.ops.split(","):
                data = bufs if op == "get" else values
                for depth in depths:
                    b_rounds, a_rounds = [], []
                    for _ in range(args.rounds):
                        b_rounds.append(blocking_round(client, op, keys, data, args.round_ms))
                        a_rounds.append(async_round(client, op, keys, data, args.round_ms, depth))
                    b = statistics.median(gib_per_s(r, count, size) for r in b_rounds)
                    a = statistics.median(gib_per_s(r, count, size) for r in a_rounds)
                    shape = f"{count} x {pybench.human(size)}"
                    print(f"{op:>4} {shape:>14} {depth:>5} {b:>15.3f} {a:>12.3f} {a / b:>15.3f}")
                    report["results"].append({"op": op, "count": count, "size": size, "depth": depth,
                                              "blocking_gib_per_s": b, "async_gib_per_s": a, "ratio": a / b,
                                              "blocking_rounds": b_rounds, "async_rounds": a_rounds})
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        client.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()

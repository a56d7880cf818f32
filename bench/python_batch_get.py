#!/usr/bin/python3
"""Python batch_get_into against the C++ client, same server, same run.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_batch_get.py

Starts a memkv server (memory mode, loopback) and memkv-batch-get-bench (the
C++ client through libmemkv.so), puts the values once, then for each shape
(by default 64 x 64 KiB and 8 x 2 MiB; --shapes) alternates timed rounds: C++, Python, C++, ...
Both read the same keys into buffers of their own, warm, with the same loop;
the Python side reads into numpy arrays. Prints what it ran and a table of
median GiB/s and the ratio Python / C++; --json writes every round.
A program, not a test: run it on a quiet machine.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import memkv
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import memkv
import memkv.testing  # noqa: E402
import pybench  # noqa: E402  (bench/pybench.py, beside this script)
import numpy as np  # noqa: E402

GiB = float(1 << 30)


def keys_of(count, size):
    return [f"bench/{count}x{size}/{i}" for i in range(count)]


def python_round(client, count, size, millis, expected):
    keys = keys_of(count, size)
    buffers = [np.empty(size, dtype=np.uint8) for _ in range(count)]
    client.batch_get_into(keys, buffers)  # warm-up, as the C++ side does
    calls = 0
    start = time.monotonic()
    end = start + millis / 1000.0
    now = start
    while now < end:
        r = client.batch_get_into(keys, buffers)
        if not r.ok:
            raise RuntimeError(f"batch_get_into: {r!r}")
        calls += 1
        now = time.monotonic()
    if not all(np.array_equal(b, e) for b, e in zip(buffers, expected)):
        raise RuntimeError("batch_get_into returned wrong bytes")
    return {"calls": calls, "bytes": calls * count * size, "seconds": now - start}


def cpp_round(cpp, count, size, millis):
    cpp.stdin.write(f"run {count} {size} {millis}\n")
    cpp.stdin.flush()
    result = json.loads(cpp.stdout.readline())
    if "error" in result:
        raise RuntimeError(f"memkv-batch-get-bench: {result['error']}")
    return result


def gib_per_s(r):
    return r["bytes"] / r["seconds"] / GiB


def describe(args, server):
    return {**pybench.machine(memkv.__version__), "transport": args.transport, "server": server,
            "round_ms": args.round_ms, "rounds": args.rounds}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default=os.path.join(REPO, "build"), help="where memkv and the C++ bench are")
    p.add_argument("--rounds", type=int, default=7, help="rounds per client and shape (default 7)")
    p.add_argument("--round-ms", type=int, default=1000, help="length of one round (default 1000)")
    p.add_argument("--transport", default="tcp", choices=["tcp", "auto", "rdma"])
    p.add_argument("--shapes", default="64x65536,8x2097152",
                   help="COUNTxBYTES,... batches to read (default 64x65536,8x2097152: 64 x 64 KiB, 8 x 2 MiB)")
    p.add_argument("--json", help="write every round here")
    args = p.parse_args()
    shapes = [tuple(int(n) for n in shape.split("x")) for shape in args.shapes.split(",")]

    server = memkv.testing.LocalServer(os.path.join(args.build_dir, "memkv"), memory="256 MiB").start()
    cpp = None
    try:
        client = memkv.Client([server.address], server.auth_key, transport=args.transport)
        expected = {}
        for count, size in shapes:
            rng = np.random.default_rng(size)
            expected[(count, size)] = [rng.integers(0, 256, size, dtype=np.uint8) for _ in range(count)]
            if not client.batch_put(keys_of(count, size), expected[(count, size)]).ok:
                raise RuntimeError("batch_put failed")
        cpp = subprocess.Popen(
            [os.path.join(args.build_dir, "memkv-batch-get-bench"), "--servers", server.address,
             "--auth-key", server.auth_key, "--transport", args.transport],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if cpp.stdout.readline().strip() != "ready":
            raise RuntimeError("memkv-batch-get-bench did not start")

        info = describe(args, server.address)
        for k, v in info.items():
            print(f"# {k}: {v}")
        print(f"{'shape':>14} {'C++ GiB/s':>10} {'Python GiB/s':>13} {'Python/C++':>11}")
        report = {"info": info, "shapes": []}
        for count, size in shapes:
            cpp_rounds, py_rounds = [], []
            for _ in range(args.rounds):
                cpp_rounds.append(cpp_round(cpp, count, size, args.round_ms))
                py_rounds.append(python_round(client, count, size, args.round_ms, expected[(count, size)]))
            c = statistics.median(gib_per_s(r) for r in cpp_rounds)
            py = statistics.median(gib_per_s(r) for r in py_rounds)
            shape = f"{count} x {size >> 10} KiB" if size >= 1024 else f"{count} x {size} B"
            print(f"{shape:>14} {c:>10.2f} {py:>13.2f} {py / c:>11.3f}")
            report["shapes"].append({"count": count, "size": size, "cpp_gib_per_s": c, "python_gib_per_s": py,
                                     "ratio": py / c, "cpp_rounds": cpp_rounds, "python_rounds": py_rounds})
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=1)
        client.close()
    finally:
        if cpp is not None:
            cpp.stdin.close()
            cpp.wait(30)
        server.stop()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The adapters' own Python per submission, without the transfer: what the
LMCache L2 connector does to turn a batch of LMCache key strings and
memoryviews into a client submission (keys, addresses, lengths and each
chunk's put options), and what the vLLM tier does to turn a store job's
keys into its put options. The engines' packages are not needed: the inputs
are made the way the engines make them (ctypes-backed memoryviews of the
chunks, L2 key strings "model@kv_rank%08x@group%x@hashhex", vLLM's
OffloadKeys of a 32-byte hash and a 4-byte group index).

usage: PYTHONPATH=build/python MEMKV_BINARY=build/memkv \\
         python3 bench/adapter_python_cost.py [--keys 8,64] [--calls 200] [--repeat 5]

Prints microseconds per call and per key, the best of --repeat timings of
--calls calls each (the least disturbed by the rest of a shared machine).
"""
import argparse
import ctypes
import os
import timeit

from memkv.adapters._lmcache_l2 import MemKVL2Connector
from memkv.adapters.vllm import _Job
from memkv.testing import LocalServer


def best_us(fn, calls, repeat):
    return min(timeit.repeat(fn, number=calls, repeat=repeat)) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", default="8,64", help="keys per submission, comma-separated (default 8,64)")
    ap.add_argument("--calls", type=int, default=200, help="calls per timing (default 200)")
    ap.add_argument("--repeat", type=int, default=5, help="timings; the best is shown (default 5)")
    args = ap.parse_args()
    counts = [int(n) for n in args.keys.split(",")]
    print(f"{'what':38s} {'keys':>5s} {'us/call':>9s} {'us/key':>8s}")
    with LocalServer() as server:
        connector = MemKVL2Connector(servers=server.address, auth_key=server.auth_key, transport="tcp")
        try:
            for n in counts:
                chunks = [(ctypes.c_ubyte * 4096)() for _ in range(n)]
                views = [memoryview(c) for c in chunks]
                keys = [f"bench-model@kv_rank{0:08x}@group{0:x}@{os.urandom(16).hex()}" for _ in range(n)]
                for kind in ("set", "get"):
                    us = best_us(lambda: connector._prepare(1, kind, keys, views), args.calls, args.repeat)
                    print(f"{'lmcache L2 connector, submit_batch_' + kind:38s} {n:5d} {us:9.1f} {us / n:8.2f}")
                offload_keys = [os.urandom(32) + bytes(4) for _ in range(n)]
                us = best_us(lambda: _Job(1, False, offload_keys, offload_keys, list(range(n))), args.calls,
                             args.repeat)
                print(f"{'vllm tier, a store job':38s} {n:5d} {us:9.1f} {us / n:8.2f}")
        finally:
            connector.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The vLLM tier adapter against the plain Python client, same batches, same run.

Starts a memkv server on loopback (memkv.testing.LocalServer; the binary from
MEMKV_BINARY, else build/memkv), then for each shape times, call by call in
turn (so that both run under the same conditions), for several rounds:

  adapter  MemKVTierManager, made by vLLM's SecondaryTierFactory from a
           secondary_tiers entry: submit_store / submit_load of one vLLM
           TransferJob of all the chunks (chunk_ids into a numpy-backed 2-D
           primary memoryview, as vLLM's tiering manager hands them), then
           drain_jobs() and get_finished_jobs() (every job must report
           success)
  client   memkv.Client.batch_put_ptr / batch_get_into_ptr of the same keys
           (the adapter's), the same row addresses and sizes and the same put
           options (each chunk's block hash), computed once outside the timing

and prints chunks/s and GiB/s of each, and adapter / client (the median of
the rounds). A shape is CHUNKSxBYTES: that many primary rows of BYTES each.
With CHUNKS <= batch_blocks (64 by default) a job is one MemKV batch, the
same batch the client sends.

It runs in the vLLM partner venv (tests/engines/vllm: vLLM's CPU build):

    PYTHONPATH=build/python $(bash scripts/engine-venv.sh vllm)/bin/python bench/adapter_vllm.py
    ... --aa --shapes 64x256KiB,32x2MiB --rounds 5 --seconds 0.3 --json out.json

--aa adds a control, a second plain client timed in the adapter's place:
its ratio to the client is what a zero-cost adapter scores on the machine.
"""

import argparse
import collections
import json
import os
import re
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import memkv.testing
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import memkv.testing
from memkv.adapters._common import put_options  # noqa: E402
from memkv.adapters.vllm import MemKVTierManager, block_hash_of  # noqa: E402
from vllm.v1.kv_offload.base import ReqContext  # noqa: E402
from vllm.v1.kv_offload.tiering.base import TransferJob  # noqa: E402
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory  # noqa: E402
import pybench  # noqa: E402  (bench/pybench.py, beside this script)

UNITS = pybench.UNITS


def parse_shape(text: str) -> Tuple[int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)(B|KiB|MiB|GiB)?", text.strip())
    if not m:
        raise SystemExit(f"bad shape {text!r}: want CHUNKSxBYTES, e.g. 64x256KiB")
    return int(m.group(1)), int(m.group(2)) * UNITS[m.group(3) or ""]


def interleaved(sides: List[Tuple[str, Callable[[], None]]], seconds: float) -> Dict[str, float]:
    """Calls per second of each side, calling them in turn (the order rotating
    each turn) for at least `seconds` in all and at least 3 turns, so that
    every side runs under the same conditions."""
    for _, fn in sides:  # warm
        fn()
    spent = {name: 0.0 for name, _ in sides}
    turns, start = 0, time.perf_counter()
    while True:
        k = turns % len(sides)
        for name, fn in sides[k:] + sides[:k]:
            t0 = time.perf_counter()
            fn()
            spent[name] += time.perf_counter() - t0
        turns += 1
        if time.perf_counter() - start >= seconds and turns >= 3:
            return {name: turns / t for name, t in spent.items()}


def bench_shape(server: Any, chunks: int, row_bytes: int, rounds: int, seconds: float,
                io_threads: int, aa: bool) -> Dict[str, Any]:
    src = np.random.default_rng(0).integers(0, 256, (chunks, row_bytes), dtype=np.uint8)
    dst = np.zeros_like(src)
    settings = {"servers": [server.address], "auth_key": server.auth_key, "transport": "tcp",
                "timeout_ms": 30000, "io_threads": io_threads, "namespace": "bench"}
    entry = {"type": "MemKVTierManager", "module_path": "memkv.adapters.vllm", **settings}
    writer = SecondaryTierFactory.create_secondary_tier(entry, memoryview(src), None)
    reader = SecondaryTierFactory.create_secondary_tier(entry, memoryview(dst), None)
    assert isinstance(writer, MemKVTierManager) and isinstance(reader, MemKVTierManager)
    req = ReqContext(req_id="bench")
    offload_keys = [f"{chunks}x{row_bytes}-{i:08d}".encode().ljust(36, b"\0") for i in range(chunks)]
    rows = np.arange(chunks, dtype=np.int64)
    next_id = [0]

    def run_job(tier: MemKVTierManager, load: bool) -> None:
        job = TransferJob(next_id[0], offload_keys, rows, load, req)
        next_id[0] += 1
        (tier.submit_load if load else tier.submit_store)(job)
        tier.drain_jobs()
        results = list(tier.get_finished_jobs())
        assert len(results) == 1 and results[0].success, results

    keys = [writer.memkv_key(k) for k in offload_keys]
    put_ptrs = [writer.row_address(i) for i in range(chunks)]
    get_ptrs = [reader.row_address(i) for i in range(chunks)]
    client, control = server.client(timeout_ms=30000), server.client(timeout_ms=30000)

    # The same put options as the tier's stores (each chunk's block hash).
    options = [put_options(block_hash=block_hash_of(k)) for k in offload_keys]

    def client_store(c: Any = client) -> None:
        assert c.batch_put_ptr(keys, put_ptrs, row_bytes, options=options).ok

    def client_load(c: Any = client) -> None:
        assert c.batch_get_into_ptr(keys, get_ptrs, row_bytes).ok

    run_job(writer, load=False)
    run_job(reader, load=True)
    assert np.array_equal(src, dst), "the adapter loaded other bytes than it stored"
    samples: Dict[str, List[float]] = collections.defaultdict(list)
    for r in range(rounds):
        store = [("adapter store", lambda: run_job(writer, False)), ("client store", client_store)]
        load = [("adapter load", lambda: run_job(reader, True)), ("client load", client_load)]
        if aa:  # the control: a second plain client in the adapter's place
            store.append(("control store", lambda: client_store(control)))
            load.append(("control load", lambda: client_load(control)))
        for sides in (store, load):
            for name, calls_s in interleaved(sides, seconds * len(sides)).items():
                samples[name].append(calls_s)
    writer.shutdown()
    reader.shutdown()
    client.close()
    control.close()

    out: Dict[str, Any] = {"chunks": chunks, "row_bytes": row_bytes, "rounds": rounds, "io_threads": io_threads}
    for op in ("store", "load"):
        for who in ("adapter", "client"):
            calls = statistics.median(samples[f"{who} {op}"])
            out[f"{who}_{op}_chunks_s"] = calls * chunks
            out[f"{who}_{op}_gib_s"] = calls * chunks * row_bytes / (1 << 30)
        out[f"{op}_ratio"] = out[f"adapter_{op}_gib_s"] / out[f"client_{op}_gib_s"]
        if aa:
            out[f"{op}_control_ratio"] = statistics.median(samples[f"control {op}"]) / \
                statistics.median(samples[f"client {op}"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="64x256KiB,32x2MiB", help="CHUNKSxBYTES, comma-separated")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3, help="seconds per side per operation per round")
    parser.add_argument("--io-threads", type=int, default=2, help="the adapter's io_threads")
    parser.add_argument("--memory", default="1 GiB", help="the server's memory pool")
    parser.add_argument("--aa", action="store_true",
                        help="also time a second plain client in the adapter's place: the ratio a zero-cost "
                             "adapter would score on this machine")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    shapes = [parse_shape(s) for s in args.shapes.split(",") if s.strip()]
    binary = os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv")
    results = []
    with memkv.testing.LocalServer(binary, memory=args.memory) as server:
        print(f"memkv {memkv.__version__}, server {server.address} (memory mode, loopback, TCP), "
              f"{args.rounds} rounds of {args.seconds} s per side, adapter io_threads={args.io_threads}")
        print(f"{'shape':>16} {'op':>5} {'adapter chunks/s':>17} {'GiB/s':>7} {'client chunks/s':>16} "
              f"{'GiB/s':>7} {'adapter/client':>15}" + (f" {'control':>8}" if args.aa else ""))
        for chunks, row_bytes in shapes:
            r = bench_shape(server, chunks, row_bytes, args.rounds, args.seconds, args.io_threads, args.aa)
            results.append(r)
            for op in ("store", "load"):
                print(f"{chunks:>5} x {pybench.human(row_bytes):>8} {op:>5} {r[f'adapter_{op}_chunks_s']:>17.0f} "
                      f"{r[f'adapter_{op}_gib_s']:>7.2f} {r[f'client_{op}_chunks_s']:>16.0f} "
                      f"{r[f'client_{op}_gib_s']:>7.2f} {r[f'{op}_ratio']:>14.2f}x"
                      + (f" {r[f'{op}_control_ratio']:>7.2f}x" if args.aa else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The SGLang adapter against the plain Python client, same batches, same run.

Starts a memkv server on loopback (memkv.testing.LocalServer; the binary from
MEMKV_BINARY, else build/memkv), then for each shape alternates, round after
round, call by call:

  adapter  MemKVHiCacheStorage, made by SGLang's StorageBackendFactory,
           batch_set_v1 / batch_get_v1 on SGLang's own host KV pool (page
           addresses from the pool's get_page_buffer_meta, as SGLang's HiCache
           controller drives it)
  client   memkv.Client.batch_put_ptr / batch_get_into_ptr with the same
           keys, the same addresses and sizes and the same put options (each
           part chained to the page before, with the page hashes), computed
           once, outside the timing

and prints pages/s and GiB/s of each, and adapter / client (the median of the
rounds). A shape is POOL:PAGESxBYTES: POOL `mla` keeps a page in one part
(MLA, page_first), `mha` in a K and a V part of half the page each (MHA,
page_first); BYTES is the whole page.

It runs in the SGLang partner venv (tests/engines/sglang, CPU-only):

    PYTHONPATH=build/python $(bash scripts/engine-venv.sh sglang)/bin/python bench/adapter_sglang.py
    ... --shapes mha:64x256KiB,mla:64x256KiB,mha:32x4MiB --rounds 5 --seconds 0.3 --aa --json out.json

--aa adds a control: the plain client timed against a second plain client
the same way, which is what a zero-cost adapter would score on this machine.
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import memkv.testing
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import memkv.testing
sys.path.insert(0, os.path.join(REPO, "tests", "engines", "sglang"))
import sglang_cpu  # noqa: E402,F401  (lets SGLang import on the CPU build of PyTorch)
import torch  # noqa: E402
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig  # noqa: E402
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MLATokenToKVPool  # noqa: E402
from sglang.srt.mem_cache.pool_host.mha import get_mha_host_pool_cls  # noqa: E402
from sglang.srt.mem_cache.pool_host.mla import MLATokenToKVPoolHost  # noqa: E402
from sglang.srt.mem_cache.storage import StorageBackendFactory  # noqa: E402
import pybench  # noqa: E402  (bench/pybench.py, beside this script)

UNITS = pybench.UNITS
PAGE_TOKENS = 64


def host_pool(kind: str, pages: int, page_bytes: int) -> Any:
    """SGLang's own page_first host KV pool of `pages` pages of `page_bytes`
    (bfloat16), over its device pool on the CPU: mha, MHATokenToKVPoolHost
    (4 heads of 32, as many layers as the page needs; a K and a V part per
    page); mla, MLATokenToKVPoolHost (kv_lora_rank 448 + qk_rope_head_dim 64;
    one part per page)."""
    per_layer = PAGE_TOKENS * (2 * 4 * 32 if kind == "mha" else 448 + 64) * 2  # bytes of a page in one layer
    if page_bytes % per_layer:
        raise SystemExit(f"a {kind} page of {page_bytes} bytes is not a whole number of {per_layer}-byte layers")
    layers = page_bytes // per_layer
    if kind == "mha":
        dev = MHATokenToKVPool(PAGE_TOKENS, PAGE_TOKENS, torch.bfloat16, 4, 32, layers, "cpu", False,
                               start_layer=0, end_layer=layers - 1)
    else:
        dev = MLATokenToKVPool(PAGE_TOKENS, PAGE_TOKENS, torch.bfloat16, 448, 64, layers, "cpu", False,
                               start_layer=0, end_layer=layers - 1)
    info = dev.get_device_pool_infos()[0].buffer_info
    common = dict(host_to_device_ratio=2.0, host_size=0, page_size=PAGE_TOKENS, layout="page_first",
                  pin_memory=False, device_capacity_tokens=dev.size if dev.host_capacity_tokens is None
                  else dev.host_capacity_tokens, start_layer=dev.start_layer, end_layer=dev.end_layer,
                  host_token_capacity=pages * PAGE_TOKENS)
    if kind == "mha":
        return get_mha_host_pool_cls(info)(info, write_back_staging=dev.hicache_write_back_staging, **common)
    return MLATokenToKVPoolHost(info, target_layer_num=dev.layer_num, override_kv_cache_dim=dev.kv_cache_dim,
                                **common)


def pool_bytes(pool: Any, pages: int) -> torch.Tensor:
    """The pool's pages, flat, through its own get_data_page."""
    return torch.cat([pool.get_data_page(p * pool.page_size, flat=True).view(torch.uint8).reshape(-1)
                      for p in range(pages)])


def parse_shape(text: str) -> Tuple[str, int, int]:
    m = re.fullmatch(r"(mha|mla):(\d+)x(\d+)(B|KiB|MiB|GiB)?", text.strip())
    if not m:
        raise SystemExit(f"bad shape {text!r}: want POOL:PAGESxBYTES, POOL mha or mla, e.g. mha:64x256KiB")
    return m.group(1), int(m.group(2)), int(m.group(3)) * UNITS[m.group(4) or ""]


def paired_rates(adapter: Callable[[], None], client: Callable[[], None], seconds: float) -> Tuple[float, float]:
    """Calls per second of each, measured call by call in alternation (the
    order swapped every pair) for at least `seconds` and 4 pairs, so that
    load from elsewhere on the machine falls on both alike."""
    spent = {adapter: 0.0, client: 0.0}
    pairs, start = 0, time.perf_counter()
    while pairs < 4 or time.perf_counter() - start < seconds:
        for fn in ((adapter, client) if pairs % 2 == 0 else (client, adapter)):
            t = time.perf_counter()
            fn()
            spent[fn] += time.perf_counter() - t
        pairs += 1
    return pairs / spent[adapter], pairs / spent[client]


def bench_shape(server: Any, kind: str, pages: int, page_bytes: int, rounds: int, seconds: float,
                aa: bool) -> Dict[str, Any]:
    src, dst = host_pool(kind, pages, page_bytes), host_pool(kind, pages, page_bytes)
    gen = torch.Generator().manual_seed(0)
    shape = src.get_dummy_flat_data_page().shape
    for p in range(pages):
        src.set_from_flat_data_page(p * PAGE_TOKENS, torch.randn(shape, generator=gen).to(src.dtype))
    extra = {"backend_name": "memkv", "module_path": "memkv.adapters.sglang", "class_name": "MemKVHiCacheStorage",
             "interface_v1": 1, "servers": [server.address], "auth_key": server.auth_key, "transport": "tcp",
             "timeout_ms": 30000}

    def backend(pool: Any) -> Any:
        """Made as SGLang attaches a "dynamic" storage backend."""
        config = HiCacheStorageConfig(tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
                                      is_mla_model=kind == "mla", enable_storage_metrics=False,
                                      is_page_first_layout=True, model_name="bench/model",
                                      extra_config=dict(extra))
        storage = StorageBackendFactory.create_backend("dynamic", config, pool)
        storage.register_mem_pool_host(pool)
        return storage
    writer, reader = backend(src), backend(dst)
    hashes = [f"{kind}-{pages}-{page_bytes}-{i:08d}" for i in range(pages)]
    indices = torch.arange(pages * PAGE_TOKENS, dtype=torch.int64)

    keys = [k for h in hashes for k in writer.memkv_keys(h)]
    # The same put options as the adapter's stores (each part chained to the
    # same part of the page before, with the page hashes).
    options = writer._store_options(hashes, keys, writer._layout.tails, None)
    put_ptrs, sizes = src.get_page_buffer_meta(indices)
    get_ptrs, _ = dst.get_page_buffer_meta(indices)
    client = server.client(timeout_ms=30000)
    other = server.client(timeout_ms=30000)  # the A/A control: a second plain client

    def adapter_store() -> None:
        assert all(writer.batch_set_v1(hashes, indices))

    def adapter_load() -> None:
        assert all(reader.batch_get_v1(hashes, indices))

    def client_store() -> None:
        assert client.batch_put_ptr(keys, put_ptrs, sizes, options=options).ok

    def client_load() -> None:
        assert client.batch_get_into_ptr(keys, get_ptrs, sizes).ok

    def other_store() -> None:
        assert other.batch_put_ptr(keys, put_ptrs, sizes, options=options).ok

    def other_load() -> None:
        assert other.batch_get_into_ptr(keys, get_ptrs, sizes).ok

    adapter_store()
    adapter_load()
    assert torch.equal(pool_bytes(src, pages), pool_bytes(dst, pages)), "the adapter loaded other bytes than it stored"
    samples: Dict[str, List[float]] = {name: [] for name in ("adapter store", "client store", "adapter load",
                                                             "client load")}
    aa_ratios: Dict[str, List[float]] = {"store": [], "load": []}
    for _ in range(rounds):
        for op, adapter_fn, client_fn, other_fn in (("store", adapter_store, client_store, other_store),
                                                     ("load", adapter_load, client_load, other_load)):
            a, c = paired_rates(adapter_fn, client_fn, seconds)
            samples[f"adapter {op}"].append(a)
            samples[f"client {op}"].append(c)
            if aa:
                c1, c2 = paired_rates(client_fn, other_fn, seconds)
                aa_ratios[op].append(c1 / c2)
    writer.close()
    reader.close()
    client.close()
    other.close()

    out: Dict[str, Any] = {"pool": kind, "pages": pages, "page_bytes": page_bytes,
                           "parts_per_page": 2 if kind == "mha" else 1, "rounds": rounds}
    for op in ("store", "load"):
        for who in ("adapter", "client"):
            calls = statistics.median(samples[f"{who} {op}"])
            out[f"{who}_{op}_pages_s"] = calls * pages
            out[f"{who}_{op}_gib_s"] = calls * pages * page_bytes / (1 << 30)
        out[f"{op}_ratio"] = out[f"adapter_{op}_gib_s"] / out[f"client_{op}_gib_s"]
        if aa:
            out[f"{op}_aa_ratio"] = statistics.median(aa_ratios[op])
            out[f"{op}_aa_spread"] = [min(aa_ratios[op]), max(aa_ratios[op])]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="mha:64x256KiB,mla:64x256KiB,mha:32x4MiB")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.3, help="per operation per round")
    parser.add_argument("--server-memory", default="1 GiB")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--aa", action="store_true",
                        help="also time the plain client against a second plain client (the same pairing): "
                             "the ratio a perfect adapter would show on this machine, i.e. the noise")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    shapes = [parse_shape(s) for s in args.shapes.split(",") if s.strip()]
    binary = os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv")

    results = []
    with memkv.testing.LocalServer(binary, memory=args.server_memory, block_size="256 KiB",
                                   workers=args.workers) as server:
        for kind, pages, page_bytes in shapes:
            results.append(bench_shape(server, kind, pages, page_bytes, args.rounds, args.seconds, args.aa))

    print(f"memkv {memkv.__version__}, TCP loopback, {args.workers} server workers, median of {args.rounds} rounds")
    print(f"{'shape':<26} {'op':<6} {'adapter pages/s':>16} {'GiB/s':>7} {'client pages/s':>15} {'GiB/s':>7}"
          f" {'adapter/client':>15}" + (f" {'A/A control (min..max)':>24}" if args.aa else ""))
    for r in results:
        shape = f"{r['pool']} {r['pages']} x {pybench.human(r['page_bytes'])}"
        for op in ("store", "load"):
            print(f"{shape:<26} {op:<6} {r[f'adapter_{op}_pages_s']:>16.0f} {r[f'adapter_{op}_gib_s']:>7.2f}"
                  f" {r[f'client_{op}_pages_s']:>15.0f} {r[f'client_{op}_gib_s']:>7.2f} {r[f'{op}_ratio']:>14.2f}x"
                  + (f" {r[f'{op}_aa_ratio']:>9.2f}x ({r[f'{op}_aa_spread'][0]:.2f}..{r[f'{op}_aa_spread'][1]:.2f})"
                     if args.aa else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()

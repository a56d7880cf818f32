"""memkv.adapters.sglang driven by SGLang's released package, no look-alike
in between: SGLang's StorageBackendFactory makes the backend ("dynamic",
from a HiCacheStorageConfig) over SGLang's own host KV pools
(MHATokenToKVPoolHost in the layer_first, page_first, page_first_direct and
page_head layouts, MLATokenToKVPoolHost in layer_first, page_first and
page_first_direct), built over SGLang's device pools on the CPU. Pages are
filled and compared with the pools' own page accessors (get_data_page,
set_from_flat_data_page, get_dummy_flat_data_page), page hashes come from
SGLang's hashing (get_storage_hash_str over a RadixKey), and the backups,
storage hit queries and prefetch transfers are SGLang's cache controller's
own methods (HiCacheController._page_backup, _storage_hit_query,
_page_transfer and the page functions they call; see attach()). Every byte
goes through a real MemKV server on loopback.
"""

import logging
import os
import queue
import random
import signal
import threading
import time
import tracemalloc
import uuid
from typing import Any, List, NamedTuple, Optional

import pytest
import torch

import memkv
import memkv.testing
from memkv.adapters._common import ConfigError, namespaced

from sglang.srt.managers.cache_controller import (HiCacheController, PrefetchOperation, StorageOperation,
                                                  storage_model_name)
from sglang.srt.mem_cache.hicache_storage import (STORAGE_BATCH_SIZE, HiCacheStorage, HiCacheStorageConfig,
                                                   HiCacheStorageExtraInfo)
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MLATokenToKVPool
from sglang.srt.mem_cache.pool_host.common import ShmHostTensorAllocator
from sglang.srt.mem_cache.pool_host.mha import get_mha_host_pool_cls
from sglang.srt.mem_cache.pool_host.mla import MLATokenToKVPoolHost
from sglang.srt.mem_cache.radix_cache import RadixKey
from sglang.srt.mem_cache.storage import StorageBackendFactory
from sglang.srt.mem_cache.utils import get_hash_str, get_storage_hash_str
from sglang.srt.observability.metrics_collector import StorageMetrics

import memkv.adapters.sglang as sg  # noqa: E402 - after SGLang, whose HiCacheStorage it subclasses
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names
from shedding_client import SheddingClient

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODULE = "memkv.adapters.sglang"
PAGE = 16  # tokens per page (--page-size)
DTYPE = torch.bfloat16


def memkv_binary() -> str:
    return os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv")


def start_server(auth_key: Optional[str] = None, address: Optional[str] = None) -> memkv.testing.LocalServer:
    # Small blocks: the pages here are a few KiB, and a value takes whole blocks.
    extra = ["--address", address] if address else None
    return memkv.testing.LocalServer(memkv_binary(), memory="64 MiB", block_size="4 KiB", workers=2,
                                     auth_key=auth_key, extra_args=extra).start()


def restartable_server() -> memkv.testing.LocalServer:
    """A server that can stop and come back at the same address."""
    for _ in range(20):
        try:
            return start_server(address=f"127.0.0.1:{memkv.testing.restartable_port()}")
        except RuntimeError:  # taken between the probe and the start: another one
            continue
    raise RuntimeError("no server started on a restartable port")


def wait_state(pid: int, stopped: bool, timeout_s: float = 10.0) -> None:
    """Polls /proc until the process is stopped (T) or running again."""
    deadline = time.monotonic() + timeout_s
    while True:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if (state == "T") == stopped:
            return
        assert time.monotonic() < deadline, f"process {pid} still in state {state}"
        time.sleep(0.005)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name.startswith("MEMKV_") and name != "MEMKV_BINARY":
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def server():
    s = start_server()
    yield s
    assert s.stop() == 0, s.stderr()


# --------------------------------------------------------------------------- SGLang's pools

def device_pool(kind: str, tokens: int, dtype: torch.dtype = DTYPE, layers: int = 3, head_num: int = 2,
                head_dim: int = 8, v_head_dim: Optional[int] = None) -> Any:
    """SGLang's device KV pool of `tokens` tokens, on the CPU:
    MHATokenToKVPool (V heads of v_head_dim, head_dim by default), or
    MLATokenToKVPool (kv_lora_rank 16 + qk_rope_head_dim 8)."""
    if kind == "mha":
        return MHATokenToKVPool(tokens, PAGE, dtype, head_num, head_dim, layers, "cpu", False,
                                v_head_dim=v_head_dim, start_layer=0, end_layer=layers - 1)
    return MLATokenToKVPool(tokens, PAGE, dtype, 16, 8, layers, "cpu", False, start_layer=0, end_layer=layers - 1)


def host_pool(kind: str = "mha", layout: str = "page_first", pages: int = 64, allocator: str = "default",
              **geometry: Any) -> Any:
    """SGLang's host KV pool (--hicache-ratio 1) over a device pool of
    `pages` pages: `pages` pages and the one SGLang adds. Made with the
    arguments SGLang's pool assembler gives it
    (hybrid_pool_assembler._build_mha_mla_host_pool), in the form of the
    release under test (recent ones take the device pool's buffer info,
    earlier ones the device pool), unpinned: pinning needs CUDA."""
    dev = device_pool(kind, pages * PAGE, **geometry)
    common = dict(host_to_device_ratio=1.0, host_size=0, page_size=PAGE, layout=layout, pin_memory=False,
                  allocator_type=allocator)
    if not hasattr(dev, "get_device_pool_infos"):
        if kind == "mha":
            return get_mha_host_pool_cls(dev)(dev, **common)
        return MLATokenToKVPoolHost(dev, override_kv_cache_dim=dev.kv_cache_dim, **common)
    info = dev.get_device_pool_infos()[0].buffer_info
    common.update(device_capacity_tokens=dev.size if dev.host_capacity_tokens is None else dev.host_capacity_tokens,
                  start_layer=dev.start_layer, end_layer=dev.end_layer)
    if kind == "mha":
        return get_mha_host_pool_cls(info)(info, write_back_staging=dev.hicache_write_back_staging, **common)
    return MLATokenToKVPoolHost(info, target_layer_num=dev.layer_num, override_kv_cache_dim=dev.kv_cache_dim,
                                **common)


def fill(pool: Any, pages: Any, seed: int) -> None:
    """Random KV in the pages, written with the pool's set_from_flat_data_page."""
    gen = torch.Generator().manual_seed(seed)
    shape = pool.get_dummy_flat_data_page().shape
    for p in pages:
        pool.set_from_flat_data_page(p * pool.page_size, torch.randn(shape, generator=gen).to(pool.dtype))


def blank(pool: Any, pages: Any = None) -> None:
    """Zeroes the pages (all of them by default) with the pool's own accessors."""
    zero = pool.get_dummy_flat_data_page()
    for p in range(pool.page_num) if pages is None else pages:
        pool.set_from_flat_data_page(p * pool.page_size, zero)


def page(pool: Any, p: int) -> torch.Tensor:
    """Page p's bytes, as the pool's get_data_page gives the page."""
    return pool.get_data_page(p * pool.page_size, flat=True).contiguous().view(torch.uint8)


def same(a: Any, pa: int, b: Any, pb: int) -> bool:
    return torch.equal(page(a, pa), page(b, pb))


def is_blank(pool: Any, p: int) -> bool:
    return not bool(page(pool, p).any())


def host_indices(pages: Any) -> torch.Tensor:
    """Token indices of host pages, as SGLang hands them to the backend."""
    pages = list(pages)
    if not pages:
        return torch.zeros(0, dtype=torch.int64)
    return torch.cat([torch.arange(p * PAGE, (p + 1) * PAGE, dtype=torch.int64) for p in pages])


class Request(NamedTuple):
    key: Any            # SGLang's RadixKey of the request's tokens
    hashes: List[str]   # its storage page hashes


def request(pages: int, extra_key: Optional[str] = None, cache_salt: Optional[str] = None,
            token_ids: Optional[List[int]] = None) -> Request:
    """A request of `pages` whole pages (token ids unique to this call unless
    given), keyed as SGLang's radix tree keys it, with its storage page
    hashes from SGLang's get_storage_hash_str (the SHA-256 chain over the
    pages' tokens, seeded with the request namespace when there is one)."""
    if token_ids is None:
        rng = random.Random(uuid.uuid4().int)
        token_ids = [rng.randrange(1 << 31) for _ in range(pages * PAGE)]
    key = RadixKey(list(token_ids), extra_key=extra_key, cache_salt=cache_salt)
    return Request(key, list(get_storage_hash_str(key, None, page_size=PAGE)))


# --------------------------------------------------------------------------- SGLang's controller

def settings(server, **more):
    config = {"backend_name": "memkv", "module_path": MODULE, "class_name": "MemKVHiCacheStorage",
              "interface_v1": 1, "servers": [server.address], "auth_key": server.auth_key,
              "transport": "tcp", "timeout_ms": 5000}
    config.update(more)
    return {k: v for k, v in config.items() if v is not None}


def storage_config(pool, extra, model="org/model-a", tp_rank=0, tp_size=1, is_mla=None, pp_rank=0, pp_size=1,
                   cp_rank=0, cp_size=1, metrics=False) -> HiCacheStorageConfig:
    """The HiCacheStorageConfig SGLang's controller makes for one rank
    (HiCacheController._generate_storage_config), the model name tagged with
    the pool's page format as the controller tags it (storage_model_name)."""
    return HiCacheStorageConfig(
        tp_rank=tp_rank, tp_size=tp_size, pp_rank=pp_rank, pp_size=pp_size, attn_cp_rank=cp_rank,
        attn_cp_size=cp_size, is_mla_model=isinstance(pool, MLATokenToKVPoolHost) if is_mla is None else is_mla,
        enable_storage_metrics=metrics, is_page_first_layout=getattr(pool, "layout", None) == "page_first",
        model_name=storage_model_name(model, pool) if pool is not None else model, extra_config=dict(extra))


def attach(pool, extra, **config_args) -> HiCacheController:
    """SGLang's HiCacheController on one rank with the backend attached, as
    attach_storage_backend attaches "dynamic": StorageBackendFactory makes it
    from the storage config, register_mem_pool_host(pool), and the page
    functions chosen by "interface_v1" (_page_get_zero_copy /
    _page_set_zero_copy, else _generic_page_get / _generic_page_set).

    The controller is made with __new__ and given only the attributes its
    storage paths read (storage_backend, storage_config, backup_skip where
    it is not yet a property, the host pool, page_size, the page functions,
    prefetch_sync_queue): its __init__ needs a device allocator and
    torch.distributed groups, and attach starts the prefetch and backup
    threads. Those storage paths (_page_backup,
    _storage_hit_query, _page_transfer and the four page functions) are
    SGLang's code as released; should a release read more of the controller
    there, the tests fail with the attribute's name rather than drift."""
    config = storage_config(pool, extra, **config_args)
    ctl = HiCacheController.__new__(HiCacheController)
    ctl.mem_pool_host = ctl.storage_host_pool = pool
    ctl.page_size = pool.page_size if pool is not None else PAGE
    ctl.storage_backend_type = "dynamic"
    ctl.storage_config = config
    if not isinstance(getattr(HiCacheController, "backup_skip", None), property):
        # Releases before HiCacheStorageConfig.is_storage_writer set it in
        # attach_storage_backend: MLA ranks other than TP rank 0 skip backups.
        ctl.backup_skip = config.is_mla_model and config.tp_rank != 0
    ctl.storage_backend = StorageBackendFactory.create_backend("dynamic", config, pool)
    if pool is not None:
        ctl.storage_backend.register_mem_pool_host(pool)
        getattr(ctl.storage_backend, "on_host_pools_registered", lambda: None)()
    zero_copy = bool(config.extra_config.get("interface_v1", 0))
    ctl.page_get_func = ctl._page_get_zero_copy if zero_copy else ctl._generic_page_get
    ctl.page_set_func = ctl._page_set_zero_copy if zero_copy else ctl._generic_page_set
    ctl.prefetch_sync_queue = queue.Queue()
    return ctl


def detach(*ctls: HiCacheController) -> None:
    for ctl in ctls:
        ctl.storage_backend.close()


def backup(ctl: HiCacheController, hashes, indices, prefix_keys=None) -> int:
    """SGLang's backup of one request (HiCacheController._page_backup): one
    page-set call per STORAGE_BATCH_SIZE pages, stopping at the first batch
    not wholly stored; returns the pages backed up."""
    op = StorageOperation(indices, [], hash_value=list(hashes), prefix_keys=prefix_keys)
    ctl._page_backup(op)
    return op.completed_tokens // ctl.page_size


def query(ctl: HiCacheController, req: Request, prefix_keys=None) -> int:
    """SGLang's storage hit query (HiCacheController._storage_hit_query):
    hashes the request's tokens itself and calls batch_exists batch by batch,
    stopping at a short batch; returns the pages hit."""
    hashes, tokens = ctl._storage_hit_query(PrefetchOperation("query", req.key, prefix_keys=prefix_keys))
    assert hashes == req.hashes[:len(hashes)] and tokens == len(hashes) * ctl.page_size
    return len(hashes)


def load(ctl: HiCacheController, hashes, indices, prefix_keys=None) -> int:
    """SGLang's prefetch transfer (HiCacheController._page_transfer): one
    page-get call per batch, counting each batch's leading hits, stopping
    after a short batch; returns the pages loaded."""
    op = PrefetchOperation("load", [], prefix_keys=prefix_keys)
    op.hash_value, op.host_indices = list(hashes), indices
    return ctl._page_transfer(op)


class CountingClient:
    """Forwards every call to the real MemKV client, counts them by name and
    keeps the arguments of the last one of each name."""

    def __init__(self, real):
        self.real = real
        self.calls = {}
        self.last = {}

    def __getattr__(self, name):
        attr = getattr(self.real, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            self.last[name] = (args, kwargs)
            return attr(*args, **kwargs)
        return call


POOLS = [("mha", "layer_first"), ("mha", "page_first"), ("mha", "page_first_direct"), ("mha", "page_head"),
         ("mla", "layer_first"), ("mla", "page_first"), ("mla", "page_first_direct")]
PARTS = {("mha", "layer_first"): ["k0", "v0", "k1", "v1", "k2", "v2"], ("mla", "layer_first"): ["l0", "l1", "l2"]}


# --------------------------------------------------------------------------- tests

def test_the_versions_under_test():
    """The releases under test, printed."""
    from importlib.metadata import version
    print(f"sglang {version('sglang')}, torch {torch.__version__}, memkv {memkv.__version__}")
    assert sg.SGLANG_AVAILABLE, sg._SGLANG_IMPORT_ERROR
    assert issubclass(sg.MemKVHiCacheStorage, HiCacheStorage)


@pytest.mark.parametrize("kind, layout", POOLS, ids=[f"{k}-{lay}" for k, lay in POOLS])
def test_store_then_load_into_fresh_pool(server, kind, layout):
    """SGLang's host pool (MHA or MLA, in each layout it has on the CPU):
    three requests backed up by the controller's _page_backup, their whole
    prefixes found by its _storage_hit_query and loaded by its _page_transfer
    into other slots of a fresh pool, byte for byte, nothing else in the
    fresh pool touched.

    The backend names a page's parts as the pool's get_page_buffer_meta lists
    them: k and v (MHA page-first layouts), k<l> and v<l> (MHA layer_first),
    kv (MLA page-first layouts), l<l> (MLA layer_first)."""
    src, dst = host_pool(kind, layout, pages=72), host_pool(kind, layout, pages=72)
    writer = attach(src, settings(server))
    requests = [(request(n), list(range(first, first + n))) for first, n in ((0, 5), (8, 3), (20, 9))]
    for r, (req, pages) in enumerate(requests):
        fill(src, pages, seed=r)
        assert backup(writer, req.hashes, host_indices(pages)) == len(pages)

    reader = attach(dst, settings(server))
    for r, (req, pages) in enumerate(requests):
        assert query(reader, req) == len(pages)
        target = [p + 40 + 10 * r for p in range(len(pages))]
        assert load(reader, req.hashes, host_indices(target)) == len(pages)
        for s, t in zip(pages, target):
            assert same(dst, t, src, s), (kind, layout, r, s)
    touched = {p + 40 + 10 * r for r, (_, pages) in enumerate(requests) for p in range(len(pages))}
    for p in range(dst.page_num):
        if p not in touched:
            assert is_blank(dst, p), f"page {p} written though never loaded"
    stats = reader.storage_backend.memkv_stats()
    assert stats["layout"] == layout and stats["zero_copy"] and stats["errors"] == 0
    assert stats["parts"] == PARTS.get((kind, layout), ["k", "v"] if kind == "mha" else ["kv"])
    ptrs, sizes = dst.get_page_buffer_meta(host_indices([0]))
    assert stats["page_bytes"] == sum(sizes) == page(dst, 0).numel()
    detach(writer, reader)


@pytest.mark.parametrize("layout", ["page_first", "page_first_direct"])
def test_k_and_v_of_different_widths(server, layout):
    """An MHA model whose V heads are narrower than its K heads (SGLang picks
    its AsymmetricMHATokenToKVPoolHost, as for MiMo-V2): a page's K and V
    parts differ in size; stored by the controller's backup, found by its
    hit query and loaded into a fresh pool, K and V byte for byte. (That pool
    has no flat pages: it is compared through its k_buffer and v_buffer.)"""
    src, dst = (host_pool("mha", layout, pages=12, head_dim=8, v_head_dim=4) for _ in range(2))
    assert type(src).__name__ == "AsymmetricMHATokenToKVPoolHost"
    gen = torch.Generator().manual_seed(22)

    def tokens(pool, pages):
        """The pool's K and V rows of the pages' tokens, page by page."""
        if layout == "page_first_direct":  # [page, layer, token, head, dim]
            return [(pool.k_buffer[p], pool.v_buffer[p]) for p in pages]
        return [(pool.k_buffer[p * PAGE:(p + 1) * PAGE], pool.v_buffer[p * PAGE:(p + 1) * PAGE]) for p in pages]
    for k, v in tokens(src, range(4)):
        k.copy_(torch.randn(k.shape, generator=gen).to(k.dtype))
        v.copy_(torch.randn(v.shape, generator=gen).to(v.dtype))
    writer = attach(src, settings(server))
    req = request(4)
    assert backup(writer, req.hashes, host_indices(range(4))) == 4
    reader = attach(dst, settings(server))
    assert query(reader, req) == 4
    assert load(reader, req.hashes, host_indices(range(6, 10))) == 4
    for (k0, v0), (k1, v1) in zip(tokens(src, range(4)), tokens(dst, range(6, 10))):
        assert torch.equal(k0.view(torch.int16), k1.view(torch.int16))
        assert torch.equal(v0.view(torch.int16), v1.view(torch.int16))
    _, sizes = src.get_page_buffer_meta(host_indices([0]))
    assert sizes[0] == 2 * sizes[1]
    stats = reader.storage_backend.memkv_stats()
    assert stats["parts"] == ["k", "v"] and stats["page_bytes"] == sum(sizes)
    detach(writer, reader)


def test_pages_land_in_the_host_pool_without_copies(server):
    """batch_get_v1 writes straight into SGLang's host pool: the traced Python
    allocations of a 384 KiB load stay far below its size."""
    src = host_pool("mha", "page_first", pages=64, head_dim=32)   # 3 KiB per K or V part
    dst = host_pool("mha", "page_first", pages=64, head_dim=32)
    fill(src, range(32), seed=2)
    storage = attach(src, settings(server)).storage_backend
    hashes = request(32).hashes
    assert storage.batch_set_v1(hashes, host_indices(range(32)), HiCacheStorageExtraInfo()) == [True] * 32
    reader = attach(dst, settings(server)).storage_backend
    indices = host_indices(range(32, 64))
    reader.batch_get_v1(hashes[:1], indices[:PAGE])  # connect outside the traced call
    loaded = 32 * page(src, 0).numel()
    assert loaded == 384 * 1024
    tracemalloc.start()
    try:
        assert reader.batch_get_v1(hashes, indices, HiCacheStorageExtraInfo()) == [True] * 32
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < loaded // 3, f"{peak} bytes allocated in Python to load {loaded}"
    assert all(same(dst, 32 + p, src, p) for p in range(32))
    storage.close()
    reader.close()


def test_a_missing_middle_page_stops_the_prefix(server):
    """Pages 0..5 stored, then page 2's V part (and later page 1's K part)
    removed: the prefix is 2 (then 1), for batch_exists, for the
    controller's hit query and its prefetch transfer, which stop at the
    first miss."""
    pool = host_pool()
    fill(pool, range(6), seed=3)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    req = request(6)
    hashes = req.hashes
    assert backup(ctl, hashes, host_indices(range(6))) == 6
    assert storage.batch_exists(hashes) == 6

    keys = storage.memkv_keys(hashes[2])
    assert [k.rsplit(b"/", 1)[1] for k in keys] == [b"k", b"v"]
    with server.client() as plain:
        assert plain.delete(keys[1])
        assert storage.batch_exists(hashes) == 2
        assert not storage.exists(hashes[2]) and storage.exists(hashes[3])
        fresh = host_pool()
        reader = attach(fresh, settings(server))
        got = reader.storage_backend.batch_get_v1(hashes, host_indices(range(6)), HiCacheStorageExtraInfo())
        assert got == [True, True, False, True, True, True]
        assert same(fresh, 3, pool, 3)
        blank(fresh)
        assert query(reader, req) == 2
        assert load(reader, hashes, host_indices(range(6))) == 2
        assert same(fresh, 0, pool, 0) and same(fresh, 1, pool, 1)
        detach(reader)
        assert plain.delete(storage.memkv_keys(hashes[1])[0])
        assert storage.batch_exists(hashes) == 1
    assert storage.batch_exists(hashes[3:]) == 3
    assert storage.batch_exists([]) == 0 and storage.batch_get_v1([], host_indices([])) == []
    detach(ctl)


def test_one_round_trip_per_call(server):
    """The controller's backup, hit query and prefetch of a 100-page request
    (one batch of STORAGE_BATCH_SIZE): one MemKV batch_put_ptr, one
    match_prefix (200 keys) and one batch_get_into_ptr."""
    assert STORAGE_BATCH_SIZE >= 100
    pool = host_pool(pages=128)
    fill(pool, range(100), seed=4)
    ctl = attach(pool, settings(server))
    spy = CountingClient(ctl.storage_backend._io.client)
    ctl.storage_backend._io.client = spy
    req = request(100)
    assert backup(ctl, req.hashes, host_indices(range(100))) == 100
    assert query(ctl, req) == 100
    assert load(ctl, req.hashes, host_indices(range(100))) == 100
    assert spy.calls == {"batch_put_ptr": 1, "match_prefix": 1, "batch_get_into_ptr": 1}
    detach(ctl)


def test_stores_name_the_previous_page_and_carry_the_page_hashes(server):
    """Each part of a page names the same part of the page before it as its
    parent (a batch's first page: the last of the prefix keys SGLang's
    controller passes in HiCacheStorageExtraInfo, which it extends batch by
    batch), and every part carries the page hash and its parent's."""
    pool = host_pool(pages=STORAGE_BATCH_SIZE + 8)
    fill(pool, range(STORAGE_BATCH_SIZE + 2), seed=5)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    spy = CountingClient(storage._io.client)
    storage._io.client = spy
    prior, *hashes = request(4).hashes
    assert backup(ctl, hashes, host_indices(range(3)), prefix_keys=[prior]) == 3
    (keys, _, _), kwargs = spy.last["batch_put_ptr"]
    options = kwargs["options"]
    assert len(options) == len(keys) == 6
    chain = [prior] + hashes
    for i, key in enumerate(keys):
        p, part = divmod(i, 2)
        assert key == storage.memkv_keys(hashes[p])[part]
        assert options[i].parent_key == storage.memkv_keys(chain[p])[part]
        assert options[i].block_hash == bytes.fromhex(hashes[p])
        assert options[i].parent_hash == bytes.fromhex(chain[p])
    # Without prefix keys the batch's first page heads its chain.
    more = request(2).hashes
    assert backup(ctl, more, host_indices(range(2))) == 2
    first, second = spy.last["batch_put_ptr"][1]["options"][0], spy.last["batch_put_ptr"][1]["options"][2]
    assert first.parent_key is None and first.parent_hash is None
    assert second.parent_key == storage.memkv_keys(more[0])[0]
    assert storage.batch_exists(hashes) == 3
    # Two batches: the controller passes the first batch's pages as the
    # second's prefix keys, so the chain goes on across the batch boundary.
    long = request(STORAGE_BATCH_SIZE + 2).hashes
    assert backup(ctl, long, host_indices(range(len(long))), prefix_keys=[]) == len(long)
    assert spy.calls["batch_put_ptr"] == 4
    head = spy.last["batch_put_ptr"][1]["options"][0]
    assert head.parent_key == storage.memkv_keys(long[STORAGE_BATCH_SIZE - 1])[0]
    assert head.parent_hash == bytes.fromhex(long[STORAGE_BATCH_SIZE - 1])
    detach(ctl)


def test_wrongly_sized_values_are_misses(server):
    """A part replaced by a shorter or a longer value: that page misses (and
    stops the controller's prefetch); the pages before it load."""
    pool = host_pool()
    fill(pool, range(4), seed=6)
    ctl = attach(pool, settings(server))
    hashes = request(4).hashes
    assert backup(ctl, hashes, host_indices(range(4))) == 4
    storage = ctl.storage_backend
    size = storage.memkv_stats()["page_bytes"] // 2
    with server.client() as plain:
        plain.put(storage.memkv_keys(hashes[1])[0], b"s" * (size - 8))
        plain.put(storage.memkv_keys(hashes[3])[1], b"l" * (size + 8))
    fresh = host_pool()
    reader = attach(fresh, settings(server))
    got = reader.storage_backend.batch_get_v1(hashes, host_indices(range(4)), HiCacheStorageExtraInfo())
    assert got == [True, False, True, False]
    assert same(fresh, 2, pool, 2)
    blank(fresh)
    assert load(reader, hashes, host_indices(range(4))) == 1
    assert same(fresh, 0, pool, 0)
    detach(ctl, reader)


def test_two_models_or_tp_layouts_never_share_pages(server):
    """What one configuration stored is invisible to another model, another
    TP rank or size, another PP size, another layout, another KV dtype and
    another namespace; the same configuration in a new instance sees it all.
    Keys name the model, tp/pp ranks, layout and page bytes (and the cp rank
    with attention context parallelism)."""
    pool = host_pool()
    fill(pool, range(4), seed=7)
    hashes = request(4).hashes
    a = attach(pool, settings(server), model="org/model-a", tp_rank=0, tp_size=2)
    assert backup(a, hashes, host_indices(range(4))) == 4

    others = [
        attach(host_pool(), settings(server), model="org/model-b", tp_rank=0, tp_size=2),
        attach(host_pool(), settings(server), model="org/model-a", tp_rank=0, tp_size=4),
        attach(host_pool(), settings(server), model="org/model-a", tp_rank=1, tp_size=2),
        attach(host_pool(), settings(server), model="org/model-a", tp_rank=0, tp_size=2, pp_rank=0, pp_size=2),
        attach(host_pool(layout="layer_first"), settings(server), model="org/model-a", tp_rank=0, tp_size=2),
        attach(host_pool(dtype=torch.float32), settings(server), model="org/model-a", tp_rank=0, tp_size=2),
        attach(host_pool(), settings(server, namespace="team-b"), model="org/model-a", tp_rank=0, tp_size=2),
    ]
    for other in others:
        storage = other.storage_backend
        assert storage.batch_exists(hashes) == 0, storage.memkv_keys(hashes[0])
        assert load(other, hashes, host_indices(range(4))) == 0
        assert not any(page(other.mem_pool_host, p).any() for p in range(4))
        detach(other)
    again = attach(host_pool(), settings(server), model="org/model-a", tp_rank=0, tp_size=2)
    assert again.storage_backend.batch_exists(hashes) == 4

    storage = a.storage_backend
    page_bytes = storage.memkv_stats()["page_bytes"]
    assert storage.namespace == "sglang/org-model-a"
    assert storage.memkv_keys(hashes[0]) == [
        namespaced("sglang/org-model-a", hashes[0], "org-model-a", "tp0of2", "pp0of1", "page_first",
                   f"{page_bytes}B", part) for part in ("k", "v")]
    cp = attach(host_pool(), settings(server, namespace="shared"), cp_rank=1, cp_size=2)
    key = cp.storage_backend.memkv_keys(hashes[0])[0]
    assert key.split(b"/")[:5] == [b"shared", hashes[0].encode(), b"org-model-a", b"tp0of1", b"pp0of1"]
    assert b"/cp1of2/" in key
    detach(a, again, cp)


def test_mla_only_tp_rank_0_writes(server):
    """MLA (SGLang's MLATokenToKVPoolHost): the storage config makes TP rank 0
    the only writer (is_storage_writer), so the controller skips backups on
    rank 1 (backup_skip); the backend's own rank-1 stores return True and
    write nothing. Rank 0's pages are read by every rank (same keys, no tp
    part)."""
    pool0, pool1 = host_pool("mla"), host_pool("mla")
    hashes = request(5).hashes
    fill(pool1, range(5), seed=8)
    rank1 = attach(pool1, settings(server), tp_rank=1, tp_size=2)
    rank0 = attach(pool0, settings(server), tp_rank=0, tp_size=2)
    assert rank1.backup_skip and not rank0.backup_skip
    assert rank1.storage_backend.memkv_stats()["writer"] is False
    assert rank0.storage_backend.memkv_stats()["writer"] is True
    assert rank0.storage_backend.memkv_keys(hashes[0]) == rank1.storage_backend.memkv_keys(hashes[0])
    assert b"/tp" not in rank0.storage_backend.memkv_keys(hashes[0])[0]

    assert rank1.storage_backend.batch_set_v1(hashes, host_indices(range(5)), HiCacheStorageExtraInfo()) == [True] * 5
    assert rank1.storage_backend.batch_set(hashes[:1], [pool1.get_data_page(0)]) is True
    with server.client() as plain:
        keys = [k for h in hashes for k in rank0.storage_backend.memkv_keys(h)]
        assert plain.batch_exists(keys).statuses == [1] * 5
    assert rank0.storage_backend.batch_exists(hashes) == 0
    assert rank1.storage_backend.batch_exists(hashes) == 0

    fill(pool0, range(5), seed=9)
    assert backup(rank0, hashes, host_indices(range(5))) == 5
    assert rank1.storage_backend.batch_exists(hashes) == 5
    assert load(rank1, hashes, host_indices(range(10, 15))) == 5
    for i in range(5):
        assert same(pool1, 10 + i, pool0, i)
    detach(rank0, rank1)


BAD_SETTINGS = [
    ("timeout_ms", "fast", "'timeout_ms'"),
    ("timeout_ms", 0, "'timeout_ms'"),
    ("servers", "no-port-here", "'servers'"),
    ("servers", [], "'servers'"),
    ("auth_key", "abc", "'auth_key'"),
    ("transport", "udp", "'transport'"),
    ("num_connections", -1, "'num_connections'"),
    ("namespace", "bad\nname", "'namespace'"),
    ("log_level", "loud", "'log_level'"),
    ("sever", "127.0.0.1:1", "'sever'"),
]


@pytest.mark.parametrize("setting, value, named", BAD_SETTINGS,
                         ids=[f"{s}={v!r}" for s, v, _ in BAD_SETTINGS])
def test_bad_settings_are_refused_naming_the_setting(server, setting, value, named):
    """SGLang's factory makes the backend from an extra config with one bad
    setting: the ConfigError (a ValueError) it passes on names the setting."""
    with pytest.raises(ConfigError) as e:
        attach(host_pool(pages=2), settings(server, **{setting: value}))
    assert named in str(e.value) and "sglang" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_required_settings_and_the_environment(server, monkeypatch):
    """servers and auth_key are required: from the extra config or MEMKV_*; a
    bad MEMKV_* value is refused naming the variable."""
    base = settings(server, servers=None, auth_key=None, timeout_ms=None)
    pool = host_pool(pages=4)
    with pytest.raises(ConfigError, match="no servers.*MEMKV_SERVERS"):
        attach(pool, base)
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    with pytest.raises(ConfigError, match="no auth_key.*MEMKV_AUTH_KEY"):
        attach(pool, base)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_NAMESPACE", "from-env")
    fill(pool, range(2), seed=10)
    ctl = attach(pool, base)
    assert ctl.storage_backend.namespace == "from-env"
    hashes = request(2).hashes
    assert backup(ctl, hashes, host_indices(range(2))) == 2 and ctl.storage_backend.batch_exists(hashes) == 2
    detach(ctl)
    monkeypatch.setenv("MEMKV_TIMEOUT_MS", "soon")
    with pytest.raises(ConfigError, match="MEMKV_TIMEOUT_MS"):
        attach(pool, base)


def test_keys_sglang_puts_in_the_extra_config_are_accepted(server):
    """Every key SGLang itself reads from the extra config (SGLANG_KEYS), and
    only those, is passed over by the backend's settings check."""
    extra = settings(server, prefetch_threshold=256, prefetch_timeout_base=2, prefetch_timeout_per_ki_token=0.1,
                     prefetch_timeout_max=30, hicache_storage_pass_prefix_keys=True, tp_lcm_size=4,
                     interface_v1="1", allocator="shm")
    assert set(extra) - {"servers", "auth_key", "transport", "timeout_ms"} == sg.SGLANG_KEYS
    ctl = attach(host_pool(pages=2), extra)
    assert ctl.storage_backend.zero_copy and ctl.page_set_func == ctl._page_set_zero_copy
    detach(ctl)


def test_allocator_shm_starts_and_stores(server):
    """SGLang's host pool in shared memory ("allocator": "shm", its
    ShmHostTensorAllocator), the key left in the extra config the backend
    gets: the backend starts, and pages go from one shm pool to another
    byte for byte."""
    pool, fresh = host_pool(pages=8, allocator="shm"), host_pool(pages=8, allocator="shm")
    assert isinstance(pool.allocator, ShmHostTensorAllocator)
    fill(pool, range(3), seed=11)
    writer = attach(pool, settings(server, allocator="shm"))
    req = request(3)
    assert backup(writer, req.hashes, host_indices(range(3))) == 3
    reader = attach(fresh, settings(server, allocator="shm"))
    assert query(reader, req) == 3
    assert load(reader, req.hashes, host_indices(range(4, 7))) == 3
    assert all(same(fresh, 4 + p, pool, p) for p in range(3))
    detach(writer, reader)


INTERFACE_V1 = [1, "1", True, "0", "false", 0, "", None]


@pytest.mark.parametrize("value", INTERFACE_V1, ids=[repr(v) if v is not None else "absent" for v in INTERFACE_V1])
def test_interface_v1_is_read_as_sglang_reads_it(server, value):
    """"interface_v1" as SGLang's attach_storage_backend reads it (Python
    truth of the value as given: "0" and "false" are non-empty strings, so
    zero copy): the backend's batch_exists looks up the keys of the path the
    controller then uses, so what the controller's backup stored its hit
    query finds, and its prefetch loads, byte for byte."""
    pool, fresh = host_pool(pages=8), host_pool(pages=8)
    fill(pool, range(3), seed=21)
    extra = settings(server, interface_v1=value)
    writer = attach(pool, extra)
    zero_copy = writer.page_set_func == writer._page_set_zero_copy
    assert zero_copy == bool(value) and writer.storage_backend.zero_copy == zero_copy
    req = request(3)
    assert backup(writer, req.hashes, host_indices(range(3))) == 3
    reader = attach(fresh, extra)
    assert query(reader, req) == 3
    assert load(reader, req.hashes, host_indices(range(4, 7))) == 3
    assert all(same(fresh, 4 + p, pool, p) for p in range(3))
    detach(writer, reader)


@pytest.mark.parametrize("typo", ["allocater", "Allocator", "interface_v2", "prefetch_treshold"])
def test_misspelt_sglang_keys_are_still_refused(server, typo):
    """A misspelt SGLang key is an unknown setting, refused by name."""
    with pytest.raises(ConfigError) as e:
        attach(host_pool(pages=2), settings(server, **{typo: "shm"}))
    assert f"unknown setting(s) '{typo}'" in str(e.value) and "sglang" in str(e.value)


def test_server_killed_then_restarted():
    """A dead server: misses, failed stores, prefix 0, None; no exception and
    no wait, through the backend and the controller's loops. The same
    address restarted (empty): stores and loads work again, the old pages
    are gone."""
    first = restartable_server()
    pool = host_pool()
    fill(pool, range(6), seed=12)
    writer = attach(pool, settings(first, timeout_ms=500))
    storage = writer.storage_backend
    req = request(6)
    hashes = req.hashes
    assert backup(writer, hashes, host_indices(range(6))) == 6
    address, key = first.address, first.auth_key
    first._process.kill()
    first._process.wait()
    first.stop()

    fresh = host_pool()
    reader = attach(fresh, settings(first, timeout_ms=500, address=None))
    info = HiCacheStorageExtraInfo()
    calls = [
        (lambda: storage.batch_exists(hashes, info), 0),
        (lambda: storage.exists(hashes[0]), False),
        (lambda: query(reader, req), 0),
        (lambda: reader.storage_backend.batch_get_v1(hashes, host_indices(range(6)), info), [False] * 6),
        (lambda: load(reader, hashes, host_indices(range(6))), 0),
        (lambda: storage.batch_set_v1(hashes, host_indices(range(6)), info), [False] * 6),
        (lambda: backup(writer, hashes, host_indices(range(6))), 0),
        (lambda: storage.get(hashes[0], pool.get_dummy_flat_data_page()), None),
        (lambda: storage.batch_set(hashes[:1], [pool.get_data_page(0)]), False),
    ]
    for call, expected in calls:
        start = time.monotonic()
        assert call() == expected
        assert time.monotonic() - start < 2.0
    # The stores and gets count an error each; a lookup is a match_prefix,
    # for which a server that cannot be asked is a miss, as in the client.
    assert storage.memkv_stats()["errors"] >= 4 and reader.storage_backend.memkv_stats()["errors"] >= 2
    assert not any(page(fresh, p).any() for p in range(6))

    second = start_server(auth_key=key, address=address)
    try:
        assert second.address == address
        deadline = time.monotonic() + 10
        while not all(storage.batch_set_v1(hashes[:3], host_indices(range(3)), info)):
            assert time.monotonic() < deadline, "no store succeeded on the restarted server"
            time.sleep(0.02)  # the client retries a server marked down after ~200 ms
        assert storage.batch_exists(hashes) == 3  # pages 3..5 went with the old server
        while reader.storage_backend.batch_exists(hashes) != 3:
            assert time.monotonic() < deadline, "the reader did not see the restarted server"
            time.sleep(0.02)
        assert query(reader, req) == 3
        assert load(reader, hashes, host_indices(range(6))) == 3
        assert all(same(fresh, p, pool, p) for p in range(3))
        assert not any(page(fresh, p).any() for p in range(3, 6))
    finally:
        detach(writer, reader)
        second.stop()


def test_stopped_server_costs_at_most_timeout_ms():
    """A server that stops answering (SIGSTOP): each call gives up after
    timeout_ms with a miss; once it answers again, so does the backend."""
    s = start_server()
    pool = host_pool(pages=8)
    fill(pool, range(3), seed=13)
    ctl = attach(pool, settings(s, timeout_ms=300))
    storage = ctl.storage_backend
    hashes = request(3).hashes
    assert backup(ctl, hashes, host_indices(range(3))) == 3
    info = HiCacheStorageExtraInfo()
    s._process.send_signal(signal.SIGSTOP)
    wait_state(s._process.pid, stopped=True)
    try:
        for call, expected in [(lambda: storage.batch_exists(hashes, info), 0),
                               (lambda: storage.batch_get_v1(hashes, host_indices(range(4, 7)), info), [False] * 3),
                               (lambda: storage.batch_set_v1(hashes, host_indices(range(3)), info), [False] * 3)]:
            start = time.monotonic()
            assert call() == expected
            assert time.monotonic() - start < 1.5
    finally:
        s._process.send_signal(signal.SIGCONT)
        wait_state(s._process.pid, stopped=False)
    try:
        deadline = time.monotonic() + 10
        while storage.batch_exists(hashes) != 3:
            assert time.monotonic() < deadline, "the backend did not see the server again"
            time.sleep(0.02)
    finally:
        detach(ctl)
        s.stop()


def test_flat_pages_without_interface_v1(server):
    """Without "interface_v1" SGLang's controller moves flat pages: its
    _generic_page_set hands batch_set the pool's get_data_page tensors, its
    _generic_page_get hands batch_get get_dummy_flat_data_page tensors and
    copies them in with set_from_flat_data_page. Stored under their own key
    (…/page), read into the given tensors; get/set/exists work one page at a
    time; batch_set is True only when every page was stored."""
    pool, fresh = host_pool(pages=8), host_pool(pages=8)
    fill(pool, range(4), seed=14)
    ctl = attach(pool, settings(server, interface_v1=None))
    storage = ctl.storage_backend
    assert not storage.zero_copy and ctl.page_set_func == ctl._generic_page_set
    req = request(4)
    hashes = req.hashes
    assert backup(ctl, hashes[:3], host_indices(range(3))) == 3
    assert storage.set(hashes[3], pool.get_data_page(3 * PAGE)) is True
    assert storage.batch_exists(hashes) == 4 and storage.exists(hashes[2])
    assert storage.memkv_flat_key(hashes[0]).endswith(b"/page")

    reader = attach(fresh, settings(server, interface_v1=None))
    assert query(reader, req) == 4
    assert load(reader, hashes, host_indices(range(4, 8))) == 4
    assert all(same(fresh, 4 + p, pool, p) for p in range(4))

    targets = [pool.get_dummy_flat_data_page() for _ in hashes]
    got = storage.batch_get(hashes, targets)
    assert all(g is t for g, t in zip(got, targets))
    assert all(torch.equal(t, pool.get_data_page(p * PAGE)) for p, t in enumerate(targets))
    assert bytes(storage.get(hashes[1])) == bytes(page(pool, 1).numpy())
    raw = pool.get_dummy_flat_data_page()
    assert storage.get(hashes[2], raw.data_ptr(), raw.numel() * raw.element_size()) == raw.data_ptr()
    assert torch.equal(raw, pool.get_data_page(2 * PAGE))
    assert storage.get(request(1).hashes[0], pool.get_dummy_flat_data_page()) is None

    with server.client() as plain:
        plain.delete(storage.memkv_flat_key(hashes[1]))
    assert storage.batch_exists(hashes) == 1
    assert storage.batch_get(hashes[:2], [pool.get_dummy_flat_data_page() for _ in range(2)])[1] is None
    not_contiguous = pool.get_data_page(0, flat=False)
    assert not not_contiguous.is_contiguous()
    assert storage.batch_set(hashes[:1], [not_contiguous]) is False  # refused, not raised
    assert storage.batch_set(request(2).hashes, [pool.get_data_page(0), pool.get_data_page(PAGE)]) is True
    detach(ctl, reader)


def test_metrics_clear_and_close(server):
    """get_stats() gives SGLang's own StorageMetrics (pages per backup and
    prefetch batch, their GiB/s), emptied by each call; clear() deletes the
    namespace's keys and no other namespace's; after close() every call
    misses or fails to store."""
    pool = host_pool(pages=8)
    fill(pool, range(4), seed=15)
    ctl = attach(pool, settings(server), metrics=True)
    storage = ctl.storage_backend
    hashes = request(4).hashes
    assert backup(ctl, hashes, host_indices(range(4))) == 4
    assert load(ctl, hashes, host_indices(range(4, 8))) == 4
    stats = storage.get_stats()
    assert type(stats) is StorageMetrics
    assert stats.backup_pgs == [4] and stats.prefetch_pgs == [4]
    assert len(stats.backup_bandwidth) == 1 and stats.backup_bandwidth[0] > 0
    assert storage.get_stats() == StorageMetrics()
    counters = storage.memkv_stats()
    assert counters["put_ok"] == 8 and counters["get_hits"] == 8 and counters["client"]["transport"] == "tcp"

    other = attach(pool, settings(server, namespace=storage.namespace + "-other"))
    assert backup(other, hashes, host_indices(range(4))) == 4
    storage.clear()
    assert storage.batch_exists(hashes) == 0, "clear() deletes every key under the namespace"
    assert other.storage_backend.batch_exists(hashes) == 4, "a namespace that merely starts the same way is left alone"
    assert backup(ctl, hashes, host_indices(range(4))) == 4
    detach(other, ctl)
    storage.close()
    info = HiCacheStorageExtraInfo()
    assert storage.batch_exists(hashes, info) == 0
    assert storage.batch_get_v1(hashes, host_indices(range(4)), info) == [False] * 4
    assert storage.batch_set_v1(hashes, host_indices(range(4)), info) == [False] * 4
    assert storage.get(hashes[0], pool.get_dummy_flat_data_page()) is None and storage.set(hashes[0], b"x") is False


def test_misuse_is_a_miss_not_an_exception(server, caplog):
    """No registered pool; a pool whose pages get_page_buffer_meta cannot
    describe (SGLang's MHA host pool in its page_unified layout, which it
    refuses with "Unsupported layout": logged as an ERROR at registration);
    host indices that do not match the keys: misses and failed stores, no
    exception. (A release without page_unified refuses that layout when the
    pool is built, so no such pool reaches the backend there.)"""
    ctl = attach(None, settings(server))
    storage = ctl.storage_backend
    hashes = request(2).hashes
    info = HiCacheStorageExtraInfo()
    assert storage.batch_exists(hashes, info) == 0 and storage.memkv_keys(hashes[0]) == []
    assert storage.batch_set_v1(hashes, host_indices(range(2)), info) == [False, False]

    try:
        unified = host_pool(layout="page_unified", pages=4)
    except ValueError as e:
        assert "Unsupported layout" in str(e)
        unified = None
    if unified is not None:
        with pytest.raises(ValueError, match="Unsupported layout"):
            unified.get_page_buffer_meta(host_indices([0]))
        with caplog.at_level(logging.ERROR, logger="memkv.adapters.sglang"):
            storage.register_mem_pool_host(unified)
        assert any(r.levelno == logging.ERROR and "page_unified" in r.getMessage() for r in caplog.records)
        assert storage.memkv_stats()["layout"] is None
        assert storage.batch_get_v1(hashes, host_indices(range(2)), info) == [False, False]
        assert storage.batch_set_v1(hashes, host_indices(range(2)), info) == [False, False]

    pool = host_pool(pages=4)
    storage.register_mem_pool_host(pool)
    assert storage.batch_set_v1(hashes, host_indices(range(3)), info) == [False, False]
    assert storage.batch_get_v1(hashes, host_indices(range(1)), info) == [False, False]
    assert storage.batch_set_v1(hashes, host_indices(range(2)), info) == [True, True]
    detach(ctl)


def test_threads_share_one_backend(server):
    """SGLang's prefetch and backup threads call one backend at once: four
    threads back up, query and load their own requests through the same
    backends, three times over."""
    pool, target = host_pool(pages=64), host_pool(pages=64)
    fill(pool, range(64), seed=16)
    writer = attach(pool, settings(server))
    reader = attach(target, settings(server))
    requests = [request(16) for _ in range(4)]
    failures: List[Any] = []

    def work(t):
        try:
            pages = range(t * 16, (t + 1) * 16)
            for _ in range(3):
                assert backup(writer, requests[t].hashes, host_indices(pages)) == 16
                assert query(reader, requests[t]) == 16
                blank(target, pages)
                assert load(reader, requests[t].hashes, host_indices(pages)) == 16
                assert all(same(target, p, pool, p) for p in pages)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    detach(writer, reader)


# --------------------------------------------------------------------------- tenants: extra key and cache salt

def test_salted_page_hashes_keep_tenants_apart(server):
    """SGLang seeds a request's storage hash chain with its namespace
    (get_storage_hash_str: storage_namespace_seed over the RadixKey's
    extra_key and cache_salt) and leaves a request without one on the
    token-only chain (get_hash_str). Two tenants' identical prompts get
    different page hashes; the backend keeps each hash whole in its keys,
    so what one tenant stored is a miss for the controller's hit query and
    for loads of another tenant, of an unsalted request and of the same
    string as an extra key (LoRA), while a request with the same salt, in
    another SGLang instance, finds and loads it all."""
    pool = host_pool()
    fill(pool, range(6), seed=17)
    tokens = [7000 + t for t in range(6 * PAGE)]
    a = request(6, cache_salt="tenant-a", token_ids=tokens)
    b = request(6, cache_salt="tenant-b", token_ids=tokens)
    plain = request(6, token_ids=tokens)
    lora = request(6, extra_key="tenant-a", token_ids=tokens)
    assert plain.hashes == list(get_hash_str(tokens, None, page_size=PAGE))
    assert len({a.hashes[0], b.hashes[0], plain.hashes[0], lora.hashes[0]}) == 4 and not set(a.hashes) & set(b.hashes)
    writer = attach(pool, settings(server))
    assert backup(writer, a.hashes, host_indices(range(6))) == 6
    assert all(a.hashes[0].encode() in k for k in writer.storage_backend.memkv_keys(a.hashes[0]))

    fresh = host_pool()
    reader = attach(fresh, settings(server))
    for other in (b, plain, lora):
        assert query(reader, other) == 0
        assert reader.storage_backend.batch_get_v1(other.hashes, host_indices(range(6)),
                                                   HiCacheStorageExtraInfo()) == [False] * 6
    assert not any(page(fresh, p).any() for p in range(fresh.page_num)), "a miss wrote into the host pool"
    again = Request(RadixKey(list(tokens), cache_salt="tenant-a"), a.hashes)
    assert query(reader, again) == 6
    assert load(reader, again.hashes, host_indices(range(6))) == 6
    assert all(same(fresh, p, pool, p) for p in range(6))
    detach(writer, reader)


def test_request_namespace_in_extra_info_is_part_of_every_key(server):
    """The request namespace in a call's HiCacheStorageExtraInfo: an extra
    key or cache salt in its extra_info dict (or set as an attribute of it)
    puts a digest of them in every key, so tenants with the same page hashes
    never share a page, a tenant shares with itself, and a call without a
    namespace keeps the plain layout.

    SGLang's controller itself passes HiCacheStorageExtraInfo(prefix_keys=...)
    and nothing more (its namespace is in the hash chain: the test above), so
    its calls keep the plain layout; this covers a caller that hands the
    namespace over in the extra info, with SGLang's own class."""
    pool = host_pool()
    fill(pool, range(4), seed=18)
    hashes = request(4).hashes
    tenant_a = HiCacheStorageExtraInfo(extra_info={"cache_salt": "tenant-a"})
    tenant_b = HiCacheStorageExtraInfo(extra_info={"cache_salt": "tenant-b"})
    writer = attach(pool, settings(server))
    storage = writer.storage_backend
    assert storage.batch_set_v1(hashes, host_indices(range(4)), tenant_a) == [True] * 4

    fresh = host_pool()
    reader = attach(fresh, settings(server)).storage_backend
    unsalted = HiCacheStorageExtraInfo()
    as_extra_key = HiCacheStorageExtraInfo(extra_info={"extra_key": "tenant-a"})
    for other in (tenant_b, unsalted, None, as_extra_key):
        assert reader.batch_exists(hashes, other) == 0, other
        assert reader.batch_get_v1(hashes, host_indices(range(4)), other) == [False] * 4
    assert not any(page(fresh, p).any() for p in range(4))
    same_salt = HiCacheStorageExtraInfo(prefix_keys=None, extra_info={"cache_salt": "tenant-a", "other": 1})
    assert reader.batch_exists(hashes, same_salt) == 4
    assert reader.batch_get_v1(hashes, host_indices(range(4)), same_salt) == [True] * 4
    assert all(same(fresh, p, pool, p) for p in range(4))

    # A namespace set as an attribute of the extra info is the same namespace.
    with_attribute = HiCacheStorageExtraInfo()
    with_attribute.cache_salt = "tenant-a"
    assert storage.memkv_keys(hashes[0], with_attribute) == storage.memkv_keys(hashes[0], tenant_a)
    # The controller's extra info (prefix keys only) carries no namespace.
    controllers = HiCacheStorageExtraInfo(prefix_keys=hashes[:1])
    assert storage.memkv_keys(hashes[1], controllers) == storage.memkv_keys(hashes[1])

    # The layout: one part after the namespace for a call that has one; none
    # (the layout of every earlier release) for one that has not.
    salted, plain = storage.memkv_keys(hashes[0], tenant_a)[0], storage.memkv_keys(hashes[0])[0]
    assert storage.memkv_keys(hashes[0], unsalted) == storage.memkv_keys(hashes[0])
    assert plain.split(b"/")[:3] == [b"sglang", b"org-model-a", hashes[0].encode()]
    part = salted.split(b"/")[2]
    assert part.startswith(b"ns-") and len(part) == 3 + 32
    assert salted == plain.replace(hashes[0].encode(), part + b"/" + hashes[0].encode(), 1)

    # A store names its parent in the same namespace, and carries SGLang's page hashes.
    spy = CountingClient(storage._io.client)
    storage._io.client = spy
    more = request(3).hashes
    info = HiCacheStorageExtraInfo(prefix_keys=[more[0]], extra_info={"cache_salt": "tenant-a"})
    assert all(storage.batch_set_v1(more[1:], host_indices(range(2)), info))
    (keys, _, _), kwargs = spy.last["batch_put_ptr"]
    options = kwargs["options"]
    assert keys[0] == storage.memkv_keys(more[1], info)[0]
    assert options[0].parent_key == storage.memkv_keys(more[0], info)[0]
    assert options[2].parent_key == storage.memkv_keys(more[1], info)[0]
    assert options[0].block_hash == bytes.fromhex(more[1]) and options[0].parent_hash == bytes.fromhex(more[0])
    storage.close()
    reader.close()


# --------------------------------------------------------------------------- every client option

@pytest.fixture(scope="module")
def option_pool():
    return host_pool(pages=2)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(server, option_pool, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in the extra config
    SGLang's factory passes or by its MEMKV_* variable, is the client's."""
    def build(extra):
        storage = attach(option_pool, extra).storage_backend
        return storage._client, storage.close
    check_option_reaches_client(build, settings(server, transport=None, timeout_ms=None), name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(server, option_pool, monkeypatch, name, source):
    """A bad value of each client option, in the extra config or its MEMKV_*
    variable, stops SGLang's factory with a ConfigError naming where it came
    from."""
    message = check_bad_option_is_named(lambda extra: attach(option_pool, extra), ConfigError,
                                        settings(server, transport=None, timeout_ms=None), name, source, monkeypatch)
    assert message.startswith("memkv sglang adapter: ")


# --------------------------------------------------------------------------- back-pressure

def test_pages_a_busy_server_sheds_are_not_stored_and_loads_go_on(server, caplog):
    """Pages 2 and 4 of six: their V part shed by an overloaded server (Busy;
    a SheddingClient in place of PageIO's client, the seam CountingClient
    uses). batch_set_v1 reports exactly those pages not stored, nothing
    raises, the shed parts are counted in stores_shed (not errors) and
    logged at INFO only; the prefix stops at page 2, and the stored pages
    load byte for byte."""
    pool = host_pool(pages=8)
    fill(pool, range(6), seed=19)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    hashes = request(6).hashes
    shed = {storage.memkv_keys(hashes[i])[1] for i in (2, 4)}
    storage._io.client = SheddingClient(storage._io.client, lambda key: key in shed)
    info = HiCacheStorageExtraInfo()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert storage.batch_set_v1(hashes, host_indices(range(6)), info) == [True, True, False, True, False, True]
    stats = storage.memkv_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0
    assert [r.levelno for r in caplog.records if "busy" in r.getMessage()] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert storage.batch_exists(hashes) == 2
    fresh = host_pool(pages=8)
    reader = attach(fresh, settings(server))
    got = reader.storage_backend.batch_get_v1(hashes, host_indices(range(6)), info)
    assert got == [True, True, False, True, False, True]
    for p in (0, 1, 3, 5):
        assert same(fresh, p, pool, p), p
    detach(reader, ctl)


def test_a_flat_store_answered_draining_fails_like_unavailable(server, caplog):
    """Puts answered Draining: the pages are not stored, counted as errors
    (not shed) and logged as a WARNING."""
    pool = host_pool(pages=4)
    fill(pool, range(2), seed=20)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    storage._io.client = SheddingClient(storage._io.client, lambda key: True, code=memkv.StatusCode.DRAINING)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert backup(ctl, request(2).hashes, host_indices(range(2))) == 0
    stats = storage.memkv_stats()
    assert stats["stores_shed"] == 0 and stats["errors"] == 1
    assert any(r.levelno == logging.WARNING and "Draining" in r.getMessage() for r in caplog.records)
    detach(ctl)

"""What the tests of memkv.adapters.sglang inside SGLang share: MemKV servers
(one per test module, and ones that can stop and come back at the same
address), an environment without MEMKV_* variables for every test, SGLang's
device and host KV pools and their pages, requests and their page hashes,
and SGLang's own HiCacheController attached to a backend made by SGLang's
StorageBackendFactory, whose backup, query and load methods the tests call
(see attach())."""

import os
import queue
import random
import time
import uuid
from typing import Any, List, NamedTuple, Optional

import pytest
import torch

import memkv
import memkv.testing

from sglang.srt.managers.cache_controller import (HiCacheController, PrefetchOperation, StorageOperation,
                                                  storage_model_name)
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig
from sglang.srt.mem_cache.memory_pool import MHATokenToKVPool, MLATokenToKVPool
from sglang.srt.mem_cache.pool_host.mha import get_mha_host_pool_cls
from sglang.srt.mem_cache.pool_host.mla import MLATokenToKVPoolHost
from sglang.srt.mem_cache.radix_cache import RadixKey
from sglang.srt.mem_cache.storage import StorageBackendFactory
from sglang.srt.mem_cache.utils import get_storage_hash_str


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

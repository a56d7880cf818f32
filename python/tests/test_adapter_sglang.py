"""memkv.adapters.sglang against real memkv servers on loopback.

SGLang is not imported: sys.modules gets small look-alikes of the classes the
backend meets (HiCacheStorage, HiCacheStorageConfig, HiCacheStorageExtraInfo,
the dynamic backend factory, StorageMetrics), and numpy host pools that
describe their pages with get_page_buffer_meta the way SGLang's host pools do
(MHA: K and V per page for page_first, per layer for layer_first; MLA: one
entry per page for page_first, one per layer for layer_first). The tests
drive the backend the way SGLang's cache controller does: construct through
the factory, register_mem_pool_host, back pages up in batches, query the
stored prefix with batch_exists, load into a fresh pool, compare bytes.
MemKV itself is never replaced: every byte goes through a real server.
"""

import abc
import dataclasses
import hashlib
import importlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
import types
import uuid
from typing import Any, List, Optional

import numpy as np
import pytest

import memkv
import memkv.testing
from memkv.adapters._common import ConfigError, namespaced
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names
from shedding_client import SheddingClient

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORAGE_BATCH_SIZE = 128  # pages per storage call, as SGLang's controller batches them
MODULE = "memkv.adapters.sglang"


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


# --------------------------------------------------------------------------- SGLang look-alikes

@dataclasses.dataclass
class HiCacheStorageConfig:
    tp_rank: int
    tp_size: int
    pp_rank: int
    pp_size: int
    attn_cp_rank: int
    attn_cp_size: int
    is_mla_model: bool
    enable_storage_metrics: bool
    is_page_first_layout: bool
    model_name: Optional[str]
    dp_rank: int = 0
    dp_size: int = 1
    tp_lcm_size: Optional[int] = None
    should_split_heads: bool = False
    extra_config: Optional[dict] = None


@dataclasses.dataclass
class HiCacheStorageExtraInfo:
    prefix_keys: Optional[List[str]] = None
    extra_info: Optional[dict] = None


class HiCacheStorage(abc.ABC):
    def register_mem_pool_host(self, mem_pool_host):
        self.mem_pool_host = mem_pool_host

    def batch_get_v1(self, keys, host_indices, extra_info=None):
        raise NotImplementedError()

    def batch_set_v1(self, keys, host_indices, extra_info=None):
        raise NotImplementedError()

    @abc.abstractmethod
    def get(self, key, target_location=None, target_sizes=None): ...

    @abc.abstractmethod
    def batch_get(self, keys, target_locations=None, target_sizes=None): ...

    @abc.abstractmethod
    def set(self, key, value=None, target_location=None, target_sizes=None): ...

    @abc.abstractmethod
    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None): ...

    @abc.abstractmethod
    def exists(self, key): ...

    def batch_exists(self, keys, extra_info=None):
        for i, key in enumerate(keys):
            if not self.exists(key):
                return i
        return len(keys)

    def clear(self):
        pass

    def get_stats(self):
        return None


class StorageBackendFactory:
    """The "dynamic" path: import module_path, check the class, call cls(storage_config, kwargs)."""

    @classmethod
    def create_backend(cls, backend_name, storage_config, mem_pool_host, **kwargs):
        if backend_name != "dynamic" or storage_config.extra_config is None:
            raise ValueError(f"unknown storage backend {backend_name!r}")
        config = storage_config.extra_config
        for field in ("backend_name", "module_path", "class_name"):
            if field not in config:
                raise ValueError(f"missing required field {field!r}")
        backend_class = getattr(importlib.import_module(config["module_path"]), config["class_name"])
        if not issubclass(backend_class, HiCacheStorage):
            raise TypeError(f"{config['class_name']} must inherit from HiCacheStorage")
        return backend_class(storage_config, kwargs)


@dataclasses.dataclass
class StorageMetrics:
    prefetch_pgs: List[int] = dataclasses.field(default_factory=list)
    backup_pgs: List[int] = dataclasses.field(default_factory=list)
    prefetch_bandwidth: List[float] = dataclasses.field(default_factory=list)
    backup_bandwidth: List[float] = dataclasses.field(default_factory=list)


STUBS = {
    "sglang": {}, "sglang.srt": {}, "sglang.srt.mem_cache": {},
    "sglang.srt.mem_cache.hicache_storage": {"HiCacheStorage": HiCacheStorage,
                                             "HiCacheStorageConfig": HiCacheStorageConfig,
                                             "HiCacheStorageExtraInfo": HiCacheStorageExtraInfo},
    "sglang.srt.mem_cache.storage": {"StorageBackendFactory": StorageBackendFactory},
    "sglang.srt.observability": {},
    "sglang.srt.observability.metrics_collector": {"StorageMetrics": StorageMetrics},
}


@pytest.fixture(scope="module")
def sg():
    """The backend module, imported with the look-alikes in sys.modules; all removed afterwards."""
    saved = {name: sys.modules.get(name) for name in list(STUBS) + [MODULE]}
    for name, attrs in STUBS.items():
        module = types.ModuleType(name)
        module.__path__ = []  # a package, so that submodules resolve
        for attr, value in attrs.items():
            setattr(module, attr, value)
        sys.modules[name] = module
    sys.modules.pop(MODULE, None)
    try:
        yield importlib.import_module(MODULE)
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


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


# --------------------------------------------------------------------------- host pools (numpy)

class MHAPool:
    """MHA host pool: kv_buffer [2, layer, token, head, dim] (layer_first) or
    [2, token, layer, head, dim] (page_first); per page, K and V entries
    (page_first) or K and V of each layer (layer_first)."""

    def __init__(self, layout="page_first", size=512, page_size=4, layer_num=3, head_num=2, head_dim=8,
                 dtype=np.float16):
        self.layout, self.size, self.page_size = layout, size, page_size
        self.layer_num, self.head_num, self.head_dim = layer_num, head_num, head_dim
        self.dtype = np.dtype(dtype)
        if layout == "layer_first":
            dims = (2, layer_num, size, head_num, head_dim)
        elif layout == "page_first":
            dims = (2, size, layer_num, head_num, head_dim)
        else:
            raise ValueError(layout)
        self.kv_buffer = np.zeros(dims, self.dtype)

    def get_size_per_token(self):
        return self.head_num * self.head_dim * self.layer_num * self.dtype.itemsize * 2

    def get_page_buffer_meta(self, indices):
        indices = indices.tolist()
        assert len(indices) % self.page_size == 0
        assert all(0 <= i < self.size for i in indices), "host index outside the pool"
        base = self.kv_buffer.ctypes.data
        token = self.head_num * self.head_dim * self.dtype.itemsize
        v_offset = self.layer_num * self.size * token
        ptrs = []
        for i in range(0, len(indices), self.page_size):
            if self.layout == "layer_first":
                for layer in range(self.layer_num):
                    k = base + indices[i] * token + layer * self.size * token
                    ptrs += [k, k + v_offset]
            else:
                k = base + indices[i] * self.layer_num * token
                ptrs += [k, k + v_offset]
        part = self.page_size * token * (1 if self.layout == "layer_first" else self.layer_num)
        return ptrs, [part] * len(ptrs)

    def page(self, start):
        """A copy of the page whose first token is `start` (every layer, K and V)."""
        if self.layout == "layer_first":
            return self.kv_buffer[:, :, start:start + self.page_size].copy()
        return self.kv_buffer[:, start:start + self.page_size].copy()

    def fill(self, pages, rng):
        for p in pages:
            s = slice(p * self.page_size, (p + 1) * self.page_size)
            view = self.kv_buffer[:, :, s] if self.layout == "layer_first" else self.kv_buffer[:, s]
            view[...] = rng.standard_normal(view.shape).astype(self.dtype)


class MLAPool:
    """MLA host pool: kv_buffer [layer, token, 1, dim] (layer_first) or
    [token, layer, 1, dim] (page_first); per page one entry (page_first) or
    one per layer (layer_first)."""

    def __init__(self, layout="page_first", size=512, page_size=4, layer_num=3, kv_cache_dim=24,
                 dtype=np.float16):
        self.layout, self.size, self.page_size = layout, size, page_size
        self.layer_num, self.kv_cache_dim, self.dtype = layer_num, kv_cache_dim, np.dtype(dtype)
        dims = (layer_num, size, 1, kv_cache_dim) if layout == "layer_first" else (size, layer_num, 1, kv_cache_dim)
        self.kv_buffer = np.zeros(dims, self.dtype)

    def get_size_per_token(self):
        return self.kv_cache_dim * self.dtype.itemsize * self.layer_num

    def get_page_buffer_meta(self, indices):
        indices = indices.tolist()
        assert len(indices) % self.page_size == 0
        assert all(0 <= i < self.size for i in indices), "host index outside the pool"
        base = self.kv_buffer.ctypes.data
        token = self.kv_cache_dim * self.dtype.itemsize
        ptrs = []
        for i in range(0, len(indices), self.page_size):
            if self.layout == "layer_first":
                ptrs += [base + indices[i] * token + layer * self.size * token for layer in range(self.layer_num)]
            else:
                ptrs.append(base + indices[i] * self.layer_num * token)
        part = self.page_size * token * (1 if self.layout == "layer_first" else self.layer_num)
        return ptrs, [part] * len(ptrs)

    def page(self, start):
        if self.layout == "layer_first":
            return self.kv_buffer[:, start:start + self.page_size].copy()
        return self.kv_buffer[start:start + self.page_size].copy()

    def fill(self, pages, rng):
        for p in pages:
            s = slice(p * self.page_size, (p + 1) * self.page_size)
            view = self.kv_buffer[:, s] if self.layout == "layer_first" else self.kv_buffer[s]
            view[...] = rng.standard_normal(view.shape).astype(self.dtype)


def host_indices(pool, pages):
    """Token indices of host pages, as SGLang hands them to the backend."""
    return np.concatenate([np.arange(p * pool.page_size, (p + 1) * pool.page_size) for p in pages])


def page_hashes(n, tag=""):
    """A chain of n page hashes unique to this call (64 hex characters, like SGLang's)."""
    seed = uuid.uuid4().hex + tag
    return [hashlib.sha256(f"{seed}/{i}".encode()).hexdigest() for i in range(n)]


# --------------------------------------------------------------------------- driving it as SGLang does

def settings(server, **more):
    config = {"backend_name": "memkv", "module_path": MODULE, "class_name": "MemKVHiCacheStorage",
              "interface_v1": 1, "servers": [server.address], "auth_key": server.auth_key,
              "transport": "tcp", "timeout_ms": 5000}
    config.update(more)
    return {k: v for k, v in config.items() if v is not None}


def make_backend(sg, pool, extra, model="org/model-a", tp_rank=0, tp_size=1, is_mla=False, pp_rank=0,
                 pp_size=1, cp_rank=0, cp_size=1, metrics=False):
    config = HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size, pp_rank=pp_rank, pp_size=pp_size,
                                  attn_cp_rank=cp_rank, attn_cp_size=cp_size, is_mla_model=is_mla,
                                  enable_storage_metrics=metrics,
                                  is_page_first_layout=getattr(pool, "layout", "") == "page_first",
                                  model_name=model, extra_config=dict(extra))
    backend = StorageBackendFactory.create_backend("dynamic", config, pool)
    backend.register_mem_pool_host(pool)
    return backend


def backup(storage, hashes, indices, page_size, info=None):
    """The controller's backup loop: batch_set_v1 per batch, all() of it, stop at a failure."""
    done = 0
    for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
        batch = hashes[i:i + STORAGE_BATCH_SIZE]
        if not all(storage.batch_set_v1(batch, indices[i * page_size:(i + len(batch)) * page_size],
                                        info or HiCacheStorageExtraInfo())):
            break
        done += len(batch)
    return done


def query(storage, hashes, info=None):
    """The controller's storage hit query: batch_exists per batch, stop at a short one."""
    hits = 0
    for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
        batch = hashes[i:i + STORAGE_BATCH_SIZE]
        n = storage.batch_exists(batch, info or HiCacheStorageExtraInfo())
        hits += n
        if n < len(batch):
            break
    return hits


def load(storage, hashes, indices, page_size, info=None):
    """The controller's zero-copy page transfer: the hit prefix of batch_get_v1, per batch."""
    done = 0
    for i in range(0, len(hashes), STORAGE_BATCH_SIZE):
        batch = hashes[i:i + STORAGE_BATCH_SIZE]
        results = storage.batch_get_v1(batch, indices[i * page_size:(i + len(batch)) * page_size],
                                       info or HiCacheStorageExtraInfo())
        inc = results.index(False) if False in results else len(results)
        done += inc
        if inc != len(batch):
            break
    return done


class CountingClient:
    """Forwards every call to the real client, counts them by name and keeps
    the arguments of the last one of each name."""

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


POOLS = {
    "mha-page_first": lambda: MHAPool("page_first"),
    "mha-layer_first": lambda: MHAPool("layer_first"),
    "mla-page_first": lambda: MLAPool("page_first"),
    "mla-layer_first": lambda: MLAPool("layer_first"),
}


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("kind", list(POOLS))
def test_store_then_load_into_fresh_pool(sg, server, kind):
    """Three requests backed up from one pool; their whole prefixes are found;
    loaded into other slots of a fresh pool, every byte matches and nothing
    else in the fresh pool is touched."""
    rng = np.random.default_rng(1)
    src, dst = POOLS[kind](), POOLS[kind]()
    is_mla = kind.startswith("mla")
    writer = make_backend(sg, src, settings(server), is_mla=is_mla)
    requests = [(page_hashes(n, kind), list(range(first, first + n))) for first, n in ((0, 5), (8, 3), (20, 9))]
    for hashes, pages in requests:
        src.fill(pages, rng)
        assert backup(writer, hashes, host_indices(src, pages), src.page_size) == len(hashes)

    reader = make_backend(sg, dst, settings(server), is_mla=is_mla)
    for r, (hashes, pages) in enumerate(requests):
        assert query(reader, hashes) == len(hashes)
        target = [p + 40 + 10 * r for p in range(len(pages))]
        assert load(reader, hashes, host_indices(dst, target), dst.page_size) == len(hashes)
        for s, t in zip(pages, target):
            assert np.array_equal(dst.page(t * dst.page_size), src.page(s * src.page_size)), (kind, r, s)
    touched = {p + 40 + 10 * r for r, (_, pages) in enumerate(requests) for p in range(len(pages))}
    for p in range(dst.size // dst.page_size):
        if p not in touched:
            assert not dst.page(p * dst.page_size).any(), f"page {p} written though never loaded"
    stats = reader.memkv_stats()
    assert stats["layout"] == dst.layout and stats["zero_copy"] and stats["errors"] == 0
    writer.close()
    reader.close()


def test_pages_land_in_the_host_pool_without_copies(sg, server):
    """batch_get_v1 writes straight into the numpy host pool: the traced
    Python allocations of a 192 KiB load stay far below its size."""
    src = MHAPool("page_first", size=256, head_dim=64)        # 3 KiB per K or V part
    dst = MHAPool("page_first", size=256, head_dim=64)
    src.fill(range(32), np.random.default_rng(2))
    storage = make_backend(sg, src, settings(server))
    hashes = page_hashes(32)
    assert storage.batch_set_v1(hashes, host_indices(src, range(32))) == [True] * 32
    reader = make_backend(sg, dst, settings(server))
    indices = host_indices(dst, range(32, 64))
    reader.batch_get_v1(hashes[:1], indices[:dst.page_size])  # connect outside the traced call
    tracemalloc.start()
    try:
        assert reader.batch_get_v1(hashes, indices) == [True] * 32
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    loaded = 32 * 2 * src.layer_num * src.page_size * src.head_num * src.head_dim * 2
    assert loaded == 192 * 1024
    assert peak < loaded // 3, f"{peak} bytes allocated in Python to load {loaded}"
    assert np.array_equal(dst.kv_buffer[:, 128:256], src.kv_buffer[:, 0:128])
    storage.close()
    reader.close()


def test_a_missing_middle_page_stops_the_prefix(sg, server):
    """Pages 0..5 stored, then page 2's V part (and later page 1's K part)
    removed: the prefix is 2 (then 1), for batch_exists, for the loads, and
    for a controller that stops at the first miss."""
    pool = MHAPool("page_first")
    pool.fill(range(6), np.random.default_rng(3))
    storage = make_backend(sg, pool, settings(server))
    hashes = page_hashes(6)
    assert backup(storage, hashes, host_indices(pool, range(6)), pool.page_size) == 6
    assert storage.batch_exists(hashes) == 6

    keys = storage.memkv_keys(hashes[2])
    assert [k.rsplit(b"/", 1)[1] for k in keys] == [b"k", b"v"]
    with server.client() as plain:
        assert plain.delete(keys[1])
        assert storage.batch_exists(hashes) == 2
        assert not storage.exists(hashes[2]) and storage.exists(hashes[3])
        fresh = MHAPool("page_first")
        reader = make_backend(sg, fresh, settings(server))
        assert reader.batch_get_v1(hashes, host_indices(fresh, range(6))) == [True, True, False, True, True, True]
        assert np.array_equal(fresh.page(12), pool.page(12))
        fresh.kv_buffer[...] = 0
        assert query(reader, hashes) == 2
        assert load(reader, hashes, host_indices(fresh, range(6)), fresh.page_size) == 2
        assert np.array_equal(fresh.kv_buffer[:, :8], pool.kv_buffer[:, :8])
        reader.close()
        assert plain.delete(storage.memkv_keys(hashes[1])[0])
        assert storage.batch_exists(hashes) == 1
    assert storage.batch_exists(hashes[3:]) == 3
    assert storage.batch_exists([]) == 0 and storage.batch_get_v1([], np.zeros(0, np.int64)) == []
    storage.close()


def test_one_round_trip_per_call(sg, server):
    """batch_exists of 100 pages (200 keys) is one MemKV match_prefix call;
    a load and a store are one batch call each."""
    pool = MHAPool("page_first", size=512)
    pool.fill(range(100), np.random.default_rng(4))
    storage = make_backend(sg, pool, settings(server))
    spy = CountingClient(storage._io.client)
    storage._io.client = spy
    hashes = page_hashes(100)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(100))))
    assert storage.batch_exists(hashes) == 100
    assert storage.batch_get_v1(hashes, host_indices(pool, range(100))) == [True] * 100
    assert spy.calls == {"batch_put_ptr": 1, "match_prefix": 1, "batch_get_into_ptr": 1}
    storage.close()


def test_stores_name_the_previous_page_and_carry_the_page_hashes(sg, server):
    """Each part of a page names the same part of the page before it as its
    parent (the batch's first page: the last of the prefix keys SGLang
    passes), and every part carries the page hash and its parent's."""
    pool = MHAPool("page_first", size=64)
    pool.fill(range(3), np.random.default_rng(5))
    storage = make_backend(sg, pool, settings(server))
    spy = CountingClient(storage._io.client)
    storage._io.client = spy
    prior, *hashes = page_hashes(4)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(3)), HiCacheStorageExtraInfo([prior])))
    (keys, _, _), kwargs = spy.last["batch_put_ptr"]
    options = kwargs["options"]
    assert len(options) == len(keys) == 6
    chain = [prior] + hashes
    for i, key in enumerate(keys):
        page, part = divmod(i, 2)
        assert key == storage.memkv_keys(hashes[page])[part]
        assert options[i].parent_key == storage.memkv_keys(chain[page])[part]
        assert options[i].block_hash == bytes.fromhex(hashes[page])
        assert options[i].parent_hash == bytes.fromhex(chain[page])
    # Without prefix keys the batch's first page heads its chain.
    more = page_hashes(2)
    assert all(storage.batch_set_v1(more, host_indices(pool, range(2)), HiCacheStorageExtraInfo()))
    first, second = spy.last["batch_put_ptr"][1]["options"][0], spy.last["batch_put_ptr"][1]["options"][2]
    assert first.parent_key is None and first.parent_hash is None
    assert second.parent_key == storage.memkv_keys(more[0])[0]
    assert storage.batch_exists(hashes) == 3
    storage.close()


def test_wrongly_sized_values_are_misses(sg, server):
    """A part replaced by a shorter or a longer value: that page misses (and
    stops the prefix); the pages before it load."""
    pool = MHAPool("page_first")
    pool.fill(range(4), np.random.default_rng(5))
    storage = make_backend(sg, pool, settings(server))
    hashes = page_hashes(4)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(4))))
    size = storage.memkv_stats()["page_bytes"] // 2
    with server.client() as plain:
        plain.put(storage.memkv_keys(hashes[1])[0], b"s" * (size - 8))
        plain.put(storage.memkv_keys(hashes[3])[1], b"l" * (size + 8))
    fresh = MHAPool("page_first")
    reader = make_backend(sg, fresh, settings(server))
    assert reader.batch_get_v1(hashes, host_indices(fresh, range(4))) == [True, False, True, False]
    assert np.array_equal(fresh.page(8), pool.page(8))
    fresh.kv_buffer[...] = 0
    assert load(reader, hashes, host_indices(fresh, range(4)), fresh.page_size) == 1
    assert np.array_equal(fresh.page(0), pool.page(0))
    storage.close()
    reader.close()


def test_two_models_or_tp_layouts_never_share_pages(sg, server):
    """What one configuration stored is invisible to another model, another
    TP rank or size, another layout and another namespace; the same
    configuration in a new instance sees it all."""
    pool = MHAPool("page_first")
    pool.fill(range(4), np.random.default_rng(6))
    hashes = page_hashes(4)
    a = make_backend(sg, pool, settings(server), model="org/model-a", tp_rank=0, tp_size=2)
    assert all(a.batch_set_v1(hashes, host_indices(pool, range(4))))

    others = [
        make_backend(sg, MHAPool("page_first"), settings(server), model="org/model-b", tp_rank=0, tp_size=2),
        make_backend(sg, MHAPool("page_first"), settings(server), model="org/model-a", tp_rank=0, tp_size=4),
        make_backend(sg, MHAPool("page_first"), settings(server), model="org/model-a", tp_rank=1, tp_size=2),
        make_backend(sg, MHAPool("page_first"), settings(server), model="org/model-a", tp_rank=0, tp_size=2,
                     pp_rank=0, pp_size=2),
        make_backend(sg, MHAPool("layer_first"), settings(server), model="org/model-a", tp_rank=0, tp_size=2),
        make_backend(sg, MHAPool("page_first", dtype=np.float32), settings(server), model="org/model-a",
                     tp_rank=0, tp_size=2),
        make_backend(sg, MHAPool("page_first"), settings(server, namespace="team-b"), model="org/model-a",
                     tp_rank=0, tp_size=2),
    ]
    for other in others:
        assert other.batch_exists(hashes) == 0, other.memkv_keys(hashes[0])
        assert other.batch_get_v1(hashes, host_indices(other.mem_pool_host, range(4))) == [False] * 4
        other.close()
    again = make_backend(sg, MHAPool("page_first"), settings(server), model="org/model-a", tp_rank=0, tp_size=2)
    assert again.batch_exists(hashes) == 4

    page_bytes = a.memkv_stats()["page_bytes"]
    assert a.namespace == "sglang/org-model-a"
    assert a.memkv_keys(hashes[0]) == [
        namespaced("sglang/org-model-a", hashes[0], "org-model-a", "tp0of2", "pp0of1", "page_first",
                   f"{page_bytes}B", part) for part in ("k", "v")]
    cp = make_backend(sg, MHAPool("page_first"), settings(server, namespace="shared"), cp_rank=1, cp_size=2)
    assert cp.memkv_keys(hashes[0])[0].split(b"/")[:5] == [b"shared", hashes[0].encode(), b"org-model-a",
                                                           b"tp0of1", b"pp0of1"]
    assert b"/cp1of2/" in cp.memkv_keys(hashes[0])[0]
    for backend in (a, again, cp):
        backend.close()


def test_mla_only_tp_rank_0_writes(sg, server):
    """MLA: rank 1's store returns True and writes nothing; rank 0's pages
    are read by every rank (same keys, no tp part)."""
    rng = np.random.default_rng(7)
    pool0, pool1 = MLAPool("page_first"), MLAPool("page_first")
    hashes = page_hashes(5)
    pool1.fill(range(5), rng)
    rank1 = make_backend(sg, pool1, settings(server), is_mla=True, tp_rank=1, tp_size=2)
    rank0 = make_backend(sg, pool0, settings(server), is_mla=True, tp_rank=0, tp_size=2)
    assert rank0.memkv_keys(hashes[0]) == rank1.memkv_keys(hashes[0])
    assert b"/tp" not in rank0.memkv_keys(hashes[0])[0]

    assert rank1.batch_set_v1(hashes, host_indices(pool1, range(5))) == [True] * 5
    assert rank1.batch_set(hashes[:1], [pool1.page(0).ravel()]) is True
    with server.client() as plain:
        assert plain.batch_exists([k for h in hashes for k in rank0.memkv_keys(h)]).statuses == [1] * 5
    assert rank0.batch_exists(hashes) == 0 and rank1.batch_exists(hashes) == 0

    pool0.fill(range(5), rng)
    assert backup(rank0, hashes, host_indices(pool0, range(5)), pool0.page_size) == 5
    assert rank1.batch_exists(hashes) == 5
    assert load(rank1, hashes, host_indices(pool1, range(10, 15)), pool1.page_size) == 5
    for i in range(5):
        assert np.array_equal(pool1.page((10 + i) * 4), pool0.page(i * 4))
    rank0.close()
    rank1.close()


@pytest.mark.parametrize("setting, value, named", [
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
])
def test_bad_settings_are_refused_naming_the_setting(sg, server, setting, value, named):
    with pytest.raises(ConfigError) as e:
        make_backend(sg, MHAPool(), settings(server, **{setting: value}))
    assert named in str(e.value) and "sglang" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_required_settings_and_the_environment(sg, server, monkeypatch):
    """servers and auth_key are required: from the extra config or MEMKV_*; a
    bad MEMKV_* value is refused naming the variable."""
    base = settings(server, servers=None, auth_key=None, timeout_ms=None)
    with pytest.raises(ConfigError, match="no servers.*MEMKV_SERVERS"):
        make_backend(sg, MHAPool(), base)
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    with pytest.raises(ConfigError, match="no auth_key.*MEMKV_AUTH_KEY"):
        make_backend(sg, MHAPool(), base)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_NAMESPACE", "from-env")
    pool = MHAPool()
    pool.fill(range(2), np.random.default_rng(8))
    storage = make_backend(sg, pool, base)
    assert storage.namespace == "from-env"
    hashes = page_hashes(2)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(2)))) and storage.batch_exists(hashes) == 2
    storage.close()
    monkeypatch.setenv("MEMKV_TIMEOUT_MS", "soon")
    with pytest.raises(ConfigError, match="MEMKV_TIMEOUT_MS"):
        make_backend(sg, MHAPool(), base)


def test_keys_sglang_puts_in_the_extra_config_are_accepted(sg, server):
    extra = settings(server, prefetch_threshold=256, prefetch_timeout_base=2, prefetch_timeout_per_ki_token=0.1,
                     prefetch_timeout_max=30, hicache_storage_pass_prefix_keys=True, tp_lcm_size=4,
                     interface_v1="1", allocator="shm")
    # Every key SGLang reads from the extra config, and only those, is passed over.
    assert set(extra) - {"servers", "auth_key", "transport", "timeout_ms"} == sg.SGLANG_KEYS
    storage = make_backend(sg, MHAPool(), extra)
    assert storage.zero_copy and issubclass(sg.MemKVHiCacheStorage, HiCacheStorage)
    storage.close()


def test_allocator_shm_starts_and_stores(sg, server):
    """SGLang reads "allocator" from the extra config (its host pool in shared
    memory) and leaves it in the dict the backend gets: the backend starts and
    serves pages, the key changing nothing in it."""
    pool = MHAPool()
    pool.fill(range(3), np.random.default_rng(21))
    storage = make_backend(sg, pool, settings(server, allocator="shm"))
    hashes = page_hashes(3)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(3))))
    assert storage.batch_exists(hashes) == 3
    storage.close()


@pytest.mark.parametrize("typo", ["allocater", "Allocator", "interface_v2", "prefetch_treshold"])
def test_misspelt_sglang_keys_are_still_refused(sg, server, typo):
    with pytest.raises(ConfigError) as e:
        make_backend(sg, MHAPool(), settings(server, **{typo: "shm"}))
    assert f"unknown setting(s) '{typo}'" in str(e.value) and "sglang" in str(e.value)


def test_server_killed_then_restarted(sg):
    """A dead server: misses, failed stores, prefix 0, None; no exception and
    no wait. The same address restarted (empty): stores and loads work again,
    the old pages are gone."""
    first = restartable_server()
    pool = MHAPool("page_first")
    pool.fill(range(6), np.random.default_rng(9))
    storage = make_backend(sg, pool, settings(first, timeout_ms=500))
    hashes = page_hashes(6)
    assert backup(storage, hashes, host_indices(pool, range(6)), pool.page_size) == 6
    address, key = first.address, first.auth_key
    first._process.kill()
    first._process.wait()
    first.stop()

    fresh = MHAPool("page_first")
    reader = make_backend(sg, fresh, settings(first, timeout_ms=500, address=None))
    calls = [
        (lambda: storage.batch_exists(hashes), 0),
        (lambda: storage.exists(hashes[0]), False),
        (lambda: reader.batch_get_v1(hashes, host_indices(fresh, range(6))), [False] * 6),
        (lambda: load(reader, hashes, host_indices(fresh, range(6)), fresh.page_size), 0),
        (lambda: storage.batch_set_v1(hashes, host_indices(pool, range(6))), [False] * 6),
        (lambda: backup(storage, hashes, host_indices(pool, range(6)), pool.page_size), 0),
        (lambda: storage.get(hashes[0], np.zeros(64, np.uint8)), None),
        (lambda: storage.batch_set(hashes[:1], [pool.page(0).ravel()]), False),
    ]
    for call, expected in calls:
        start = time.monotonic()
        assert call() == expected
        assert time.monotonic() - start < 2.0
    # The four stores and gets count an error each; a lookup is a match_prefix,
    # for which a server that cannot be asked is a miss, as in the client.
    assert storage.memkv_stats()["errors"] >= 4 and reader.memkv_stats()["errors"] >= 2
    assert not fresh.kv_buffer.any()

    second = start_server(auth_key=key, address=address)
    try:
        assert second.address == address
        deadline = time.monotonic() + 10
        while not all(storage.batch_set_v1(hashes[:3], host_indices(pool, range(3)))):
            assert time.monotonic() < deadline, "no store succeeded on the restarted server"
            time.sleep(0.02)  # the client retries a server marked down after ~200 ms
        assert storage.batch_exists(hashes) == 3  # pages 3..5 went with the old server
        while reader.batch_exists(hashes) != 3:
            assert time.monotonic() < deadline, "the reader did not see the restarted server"
            time.sleep(0.02)
        assert load(reader, hashes, host_indices(fresh, range(6)), fresh.page_size) == 3
        assert np.array_equal(fresh.kv_buffer[:, :12], pool.kv_buffer[:, :12]) and not fresh.kv_buffer[:, 12:].any()
    finally:
        storage.close()
        reader.close()
        second.stop()


def test_stopped_server_costs_at_most_timeout_ms(sg):
    """A server that stops answering (SIGSTOP): each call gives up after
    timeout_ms with a miss; once it answers again, so does the backend."""
    s = start_server()
    pool = MHAPool("page_first")
    pool.fill(range(3), np.random.default_rng(10))
    storage = make_backend(sg, pool, settings(s, timeout_ms=300))
    hashes = page_hashes(3)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(3))))
    s._process.send_signal(signal.SIGSTOP)
    wait_state(s._process.pid, stopped=True)
    try:
        for call, expected in [(lambda: storage.batch_exists(hashes), 0),
                               (lambda: storage.batch_get_v1(hashes, host_indices(MHAPool(), range(3))), [False] * 3),
                               (lambda: storage.batch_set_v1(hashes, host_indices(pool, range(3))), [False] * 3)]:
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
        storage.close()
        s.stop()


def test_flat_pages_without_interface_v1(sg, server):
    """SGLang without interface_v1 calls batch_set/batch_get/get/set/exists
    with flat page tensors (here numpy): stored under their own key, read into
    the given buffers, batch_set is True only when every page was stored."""
    pool = MHAPool("page_first")
    pool.fill(range(4), np.random.default_rng(11))
    storage = make_backend(sg, pool, settings(server, interface_v1=None))
    assert not storage.zero_copy
    hashes = page_hashes(4)
    pages = [pool.page(i * 4).ravel() for i in range(4)]
    assert storage.batch_set(hashes[:3], pages[:3]) is True
    assert storage.set(hashes[3], pages[3]) is True
    assert storage.batch_exists(hashes) == 4 and storage.exists(hashes[2])
    assert storage.memkv_flat_key(hashes[0]).endswith(b"/page")

    targets = [np.zeros_like(p) for p in pages]
    got = storage.batch_get(hashes, targets)
    assert all(g is t for g, t in zip(got, targets))
    assert all(np.array_equal(t, p) for t, p in zip(targets, pages))
    assert bytes(storage.get(hashes[1])) == pages[1].tobytes()
    raw = np.zeros_like(pages[2])
    assert storage.get(hashes[2], raw.ctypes.data, raw.nbytes) == raw.ctypes.data
    assert np.array_equal(raw, pages[2])
    assert storage.get(page_hashes(1)[0], np.zeros_like(pages[0])) is None

    with server.client() as plain:
        plain.delete(storage.memkv_flat_key(hashes[1]))
    assert storage.batch_exists(hashes) == 1
    assert storage.batch_get(hashes[:2], [np.zeros_like(p) for p in pages[:2]])[1] is None
    not_contiguous = pool.kv_buffer[:, :4]
    assert storage.batch_set(hashes[:1], [not_contiguous]) is False  # refused, not raised
    assert storage.batch_set(page_hashes(2), [pages[0], pages[1]]) is True
    storage.close()


def test_metrics_clear_and_close(sg, server):
    pool = MHAPool("page_first")
    pool.fill(range(4), np.random.default_rng(12))
    storage = make_backend(sg, pool, settings(server), metrics=True)
    hashes = page_hashes(4)
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(4))))
    assert all(storage.batch_get_v1(hashes, host_indices(MHAPool(), range(4))))
    stats = storage.get_stats()
    assert isinstance(stats, StorageMetrics)
    assert stats.backup_pgs == [4] and stats.prefetch_pgs == [4]
    assert len(stats.backup_bandwidth) == 1 and stats.backup_bandwidth[0] > 0
    assert storage.get_stats() == StorageMetrics()
    counters = storage.memkv_stats()
    assert counters["put_ok"] == 8 and counters["get_hits"] == 8 and counters["client"]["transport"] == "tcp"

    other = make_backend(sg, pool, settings(server, namespace=storage.namespace + "-other"))
    assert all(other.batch_set_v1(hashes, host_indices(pool, range(4))))
    storage.clear()
    assert storage.batch_exists(hashes) == 0, "clear() deletes every key under the namespace"
    assert other.batch_exists(hashes) == 4, "a namespace that merely starts the same way is left alone"
    assert all(storage.batch_set_v1(hashes, host_indices(pool, range(4))))
    other.close()
    storage.close()
    storage.close()
    assert storage.batch_exists(hashes) == 0
    assert storage.batch_get_v1(hashes, host_indices(pool, range(4))) == [False] * 4
    assert storage.batch_set_v1(hashes, host_indices(pool, range(4))) == [False] * 4
    assert storage.get(hashes[0], np.zeros(8, np.uint8)) is None and storage.set(hashes[0], b"x") is False


def test_misuse_is_a_miss_not_an_exception(sg, server):
    """No registered pool, a pool that cannot describe its pages, host
    indices that do not match the keys: misses and failed stores."""
    config = HiCacheStorageConfig(0, 1, 0, 1, 0, 1, False, False, True, "m", extra_config=settings(server))
    storage = StorageBackendFactory.create_backend("dynamic", config, None)
    hashes = page_hashes(2)
    pool = MHAPool()
    assert storage.batch_exists(hashes) == 0 and storage.memkv_keys(hashes[0]) == []
    assert storage.batch_set_v1(hashes, host_indices(pool, range(2))) == [False, False]

    class BrokenPool(MHAPool):
        def get_page_buffer_meta(self, indices):
            raise ValueError("Unsupported layout: page_head")
    storage.register_mem_pool_host(BrokenPool())
    assert storage.batch_get_v1(hashes, host_indices(pool, range(2))) == [False, False]

    storage.register_mem_pool_host(pool)
    assert storage.batch_set_v1(hashes, host_indices(pool, range(3))) == [False, False]
    assert storage.batch_get_v1(hashes, host_indices(pool, range(1))) == [False, False]
    assert storage.batch_set_v1(hashes, host_indices(pool, range(2))) == [True, True]
    storage.close()


def test_threads_share_one_backend(sg, server):
    """SGLang's prefetch and backup threads call one backend at once."""
    pool = MHAPool("page_first", size=512)
    pool.fill(range(128), np.random.default_rng(13))
    storage = make_backend(sg, pool, settings(server))
    target = MHAPool("page_first", size=512)
    reader = make_backend(sg, target, settings(server))
    chains = [page_hashes(16, str(t)) for t in range(4)]
    failures: List[Any] = []

    def work(t):
        try:
            pages = range(t * 16, (t + 1) * 16)
            for _ in range(3):
                assert backup(storage, chains[t], host_indices(pool, pages), 4) == 16
                assert query(reader, chains[t]) == 16
                target.kv_buffer[:, t * 64:(t + 1) * 64] = 0
                assert load(reader, chains[t], host_indices(target, pages), 4) == 16
                assert np.array_equal(target.kv_buffer[:, t * 64:(t + 1) * 64], pool.kv_buffer[:, t * 64:(t + 1) * 64])
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failures.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    storage.close()
    reader.close()


# --------------------------------------------------------------------------- tenants: extra key and cache salt

def storage_page_hashes(tokens, page_size, extra_key=None, cache_salt=None):
    """Page hashes shaped as SGLang's HiCache makes them for L3 storage:
    SHA-256 over each page's tokens, chained from the page before
    (get_hash_str), hex. As in SGLang releases that seed a storage hash chain
    with the request namespace, a request with an extra key or a cache salt
    starts its chain from a digest of them (framed: presence, length, bytes);
    one with neither keeps the unseeded chain, the hashes of the token-only
    SGLang. The backend never recomputes them: only their shape matters."""
    prior = None
    if extra_key or cache_salt:
        framed = b"".join(b"\x01" + len(v.encode()).to_bytes(4, "big") + v.encode() if v else b"\x00"
                          for v in (extra_key, cache_salt))
        prior = hashlib.sha256(b"hicache-namespace" + framed).digest()
    out = []
    for i in range(0, len(tokens) - len(tokens) % page_size, page_size):
        h = hashlib.sha256((prior or b"") + np.asarray(tokens[i:i + page_size], dtype=np.uint32).tobytes())
        prior = h.digest()
        out.append(h.hexdigest())
    return out


def test_salted_page_hashes_keep_tenants_apart(sg, server):
    """An SGLang whose storage page hashes carry the request namespace: two
    tenants' identical prompts have different page hashes, and the backend
    keeps each hash whole in its keys, so what one tenant stored is a miss
    (exists, get) for the other and for an unsalted request, while a request
    with the same salt, in another SGLang instance, loads it all."""
    pool = MHAPool("page_first", size=64)
    pool.fill(range(6), np.random.default_rng(21))
    tokens = [7000 + t for t in range(6 * pool.page_size)]
    a = storage_page_hashes(tokens, pool.page_size, cache_salt="tenant-a")
    b = storage_page_hashes(tokens, pool.page_size, cache_salt="tenant-b")
    plain = storage_page_hashes(tokens, pool.page_size)
    lora = storage_page_hashes(tokens, pool.page_size, extra_key="tenant-a")
    assert len({a[0], b[0], plain[0], lora[0]}) == 4 and not set(a) & set(b)
    writer = make_backend(sg, pool, settings(server))
    assert backup(writer, a, host_indices(pool, range(6)), pool.page_size) == 6
    assert all(a[0].encode() in k for k in writer.memkv_keys(a[0]))

    fresh = MHAPool("page_first", size=64)
    reader = make_backend(sg, fresh, settings(server))
    for other in (b, plain, lora):
        assert query(reader, other) == 0
        assert reader.batch_get_v1(other, host_indices(fresh, range(6))) == [False] * 6
    assert not fresh.kv_buffer.any(), "a miss wrote into the host pool"
    again = storage_page_hashes(tokens, pool.page_size, cache_salt="tenant-a")
    assert query(reader, again) == 6
    assert load(reader, again, host_indices(fresh, range(6)), fresh.page_size) == 6
    assert np.array_equal(fresh.kv_buffer, pool.kv_buffer)
    writer.close()
    reader.close()


def test_request_namespace_in_extra_info_is_part_of_every_key(sg, server):
    """An SGLang whose page hashes cover the tokens only, and that passes the
    request's extra key / cache salt in the call's HiCacheStorageExtraInfo
    (an entry of its extra_info dict, or an attribute): the backend puts a
    digest of them in every key, so tenants with the same tokens never share
    a page, a tenant shares with itself, and a request without a namespace
    keeps the plain layout."""
    pool = MHAPool("page_first", size=64)
    pool.fill(range(4), np.random.default_rng(22))
    hashes = storage_page_hashes([11 + t for t in range(4 * pool.page_size)], pool.page_size)
    tenant_a = HiCacheStorageExtraInfo(extra_info={"cache_salt": "tenant-a"})
    tenant_b = HiCacheStorageExtraInfo(extra_info={"cache_salt": "tenant-b"})
    writer = make_backend(sg, pool, settings(server))
    assert backup(writer, hashes, host_indices(pool, range(4)), pool.page_size, tenant_a) == 4

    fresh = MHAPool("page_first", size=64)
    reader = make_backend(sg, fresh, settings(server))
    unsalted = HiCacheStorageExtraInfo()
    as_extra_key = HiCacheStorageExtraInfo(extra_info={"extra_key": "tenant-a"})
    for other in (tenant_b, unsalted, None, as_extra_key):
        assert reader.batch_exists(hashes, other) == 0, other
        assert reader.batch_get_v1(hashes, host_indices(fresh, range(4)), other) == [False] * 4
    assert not fresh.kv_buffer.any()
    same = HiCacheStorageExtraInfo(prefix_keys=None, extra_info={"cache_salt": "tenant-a", "other": 1})
    assert query(reader, hashes, same) == 4
    assert load(reader, hashes, host_indices(fresh, range(4)), fresh.page_size, same) == 4
    assert np.array_equal(fresh.kv_buffer, pool.kv_buffer)

    # A namespace given as an attribute of the extra info is the same namespace.
    @dataclasses.dataclass
    class ExtraInfoWithFields(HiCacheStorageExtraInfo):
        extra_key: Optional[str] = None
        cache_salt: Optional[str] = None
    assert writer.memkv_keys(hashes[0], ExtraInfoWithFields(cache_salt="tenant-a")) == \
        writer.memkv_keys(hashes[0], tenant_a)

    # The layout: one part after the namespace for a request that has one;
    # none (the layout of every earlier release) for one that has not.
    salted, plain = writer.memkv_keys(hashes[0], tenant_a)[0], writer.memkv_keys(hashes[0])[0]
    assert writer.memkv_keys(hashes[0], unsalted) == writer.memkv_keys(hashes[0])
    assert plain.split(b"/")[:3] == [b"sglang", b"org-model-a", hashes[0].encode()]
    part = salted.split(b"/")[2]
    assert part.startswith(b"ns-") and len(part) == 3 + 32
    assert salted == plain.replace(hashes[0].encode(), part + b"/" + hashes[0].encode(), 1)
    # Fields are framed, not concatenated: ("a", "bc") is not ("ab", "c").
    ns = sg.namespace_part
    assert ns({"extra_key": "a", "cache_salt": "bc"}) != ns({"extra_key": "ab", "cache_salt": "c"})
    assert ns({"extra_key": "", "cache_salt": None}) == b"" and ns(None) == b""

    # A store names its parent in the same namespace, and carries SGLang's page hashes.
    spy = CountingClient(writer._io.client)
    writer._io.client = spy
    more = storage_page_hashes([99 + t for t in range(3 * pool.page_size)], pool.page_size)
    info = HiCacheStorageExtraInfo(prefix_keys=[more[0]], extra_info={"cache_salt": "tenant-a"})
    assert all(writer.batch_set_v1(more[1:], host_indices(pool, range(2)), info))
    (keys, _, _), kwargs = spy.last["batch_put_ptr"]
    options = kwargs["options"]
    assert keys[0] == writer.memkv_keys(more[1], info)[0]
    assert options[0].parent_key == writer.memkv_keys(more[0], info)[0]
    assert options[2].parent_key == writer.memkv_keys(more[1], info)[0]
    assert options[0].block_hash == bytes.fromhex(more[1]) and options[0].parent_hash == bytes.fromhex(more[0])
    writer.close()
    reader.close()


def test_module_imports_without_sglang():
    """Without SGLang the module still imports, on a local base class."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(memkv.__file__)))
    code = ("import sys; sys.modules['sglang'] = None\n"
            "import memkv.adapters.sglang as m\n"
            "assert not m.SGLANG_AVAILABLE\n"
            "assert m.MemKVHiCacheStorage.__mro__[1].__module__ == 'memkv.adapters.sglang'\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=package_root)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# --------------------------------------------------------------------------- every client option

@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(sg, server, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in the extra config
    or by its MEMKV_* variable, is the client's."""
    def build(extra):
        storage = make_backend(sg, MHAPool(), extra)
        return storage._client, storage.close
    check_option_reaches_client(build, settings(server, transport=None, timeout_ms=None), name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(sg, server, monkeypatch, name, source):
    message = check_bad_option_is_named(lambda extra: make_backend(sg, MHAPool(), extra), ConfigError,
                                        settings(server, transport=None, timeout_ms=None), name, source, monkeypatch)
    assert message.startswith("memkv sglang adapter: ")


# --------------------------------------------------------------------------- back-pressure

def test_pages_a_busy_server_sheds_are_not_stored_and_loads_go_on(sg, server, caplog):
    """Pages 2 and 4 of six: their V part shed by an overloaded server (Busy;
    a SheddingClient in place of PageIO's client, the seam CountingClient
    uses). batch_set_v1 reports exactly those pages not stored, nothing
    raises, the shed parts are counted in stores_shed (not errors) and
    logged at INFO only; the prefix stops at page 2, and the stored pages
    load byte for byte."""
    pool = MHAPool("page_first")
    pool.fill(range(6), np.random.default_rng(21))
    storage = make_backend(sg, pool, settings(server))
    hashes = page_hashes(6, "busy")
    shed = {storage.memkv_keys(hashes[i])[1] for i in (2, 4)}
    storage._io.client = SheddingClient(storage._io.client, lambda key: key in shed)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert storage.batch_set_v1(hashes, host_indices(pool, range(6))) == [True, True, False, True, False, True]
    stats = storage.memkv_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0
    assert [r.levelno for r in caplog.records if "busy" in r.getMessage()] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert storage.batch_exists(hashes) == 2
    fresh = MHAPool("page_first")
    reader = make_backend(sg, fresh, settings(server))
    assert reader.batch_get_v1(hashes, host_indices(fresh, range(6))) == [True, True, False, True, False, True]
    for page in (0, 1, 3, 5):
        assert np.array_equal(fresh.page(page * fresh.page_size), pool.page(page * pool.page_size)), page
    reader.close()
    storage.close()


def test_a_flat_store_answered_draining_fails_like_unavailable(sg, server, caplog):
    pool = MHAPool("page_first")
    pool.fill(range(2), np.random.default_rng(22))
    storage = make_backend(sg, pool, settings(server))
    storage._io.client = SheddingClient(storage._io.client, lambda key: True, code=memkv.StatusCode.DRAINING)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert storage.batch_set_v1(page_hashes(2, "drain"), host_indices(pool, range(2))) == [False, False]
    stats = storage.memkv_stats()
    assert stats["stores_shed"] == 0 and stats["errors"] == 1
    assert any(r.levelno == logging.WARNING and "Draining" in r.getMessage() for r in caplog.records)
    storage.close()

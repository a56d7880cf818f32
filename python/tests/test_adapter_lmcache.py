"""memkv.adapters.lmcache against real memkv servers, driven as LMCache drives it.

LMCache itself is not installed here: the module `lmcache` is replaced (in
sys.modules, for this file only) by small look-alikes of what the adapter
touches: StorageBackendInterface / StoragePluginInterface with their
documented constructor and abstract methods, MemoryFormat, and a
numpy-backed MemoryObj handed out by a LocalCPUBackend look-alike. MemKV is
never mocked: every byte goes through a `memkv start` server on loopback.

- The L2 connector is driven as NativeConnectorL2Adapter does: built with
  `cls(**adapter_params)`, submit_* return a future id, the caller polls the
  one eventfd with a deadline and calls drain_completions().
- The storage plugin is built as storage_plugin_launcher does (keywords
  config, dst_device, metadata, local_cpu_backend, loop) and called as
  StorageManager calls it: batched_submit_put_task then ref_count_down,
  batched_contains / batched_get_blocking, and the async
  batched_async_contains / batched_get_non_blocking pair.
"""

import abc
import asyncio
import concurrent.futures
import ctypes
import enum
import hashlib
import importlib
import logging
import mmap
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
import types
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pytest

import memkv
import memkv.testing
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names
from shedding_client import SheddingClient

MODULE = "memkv.adapters.lmcache"
MiB = 1 << 20
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Small blocks: a server of 2 MiB blocks holds only memory / 2 MiB values, and
# these tests store many small chunks (and one of 64 MiB).
SERVER_MEMORY, BLOCK_SIZE = "256 MiB", "64 KiB"


def memkv_binary() -> str:
    return os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv")


def start_server(**options) -> memkv.testing.LocalServer:
    return memkv.testing.LocalServer(memkv_binary(), memory=SERVER_MEMORY, block_size=BLOCK_SIZE, workers=2,
                                     **options).start()


@pytest.fixture(scope="module")
def server():
    """This file's own server (it replaces conftest's session server here)."""
    s = start_server()
    yield s
    assert s.stop() == 0, s.stderr()


# --- LMCache look-alikes ------------------------------------------------------

class MemoryFormat(enum.Enum):
    UNDEFINED = 0
    KV_2LTD = 1
    KV_T2D = 2
    KV_2TD = 3
    BINARY = 4
    BINARY_BUFFER = 5
    KV_MLA_FMT = 6


class StorageBackendInterface(metaclass=abc.ABCMeta):
    """The abstract methods of LMCache's StorageBackendInterface: a backend
    missing one cannot be instantiated."""

    def __init__(self, dst_device: str = "cuda"):
        self.dst_device = dst_device

    @abc.abstractmethod
    def contains(self, key, pin=False): ...

    @abc.abstractmethod
    def exists_in_put_tasks(self, key): ...

    @abc.abstractmethod
    def batched_submit_put_task(self, keys, objs, transfer_spec=None, on_complete_callback=None): ...

    @abc.abstractmethod
    def get_blocking(self, key): ...

    @abc.abstractmethod
    def pin(self, key): ...

    @abc.abstractmethod
    def unpin(self, key): ...

    @abc.abstractmethod
    def remove(self, key, force=True): ...

    @abc.abstractmethod
    def get_allocator_backend(self): ...

    @abc.abstractmethod
    def close(self): ...

    def batched_contains(self, keys, pin=False):
        hit = 0
        for k in keys:
            if not self.contains(k, pin):
                break
            hit += 1
        return hit


class StoragePluginInterface(StorageBackendInterface):
    def __init__(self, dst_device="cuda", config=None, metadata=None, local_cpu_backend=None, loop=None):
        super().__init__(dst_device=dst_device)
        self.config = config
        self.metadata = metadata
        self.local_cpu_backend = local_cpu_backend
        self.loop = loop


@dataclass(frozen=True)
class CacheEngineKey:
    fmt: str
    model_name: str
    world_size: int
    worker_id: int
    chunk_hash: int

    def to_string(self) -> str:
        return f"{self.fmt}@{self.model_name}@{self.world_size}@{self.worker_id}@{self.chunk_hash:x}"


class MemoryObj:
    """A TensorMemoryObj look-alike over its own numpy bytes."""

    def __init__(self, shape, dtype, fmt, allocator):
        self.raw = np.zeros(int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
        self.meta = types.SimpleNamespace(shape=tuple(shape), dtype=np.dtype(dtype), fmt=fmt, ref_count=1)
        self.allocator = allocator
        self.lock = threading.Lock()

    def get_size(self):
        return self.raw.nbytes

    def get_shape(self):
        return self.meta.shape

    def get_dtype(self):
        return self.meta.dtype

    def get_memory_format(self):
        return self.meta.fmt

    @property
    def metadata(self):
        return self.meta

    @property
    def data_ptr(self) -> int:
        return int(self.raw.ctypes.data)

    @property
    def byte_array(self):
        return memoryview(self.raw)

    def ref_count_up(self):
        with self.lock:
            self.meta.ref_count += 1

    def ref_count_down(self):
        with self.lock:
            self.meta.ref_count -= 1
            assert self.meta.ref_count >= 0, "ref_count_down below zero"
            free = self.meta.ref_count == 0
        if free:
            self.allocator.free(self)


class LocalCPUBackend:
    """Hands out MemoryObjs and tracks which are still alive."""

    def __init__(self, limit=None):
        self.live = set()
        self.limit = limit
        self.lock = threading.Lock()

    def allocate(self, shapes, dtypes, fmt=MemoryFormat.KV_2LTD, eviction=True, busy_loop=True):
        assert not isinstance(shapes, list), "one KV group: one shape"
        with self.lock:
            if self.limit is not None and len(self.live) >= self.limit:
                return None
            obj = MemoryObj(shapes, dtypes, fmt, self)
            self.live.add(obj)
        return obj

    def free(self, obj):
        with self.lock:
            self.live.remove(obj)


class Metadata:
    """LMCacheMetadata's fields the plugin reads (kv_shape: layers, 2, chunk tokens, heads, head size)."""

    def __init__(self, layers=4, tokens=16, heads=2, head_size=64, dtype=np.float16, new_api=True):
        self.kv_shape = (layers, 2, tokens, heads, head_size)
        self.kv_dtype = np.dtype(dtype)
        self.use_mla = False
        self.role = "worker"
        self.chunk_size = tokens
        if new_api:
            self.get_shapes = lambda num_tokens=None: [(2, layers, num_tokens or tokens, heads * head_size)]
            self.get_dtypes = lambda: [self.kv_dtype]

    @property
    def chunk_shape(self):
        layers, kv, tokens, heads, head_size = self.kv_shape
        return (kv, layers, tokens, heads * head_size)


def lmcache_stubs():
    """The lmcache modules the adapter imports, as look-alikes."""
    names = ["lmcache", "lmcache.v1", "lmcache.v1.storage_backend", "lmcache.v1.storage_backend.abstract_backend",
             "lmcache.v1.memory_management", "lmcache.utils"]
    mods = {n: types.ModuleType(n) for n in names}
    mods["lmcache.v1.storage_backend.abstract_backend"].StorageBackendInterface = StorageBackendInterface
    mods["lmcache.v1.storage_backend.abstract_backend"].StoragePluginInterface = StoragePluginInterface
    mods["lmcache.v1.memory_management"].MemoryFormat = MemoryFormat
    mods["lmcache.utils"].CacheEngineKey = CacheEngineKey
    return mods


@pytest.fixture(scope="module")
def lm():
    """memkv.adapters.lmcache imported over the lmcache look-alikes; both are
    taken out of sys.modules afterwards."""
    stubs = lmcache_stubs()
    saved = {n: sys.modules.get(n) for n in list(stubs) + [MODULE]}
    sys.modules.update(stubs)
    sys.modules.pop(MODULE, None)
    module = importlib.import_module(MODULE)
    assert module.HAVE_LMCACHE
    yield module
    for n, m in saved.items():
        if m is None:
            sys.modules.pop(n, None)
        else:
            sys.modules[n] = m


def params(server, **extra):
    out = {"servers": [server.address], "auth_key": server.auth_key, "transport": "tcp", "timeout_ms": 5000}
    out.update(extra)
    return out


# --- driving the L2 connector as NativeConnectorL2Adapter does ---------------------

def create_native_plugin(adapter_params, class_name="MemKVL2Connector"):
    """What LMCache's native_plugin factory does: import, getattr, cls(**adapter_params),
    then check the connector's methods."""
    module = importlib.import_module(MODULE)
    connector = getattr(module, class_name)(**adapter_params)
    for method in ("event_fd", "submit_batch_get", "submit_batch_set", "submit_batch_exists",
                   "drain_completions", "close", "submit_batch_delete"):
        assert callable(getattr(connector, method, None)), method
    return connector


def wait(connector, fids, timeout_s=10.0):
    """Polls the eventfd until every future id completed; [(ok, error, bools)] in fids' order."""
    want, got = list(fids), {}
    poller = select.poll()
    poller.register(connector.event_fd(), select.POLLIN)
    deadline = time.monotonic() + timeout_s
    while any(f not in got for f in want):
        left = deadline - time.monotonic()
        assert left > 0, f"no completion for {[f for f in want if f not in got]} within {timeout_s} s"
        if not poller.poll(left * 1000):
            continue
        for fid, ok, error, bools in connector.drain_completions():
            assert isinstance(fid, int) and isinstance(ok, bool) and isinstance(error, str)
            assert fid not in got, f"future {fid} completed twice"
            got[fid] = (ok, error, bools)
    return [got[f] for f in want]


def one(connector, fid, timeout_s=10.0):
    return wait(connector, [fid], timeout_s)[0]


def l2_key(model, chunk_hash: bytes, kv_rank=0, group=0, salt=None):
    """LMCache's native-connector key string for an ObjectKey."""
    key = f"{model}@{kv_rank:08x}@{group:x}@{chunk_hash.hex()}"
    return f"{key}@{salt}" if salt else key


def prefix_hashes(tokens, chunk):
    """Chunk hashes chained over the tokens, as LMCache's token database makes them."""
    out, prev = [], b""
    for i in range(0, len(tokens), chunk):
        prev = hashlib.sha256(prev + np.asarray(tokens[i:i + chunk], dtype=np.int64).tobytes()).digest()
        out.append(prev)
    return out


class Arena:
    """L1 memory as the L2 adapter hands it over: one region, each chunk's
    memoryview a ctypes c_ubyte array at its address (MemoryObj.byte_array)."""

    def __init__(self, chunks, chunk_bytes):
        self.array = np.zeros((chunks, chunk_bytes), dtype=np.uint8)
        self.chunk_bytes = chunk_bytes

    def views(self, rows):
        base = self.array.ctypes.data
        return [memoryview((ctypes.c_ubyte * self.chunk_bytes).from_address(base + r * self.chunk_bytes))
                for r in rows]


def chunk_bytes_of(chunk_hash: bytes, size: int) -> np.ndarray:
    return np.random.default_rng(int.from_bytes(chunk_hash[:8], "little")).integers(0, 256, size, dtype=np.uint8)


# --- L2 connector -----------------------------------------------------------------

def test_l2_connector_is_built_and_checked_as_the_native_plugin_factory_does(lm, server):
    connector = create_native_plugin(params(server, io_threads=2, namespace="l2-factory"))
    try:
        fd = connector.event_fd()
        assert isinstance(fd, int) and fd >= 0
        assert connector.drain_completions() == []
        assert not select.select([fd], [], [], 0)[0], "nothing completed: the eventfd must not be readable"
        fid = connector.submit_batch_exists([l2_key("m", b"\x01" * 32)])
        assert isinstance(fid, int)
        assert one(connector, fid) == (True, "", [False])
        assert not select.select([fd], [], [], 0)[0], "drain_completions must reset the eventfd"
    finally:
        connector.close()


def test_l2_store_lookup_load_across_requests(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-requests"))
    size, chunk = 32 * 1024, 16
    try:
        arena = Arena(8, size)
        # Request 1: 4 chunks, all misses, then stored.
        tokens1 = list(range(4 * chunk))
        keys1 = [l2_key("llama", h) for h in prefix_hashes(tokens1, chunk)]
        assert one(connector, connector.submit_batch_exists(keys1)) == (True, "", [False] * 4)
        for row, k in enumerate(keys1):
            arena.array[row] = chunk_bytes_of(bytes.fromhex(k.split("@")[3]), size)
        ok, error, bools = one(connector, connector.submit_batch_set(keys1, arena.views(range(4))))
        assert (ok, error, bools) == (True, "", [True] * 4)
        # Request 2 shares request 1's 4 chunks and adds 2.
        tokens2 = tokens1 + list(range(1000, 1000 + 2 * chunk))
        keys2 = [l2_key("llama", h) for h in prefix_hashes(tokens2, chunk)]
        assert keys2[:4] == keys1
        assert one(connector, connector.submit_batch_exists(keys2))[2] == [True] * 4 + [False] * 2
        arena.array[:] = 0
        assert one(connector, connector.submit_batch_get(keys2[:4], arena.views(range(4)))) == (True, "", [True] * 4)
        for row, k in enumerate(keys1):
            assert np.array_equal(arena.array[row], chunk_bytes_of(bytes.fromhex(k.split("@")[3]), size))
        for row, k in zip((4, 5), keys2[4:]):
            arena.array[row] = chunk_bytes_of(bytes.fromhex(k.split("@")[3]), size)
        assert one(connector, connector.submit_batch_set(keys2[4:], arena.views([4, 5])))[0]
        # Request 3: the whole of request 2 is there.
        assert one(connector, connector.submit_batch_exists(keys2))[2] == [True] * 6
        arena.array[:] = 0
        ok, _, bools = one(connector, connector.submit_batch_get(keys2, arena.views(range(6))))
        assert ok and bools == [True] * 6
        for row, k in enumerate(keys2):
            assert np.array_equal(arena.array[row], chunk_bytes_of(bytes.fromhex(k.split("@")[3]), size))
        stats = connector.get_stats()
        assert stats["put_ok"] == 6 and stats["get_hits"] == 10
    finally:
        connector.close()


def test_l2_prefix_stops_at_a_missing_middle_chunk(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-prefix"))
    try:
        keys = [l2_key("qwen", h) for h in prefix_hashes(list(range(8 * 16)), 16)]
        arena = Arena(8, 4096)
        arena.array[:] = 7
        assert one(connector, connector.submit_batch_set(keys, arena.views(range(8))))[0]
        assert one(connector, connector.submit_batch_delete([keys[3]])) == (True, "", [True])
        present = one(connector, connector.submit_batch_exists(keys))[2]
        assert present == [True, True, True, False, True, True, True, True]
        # LMCache's lookup takes the leading run of set bits: 3 chunks.
        assert present.index(False) == 3
        ok, error, loaded = one(connector, connector.submit_batch_get(keys[:5], arena.views(range(5))))
        assert not ok and loaded == [True, True, True, False, True] and "1 of 5" in error
        # Deleting an absent key is not a failure.
        assert one(connector, connector.submit_batch_delete([keys[3]])) == (True, "", [True])
    finally:
        connector.close()


def test_l2_loads_land_in_the_callers_memory(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-zero-copy"))
    try:
        arena = Arena(6, 64 * 1024)
        keys = [l2_key("m", bytes([i]) * 32) for i in range(3)]
        rng = np.random.default_rng(3)
        arena.array[0:3] = rng.integers(0, 256, (3, 64 * 1024), dtype=np.uint8)
        expected = arena.array[0:3].copy()
        assert one(connector, connector.submit_batch_set(keys, arena.views([0, 1, 2])))[0]
        # Load into rows 5, 3, 4: the bytes must appear in those rows of the arena.
        assert one(connector, connector.submit_batch_get(keys, arena.views([5, 3, 4])))[0]
        assert np.array_equal(arena.array[5], expected[0])
        assert np.array_equal(arena.array[3], expected[1])
        assert np.array_equal(arena.array[4], expected[2])
    finally:
        connector.close()


def _kib(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1)) * 1024


def _reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("cannot reset the peak RSS (/proc/self/clear_refs)")


def test_l2_64_mib_chunk_is_not_copied(lm, server):
    """A copy of the 64 MiB chunk anywhere on the way would raise the peak RSS by 64 MiB."""
    big, slack = 64 * MiB, 24 * MiB
    connector = create_native_plugin(params(server, namespace="l2-rss"))
    key = l2_key("big", b"\x42" * 32)
    try:
        with mmap.mmap(-1, big) as mm:
            words = np.frombuffer(mm, dtype=np.uint64)
            words[:] = np.arange(words.size, dtype=np.uint64)
            view = memoryview((ctypes.c_ubyte * big).from_buffer(mm))
            _reset_peak_rss()
            start = _kib("VmHWM")
            assert one(connector, connector.submit_batch_set([key], [view]))[0]
            assert _kib("VmHWM") - start < slack, "the store copied the chunk"
            words[:] = 0
            _reset_peak_rss()
            start = _kib("VmHWM")
            assert one(connector, connector.submit_batch_get([key], [view]))[0]
            assert _kib("VmHWM") - start < slack, "the load copied the chunk"
            assert words[12345] == 12345 and words[-1] == words.size - 1
            del words
            view.release()
        assert one(connector, connector.submit_batch_delete([key]))[0]
    finally:
        connector.close()


def test_l2_value_of_another_size_is_a_miss(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-size"))
    try:
        keys = [l2_key("m", bytes([i + 10]) * 32) for i in range(3)]
        arena = Arena(3, 8192)
        arena.array[:] = 9
        assert one(connector, connector.submit_batch_set(keys, arena.views(range(3))))[0]
        # A value rewritten at another size behind the adapter's back.
        with server.client() as plain:
            plain.put(connector.key_of(keys[1]), np.ones(4096, dtype=np.uint8))
        small, large = np.zeros(4096, dtype=np.uint8), np.zeros(16384, dtype=np.uint8)
        arena.array[:] = 0
        views = [memoryview(arena.array[0]), memoryview(arena.array[1]), memoryview(arena.array[2])]
        assert one(connector, connector.submit_batch_get(keys, views))[2] == [True, False, True]
        assert one(connector, connector.submit_batch_get([keys[0], keys[2]], [small, large]))[2] == [False, False]
        # An unusable buffer fails its own key only; nothing raises.
        strided = np.zeros(16384, dtype=np.uint8)[::2]
        ok, error, bools = one(connector, connector.submit_batch_get([keys[0], keys[2]], [strided, arena.array[2]]))
        assert not ok and bools == [False, True] and "C-contiguous" in error
        ok, error, bools = one(connector, connector.submit_batch_get([keys[0]], [bytes(8192)]))
        assert not ok and bools == [False] and "read-only" in error
        ok, error, bools = one(connector, connector.submit_batch_set(keys, [arena.array[0]]))
        assert not ok and bools == [False] * 3 and "3 keys but 1 memoryviews" in error
    finally:
        connector.close()


def test_l2_namespaces_and_models_do_not_collide(lm, server):
    a = create_native_plugin(params(server, namespace="tenant-a"))
    b = create_native_plugin(params(server, namespace="tenant-b"))
    try:
        h = b"\x77" * 32
        key = l2_key("llama", h)
        one_a, one_b = np.full(1024, 1, dtype=np.uint8), np.full(1024, 2, dtype=np.uint8)
        assert one(a, a.submit_batch_set([key], [one_a]))[0]
        assert one(b, b.submit_batch_exists([key]))[2] == [False]
        assert one(b, b.submit_batch_set([key], [one_b]))[0]
        out = np.zeros(1024, dtype=np.uint8)
        assert one(a, a.submit_batch_get([key], [out]))[0] and (out == 1).all()
        assert one(b, b.submit_batch_get([key], [out]))[0] and (out == 2).all()
        # Two models, same chunk hash, one namespace.
        assert one(a, a.submit_batch_exists([l2_key("mistral", h), l2_key("llama", h, kv_rank=1)]))[2] == [False] * 2
        assert a.key_of(key) == b"tenant-a/" + key.encode()
    finally:
        a.close()
        b.close()


def test_l2_long_key_stays_within_the_key_limit(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-long"))
    try:
        key = l2_key("m" * 600, b"\x01" * 32, salt="s" * 600)
        other = l2_key("m" * 600, b"\x01" * 32, salt="s" * 599 + "t")
        stored = connector.key_of(key)
        assert len(stored) <= 1024 and stored.startswith(b"l2-long/")
        assert stored != connector.key_of(other)
        buf = np.arange(2048, dtype=np.uint8)
        assert one(connector, connector.submit_batch_set([key], [buf]))[0]
        assert one(connector, connector.submit_batch_exists([key, other]))[2] == [True, False]
        out = np.zeros(2048, dtype=np.uint8)
        assert one(connector, connector.submit_batch_get([key], [out]))[0] and np.array_equal(out, buf)
    finally:
        connector.close()


def test_l2_cache_salt_keeps_two_requests_apart(lm, server):
    """LMCache's ObjectKey carries the request's cache salt, and the native
    connector's key string ends with it (model@rank@group@hash[@salt]); the
    chunk hash itself is the tokens' only. The connector keeps the whole
    string: what one salt stored is a miss (exists, get) for another salt
    and for an unsalted request, and the same salt from another connector
    (another LMCache server) finds and loads it."""
    writer = create_native_plugin(params(server, namespace="l2-salts"))
    reader = create_native_plugin(params(server, namespace="l2-salts"))
    size, chunk = 4096, 16
    try:
        hashes = prefix_hashes(list(range(3 * chunk)), chunk)
        a = [l2_key("llama", h, salt="tenant-a") for h in hashes]
        b = [l2_key("llama", h, salt="tenant-b") for h in hashes]
        plain = [l2_key("llama", h) for h in hashes]
        arena = Arena(6, size)
        for row, h in enumerate(hashes):
            arena.array[row] = chunk_bytes_of(h, size)
        assert one(writer, writer.submit_batch_set(a, arena.views(range(3)))) == (True, "", [True] * 3)
        for other in (b, plain):
            assert one(reader, reader.submit_batch_exists(other))[2] == [False] * 3
            ok, _, loaded = one(reader, reader.submit_batch_get(other, arena.views(range(3, 6))))
            assert not ok and loaded == [False] * 3
        assert not arena.array[3:].any(), "a miss wrote into the caller's memory"
        assert one(reader, reader.submit_batch_exists(a))[2] == [True] * 3
        assert one(reader, reader.submit_batch_get(a, arena.views(range(3, 6)))) == (True, "", [True] * 3)
        assert np.array_equal(arena.array[3:], arena.array[:3])
        # The key is the namespace and LMCache's whole key string; the chunk
        # hash (a put's block hash) is the same for both salts.
        assert reader.key_of(a[0]) == b"l2-salts/" + a[0].encode() != reader.key_of(b[0])
        assert lm.chunk_hash_of(a[0]) == lm.chunk_hash_of(b[0]) == hashes[0]
    finally:
        writer.close()
        reader.close()


def test_l2_many_batches_in_flight_and_batches_over_1024_keys(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-many", io_threads=3))
    try:
        n = 1100
        keys = [l2_key("m", i.to_bytes(32, "little")) for i in range(n)]
        values = np.random.default_rng(5).integers(0, 256, (n, 512), dtype=np.uint8)
        assert one(connector, connector.submit_batch_set(keys, list(values))) == (True, "", [True] * n)
        assert one(connector, connector.submit_batch_exists(keys + ["absent@0@0@00"]))[2] == [True] * n + [False]
        # Eight batches submitted before anyone waits: every completion arrives once.
        out = np.zeros((n, 512), dtype=np.uint8)
        fids = [connector.submit_batch_get(keys[i::8], list(out[i::8])) for i in range(8)]
        assert len(set(fids)) == 8
        results = wait(connector, fids)
        assert all(ok for ok, _, _ in results)
        assert np.array_equal(out, values)
        assert one(connector, connector.submit_batch_delete(keys))[0]
        assert not any(one(connector, connector.submit_batch_exists(keys))[2])
        assert one(connector, connector.submit_batch_exists([])) == (True, "", [])
    finally:
        connector.close()


def test_l2_close_is_idempotent_and_later_submits_fail_quietly(lm, server):
    connector = create_native_plugin(params(server, namespace="l2-close"))
    connector.close()
    connector.close()
    fid = connector.submit_batch_exists(["k@0@0@00"])
    assert connector.drain_completions() == [(fid, False, "memkv lmcache: the connector is closed", [False])]


def test_l2_settings_come_from_the_environment(lm, server, monkeypatch):
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_TRANSPORT", "tcp")
    monkeypatch.setenv("MEMKV_NAMESPACE", "from-env")
    connector = create_native_plugin({})
    try:
        assert connector.namespace == "from-env"
        assert one(connector, connector.submit_batch_set(["e@0@0@01"], [np.ones(64, dtype=np.uint8)]))[0]
    finally:
        connector.close()


@pytest.mark.parametrize("bad, named", [
    ({"timeout_ms": "fast"}, "'timeout_ms' in adapter_params of --l2-adapter (native_plugin): 'fast' is not a non-negative integer"),
    ({"io_threads": 0}, "'io_threads' in adapter_params"),
    ({"transport": "udp"}, "'transport' in adapter_params of --l2-adapter (native_plugin): 'udp' is not a transport; allowed: auto, tcp, rdma"),
    ({"server": "x:1"}, "unknown setting(s) 'server' in adapter_params"),
    ({"auth_key": "abc"}, "'auth_key' in adapter_params of --l2-adapter (native_plugin): a key of 3 characters; allowed: exactly 64 hex"),
])
def test_l2_bad_setting_is_a_loud_config_error(lm, server, caplog, capsys, bad, named):
    with caplog.at_level(logging.CRITICAL, logger="memkv.adapters"):
        with pytest.raises(lm.ConfigError) as e:
            create_native_plugin({**params(server), **bad})
    assert named in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, memkv.InvalidArgument)
    assert any(r.levelno == logging.CRITICAL and str(e.value) in r.getMessage() for r in caplog.records)
    assert str(e.value) in capsys.readouterr().err


def test_l2_without_servers_names_the_setting(lm, monkeypatch, capsys):
    monkeypatch.delenv("MEMKV_SERVERS", raising=False)
    with pytest.raises(lm.ConfigError, match="no servers: set 'servers' in adapter_params .* or MEMKV_SERVERS"):
        create_native_plugin({"auth_key": "0" * 64})
    assert "no servers" in capsys.readouterr().err


# --- faults: a server that dies and comes back ----------------------------------------

@pytest.fixture
def own_server():
    """A server of this test alone, which the test may stop and restart on the same port."""
    holder = {"server": start_server(extra_args=["--port", str(memkv.testing.restartable_port())])}

    def restart():
        old = holder["server"]
        port = old.address.rsplit(":", 1)[1]
        holder["server"] = start_server(auth_key=old.auth_key, extra_args=["--port", port])
        assert holder["server"].address == old.address
        return holder["server"]

    holder["restart"] = restart
    yield holder
    holder["server"].stop()


class frozen:
    """The server process stopped (SIGSTOP) for the block: connections stay open, nothing answers."""

    def __init__(self, server):
        self.pid = server._process.pid

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)
        # The signal is delivered asynchronously: wait until every thread is stopped.
        deadline = time.monotonic() + 10
        while not all(self._state(t) in "Tt" for t in os.listdir(f"/proc/{self.pid}/task")):
            assert time.monotonic() < deadline, "the server did not stop"

    def _state(self, tid):
        try:
            with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:  # a thread that just exited
            return "T"

    def __exit__(self, *exc):
        os.kill(self.pid, signal.SIGCONT)


def test_l2_server_down_gives_misses_then_a_restarted_server_is_used(lm, own_server):
    server = own_server["server"]
    connector = create_native_plugin(params(server, namespace="l2-fault", timeout_ms=1000,
                                            connect_timeout_ms=500))
    try:
        keys = [l2_key("m", bytes([i]) * 32) for i in range(4)]
        arena = Arena(4, 16384)
        arena.array[:] = 5
        assert one(connector, connector.submit_batch_set(keys, arena.views(range(4))))[0]
        # A server that stops answering: the batch ends in misses once timeout_ms has passed.
        with frozen(server):
            start = time.monotonic()
            ok, _, loaded = one(connector, connector.submit_batch_get(keys, arena.views(range(4))), timeout_s=10)
            assert time.monotonic() - start < 2.5, "a hung server must not hold a batch much past timeout_ms"
        assert not ok and loaded == [False] * 4
        deadline = time.monotonic() + 15
        while not one(connector, connector.submit_batch_get(keys, arena.views(range(4))))[0]:
            assert time.monotonic() < deadline, "the server that answers again was never used"

        server.stop()
        start = time.monotonic()
        fids = [connector.submit_batch_exists(keys), connector.submit_batch_get(keys, arena.views(range(4))),
                connector.submit_batch_set(keys, arena.views(range(4))), connector.submit_batch_delete(keys[:1])]
        (ex_ok, _, present), (get_ok, get_err, loaded), (set_ok, set_err, stored), (del_ok, _, deleted) = \
            wait(connector, fids, timeout_s=5)
        assert time.monotonic() - start < 3, "a dead server must not hold a batch past timeout_ms"
        assert present == [False] * 4 and loaded == [False] * 4 and stored == [False] * 4 and deleted == [False]
        assert not get_ok and not set_ok and not del_ok and "4 of 4" in get_err and "4 of 4" in set_err
        assert connector.get_stats()["errors"] > 0

        own_server["restart"]()
        deadline = time.monotonic() + 15
        while not one(connector, connector.submit_batch_set(keys[:1], arena.views([0])))[0]:
            assert time.monotonic() < deadline, "the restarted server was never used"
        # The restarted server is empty: the other chunks are misses now.
        assert one(connector, connector.submit_batch_exists(keys))[2] == [True, False, False, False]
        assert one(connector, connector.submit_batch_set(keys, arena.views(range(4))))[0]
        arena.array[:] = 0
        assert one(connector, connector.submit_batch_get(keys, arena.views(range(4))))[0]
        assert (arena.array == 5).all()
    finally:
        connector.close()


# --- the storage plugin, driven as StorageManager drives it --------------------------------

class Config:
    """LMCacheEngineConfig's fields the plugin launcher reads."""

    def __init__(self, extra_config, storage_plugins=("memkv",)):
        self.storage_plugins = list(storage_plugins)
        self.extra_config = extra_config


def plugin_config(server, name="memkv", **settings):
    extra = {f"storage_plugin.{name}.module_path": MODULE,
             f"storage_plugin.{name}.class_name": "MemKVStorageBackend"}
    for k, v in params(server, **settings).items():
        extra[f"storage_plugin.{name}.{k}"] = v
    return Config(extra, [name])


def launch_plugins(config, metadata, cpu, loop=None, swallow=False):
    """storage_plugin_launcher: import each plugin's module and build its
    class with keywords; with swallow, a failure is only logged, as LMCache does."""
    backends = {}
    for name in config.storage_plugins:
        try:
            module = importlib.import_module(config.extra_config[f"storage_plugin.{name}.module_path"])
            cls = getattr(module, config.extra_config[f"storage_plugin.{name}.class_name"])
            backends[name] = cls(config=config, dst_device="cpu", metadata=metadata, local_cpu_backend=cpu,
                                 loop=loop)
        except Exception as e:
            if not swallow:
                raise
            logging.getLogger("lmcache").error(f"Failed to create backend {name}: {e}")
    return backends


class StorageManager:
    """The calls StorageManager makes on a plugin backend whose allocator is LocalCPUBackend."""

    def __init__(self, backend, cpu):
        self.backend, self.cpu = backend, cpu
        assert backend.get_allocator_backend() is cpu

    def put(self, keys, objs, timeout_s=10.0):
        futures = self.backend.batched_submit_put_task(keys, objs, transfer_spec=None)
        for obj in objs:
            obj.ref_count_down()
        done, pending = concurrent.futures.wait(futures or [], timeout=timeout_s)
        assert not pending, "a store did not finish"
        return [ok for f in done for ok in f.result()]

    def lookup(self, keys):
        return self.backend.batched_contains(keys, pin=False)

    def retrieve(self, keys):
        return self.backend.batched_get_blocking(keys)

    def async_lookup_and_prefetch(self, keys, chunk_tokens):
        async def run():
            hit = await self.backend.batched_async_contains("req", keys, False)
            if hit == 0:
                return []
            return await self.backend.batched_get_non_blocking(
                "req", keys[:hit], {"cum_chunk_lengths": [i * chunk_tokens for i in range(hit + 1)]})
        return asyncio.run(run())


def engine_keys(model, tokens, chunk, worker=0):
    return [CacheEngineKey("vllm", model, 1, worker, int.from_bytes(h[:8], "little"))
            for h in prefix_hashes(tokens, chunk)]


def filled(cpu, metadata, key):
    obj = cpu.allocate(metadata.chunk_shape, metadata.kv_dtype, MemoryFormat.KV_2LTD)
    obj.raw[:] = chunk_bytes_of(key.chunk_hash.to_bytes(8, "little"), obj.raw.nbytes)
    return obj


def holds(obj, key):
    return np.array_equal(obj.raw, chunk_bytes_of(key.chunk_hash.to_bytes(8, "little"), obj.raw.nbytes))


@pytest.fixture
def plugin(lm, server):
    """A storage plugin launched as LMCache does, its LocalCPUBackend and a StorageManager over them."""
    made = []

    def make(namespace, srv=None, metadata=None, **settings):
        cpu = LocalCPUBackend()
        metadata = metadata or Metadata()
        backend = launch_plugins(plugin_config(srv or server, namespace=namespace, **settings), metadata, cpu)["memkv"]
        made.append(backend)
        return backend, cpu, StorageManager(backend, cpu), metadata

    yield make
    for backend in made:
        backend.close()


def test_plugin_is_a_storage_plugin_built_with_lmcache_keywords(lm, plugin):
    backend, cpu, _, metadata = plugin("sp-build")
    assert isinstance(backend, StoragePluginInterface)
    assert backend.plugin_name == "memkv" and backend.namespace == "sp-build"
    assert backend.local_cpu_backend is cpu and backend.metadata is metadata and backend.dst_device == "cpu"
    assert str(backend) == "MemKVStorageBackend"


@pytest.mark.parametrize("new_api", [True, False], ids=["get_shapes", "kv_shape"])
def test_plugin_store_lookup_load_across_requests(lm, plugin, new_api):
    backend, cpu, manager, md = plugin(f"sp-requests-{new_api}", metadata=Metadata(new_api=new_api))
    chunk = md.chunk_size
    tokens1 = list(range(3 * chunk))
    keys1 = engine_keys("llama", tokens1, chunk)
    assert manager.lookup(keys1) == 0
    assert manager.put(keys1, [filled(cpu, md, k) for k in keys1]) == [True] * 3
    assert not cpu.live, "the stored chunks' MemoryObjs must be released once stored"
    assert not any(backend.exists_in_put_tasks(k) for k in keys1)

    tokens2 = tokens1 + list(range(500, 500 + 2 * chunk))
    keys2 = engine_keys("llama", tokens2, chunk)
    assert manager.lookup(keys2) == 3
    objs = manager.retrieve(keys2[:3])
    assert all(holds(o, k) for o, k in zip(objs, keys1))
    assert all(o in cpu.live and o.meta.ref_count == 1 for o in objs)
    assert all(o.meta.shape == md.chunk_shape and o.meta.fmt == MemoryFormat.KV_2LTD for o in objs)
    for o in objs:
        o.ref_count_down()
    assert manager.put(keys2[3:], [filled(cpu, md, k) for k in keys2[3:]]) == [True] * 2

    assert manager.lookup(keys2) == 5
    got = manager.async_lookup_and_prefetch(keys2, chunk)
    assert len(got) == 5 and all(holds(o, k) for o, k in zip(got, keys2))
    single = backend.get_blocking(keys2[4])
    assert holds(single, keys2[4])
    future = backend.get_non_blocking(keys2[0])
    assert holds(future.result(timeout=10), keys2[0])
    for o in got + [single, future.result()]:
        o.ref_count_down()
    assert not cpu.live


def test_plugin_stores_chain_each_chunk_to_the_one_before_it(lm, plugin):
    """A store names the previous chunk of the request as each chunk's
    parent (the first chunk heads the chain) and carries the chunk hashes as
    ints; the lookup is one match_prefix call."""
    backend, cpu, manager, md = plugin("sp-chain")
    keys = engine_keys("qwen", list(range(4 * md.chunk_size)), md.chunk_size)
    client = backend._core.io.client
    seen = []
    real_put = client.batch_put_ptr

    class Recording:  # the real client, with its batch_put_ptr arguments kept
        def __getattr__(self, name):
            return getattr(client, name)

        def batch_put_ptr(self, *args, **kwargs):
            seen.append(kwargs.get("options"))
            return real_put(*args, **kwargs)

        def match_prefix(self, names):
            seen.append(("match", len(names)))
            return client.match_prefix(names)

    backend._core.io.client = Recording()
    assert manager.put(keys, [filled(cpu, md, k) for k in keys]) == [True] * 4
    options = seen[0]
    int64 = [k.chunk_hash - (1 << 64) if k.chunk_hash >= 1 << 63 else k.chunk_hash for k in keys]  # as sent
    assert [o.block_hash for o in options] == int64
    assert [o.parent_key for o in options] == [None] + [backend.key_of(k) for k in keys[:3]]
    assert [o.parent_hash for o in options] == [None] + int64[:3]
    assert {o.hash_kind for o in options} == {"int64"}
    assert manager.lookup(keys) == 4 and seen[-1] == ("match", 4)


def test_plugin_prefix_stops_at_a_missing_middle_chunk(lm, plugin):
    backend, cpu, manager, md = plugin("sp-prefix")
    keys = engine_keys("qwen", list(range(6 * md.chunk_size)), md.chunk_size)
    assert manager.put(keys, [filled(cpu, md, k) for k in keys]) == [True] * 6
    assert backend.remove(keys[2]) is True
    assert manager.lookup(keys) == 2
    assert [backend.contains(k) for k in keys] == [True, True, False, True, True, True]
    got = manager.async_lookup_and_prefetch(keys, md.chunk_size)
    assert len(got) == 2
    for o in got:
        o.ref_count_down()
    # A gap in what loads (not only in what exists) also ends the prefix, and releases what follows it.
    objs = asyncio.run(backend.batched_get_non_blocking("req", keys, None))
    assert len(objs) == 2 and all(holds(o, k) for o, k in zip(objs, keys))
    for o in objs:
        o.ref_count_down()
    assert not cpu.live
    assert backend.batched_remove(keys) == 6 and manager.lookup(keys) == 0


def test_plugin_loads_into_the_memory_objects_it_allocates(lm, plugin):
    backend, cpu, manager, md = plugin("sp-zero-copy")
    keys = engine_keys("m", list(range(2 * md.chunk_size)), md.chunk_size)
    manager.put(keys, [filled(cpu, md, k) for k in keys])
    allocated = []
    original = cpu.allocate

    def spy(*args, **kwargs):
        obj = original(*args, **kwargs)
        allocated.append((obj, obj.data_ptr))
        return obj

    cpu.allocate = spy
    objs = manager.retrieve(keys)
    assert [o for o, _ in allocated] == objs, "each chunk must be read into the MemoryObj allocated for it"
    assert all(o.data_ptr == p and holds(o, k) for (o, p), k in zip(allocated, keys))
    for o in objs:
        o.ref_count_down()


def test_plugin_partial_chunk_and_wrong_size_value(lm, plugin, server):
    backend, cpu, manager, md = plugin("sp-size")
    keys = engine_keys("m", list(range(3 * md.chunk_size)), md.chunk_size)
    partial = cpu.allocate((2, 4, md.chunk_size // 2, 128), md.kv_dtype, MemoryFormat.KV_2LTD)
    assert backend.batched_submit_put_task([keys[0]], [partial]) is None, "a partial chunk is not stored"
    partial.ref_count_down()
    assert manager.put(keys[1:], [filled(cpu, md, k) for k in keys[1:]]) == [True, True]
    with server.client() as plain:
        plain.put(backend.key_of(keys[2]), np.zeros(1000, dtype=np.uint8))
    assert manager.lookup(keys[1:]) == 2
    objs = manager.retrieve(keys)
    assert objs[0] is None and holds(objs[1], keys[1]) and objs[2] is None
    objs[1].ref_count_down()
    assert not cpu.live, "the MemoryObjs of misses must be released"
    # No room in LocalCPUBackend: misses, not errors.
    cpu.limit = 0
    assert manager.retrieve(keys[1:2]) == [None]


def test_plugin_namespaces_and_models_do_not_collide(lm, plugin):
    a, cpu_a, manager_a, md = plugin("tenant-a")
    b, cpu_b, manager_b, _ = plugin("tenant-b")
    tokens = list(range(2 * md.chunk_size))
    llama, mistral = engine_keys("llama", tokens, md.chunk_size), engine_keys("mistral", tokens, md.chunk_size)
    assert manager_a.put(llama, [filled(cpu_a, md, k) for k in llama]) == [True, True]
    assert manager_a.lookup(mistral) == 0
    assert manager_b.lookup(llama) == 0
    assert a.key_of(llama[0]) == b"tenant-a/" + llama[0].to_string().encode()
    rank1 = [CacheEngineKey(k.fmt, k.model_name, 2, 1, k.chunk_hash) for k in llama]
    assert manager_a.lookup(rank1) == 0


def test_plugin_server_down_gives_misses_then_a_restarted_server_is_used(lm, plugin, own_server):
    server = own_server["server"]
    backend, cpu, manager, md = plugin("sp-fault", srv=server, timeout_ms=1000, connect_timeout_ms=500)
    keys = engine_keys("m", list(range(3 * md.chunk_size)), md.chunk_size)
    assert manager.put(keys, [filled(cpu, md, k) for k in keys]) == [True] * 3
    with frozen(server):
        start = time.monotonic()
        assert manager.lookup(keys) == 0 and manager.retrieve(keys[:1]) == [None]
        assert time.monotonic() - start < 4.5, "a hung server must not hold the engine much past timeout_ms"
    assert not cpu.live
    server.stop()
    start = time.monotonic()
    assert manager.lookup(keys) == 0
    assert [backend.contains(k) for k in keys] == [False] * 3
    assert manager.retrieve(keys) == [None] * 3
    assert manager.async_lookup_and_prefetch(keys, md.chunk_size) == []
    assert asyncio.run(backend.batched_get_non_blocking("req", keys)) == []
    assert manager.put(keys, [filled(cpu, md, k) for k in keys]) == [False] * 3
    assert backend.remove(keys[0]) is False
    assert time.monotonic() - start < 5, "a dead server must not hold the engine"
    assert not cpu.live and not any(backend.exists_in_put_tasks(k) for k in keys)

    own_server["restart"]()
    deadline = time.monotonic() + 15
    while manager.put(keys[:1], [filled(cpu, md, keys[0])]) != [True]:
        assert time.monotonic() < deadline, "the restarted server was never used"
    assert manager.lookup(keys) == 1
    objs = manager.retrieve(keys[:1])
    assert holds(objs[0], keys[0])
    objs[0].ref_count_down()
    assert not cpu.live


@pytest.mark.parametrize("setting, value, named", [
    ("timeout_ms", -1, "'timeout_ms' in extra_config (storage_plugin.memkv.*): '-1' is not a non-negative integer; allowed: 1..3600000"),
    ("servers", "nohost", "'servers' in extra_config (storage_plugin.memkv.*): 'nohost' is not host:port"),
    ("namespaec", "x", "unknown setting(s) 'namespaec' in extra_config (storage_plugin.memkv.*)"),
])
def test_plugin_bad_setting_is_loud_even_though_lmcache_swallows_it(lm, server, caplog, capsys, setting, value,
                                                                     named):
    config = plugin_config(server)
    config.extra_config[f"storage_plugin.memkv.{setting}"] = value
    with caplog.at_level(logging.ERROR):
        backends = launch_plugins(config, Metadata(), LocalCPUBackend(), swallow=True)
    assert backends == {}
    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert len(critical) == 1 and named in critical[0]
    assert named in capsys.readouterr().err
    with pytest.raises(lm.ConfigError, match=re.escape(named)):
        launch_plugins(config, Metadata(), LocalCPUBackend())


def test_plugin_without_local_cpu_backend_is_refused(lm, server, capsys):
    with pytest.raises(lm.ConfigError, match="max_local_cpu_size > 0"):
        launch_plugins(plugin_config(server), Metadata(), None)
    assert "max_local_cpu_size > 0" in capsys.readouterr().err
    scheduler = Metadata()
    scheduler.role = "scheduler"
    backend = launch_plugins(plugin_config(server, namespace="sp-scheduler"), scheduler, None)["memkv"]
    try:
        assert backend.batched_contains(engine_keys("m", list(range(16)), 16)) == 0
        assert backend.get_blocking(engine_keys("m", list(range(16)), 16)[0]) is None
    finally:
        backend.close()


def test_plugin_listed_twice_is_refused(lm, server):
    config = plugin_config(server)
    config.extra_config.update({"storage_plugin.again.module_path": MODULE,
                                "storage_plugin.again.class_name": "MemKVStorageBackend"})
    config.storage_plugins = ["memkv", "again"]
    with pytest.raises(lm.ConfigError, match="again, memkv all load"):
        launch_plugins(config, Metadata(), LocalCPUBackend())


@dataclass(frozen=True, eq=False)
class TaggedCacheEngineKey:
    """CacheEngineKey as LMCache has it since request tags: model, world size,
    worker id, chunk hash and dtype, plus the ``lmcache.tag.*`` entries of
    request_configs as tags, all of them part of its identity. LMCache's vLLM
    integration stamps a request's cache_salt in as
    ``lmcache.tag.cache_salt``. to_string() writes the tags after the dtype
    (``@name%value`` each); with tags_in_string=False it leaves them out."""
    model_name: str
    world_size: int
    worker_id: int
    chunk_hash: int
    dtype: str = "bfloat16"
    request_configs: Optional[dict] = None
    tags_in_string: bool = True

    @property
    def tags(self):
        tags = tuple((k[len("lmcache.tag."):], v) for k, v in (self.request_configs or {}).items()
                     if k.startswith("lmcache.tag."))
        return tags or None

    def __eq__(self, other):
        return (self.model_name, self.world_size, self.worker_id, self.chunk_hash, self.dtype, self.tags) == \
            (other.model_name, other.world_size, other.worker_id, other.chunk_hash, other.dtype, other.tags)

    def __hash__(self):
        return hash((self.model_name, self.world_size, self.worker_id, self.chunk_hash, self.dtype, self.tags))

    def to_string(self):
        text = f"{self.model_name}@{self.world_size}@{self.worker_id}@{self.chunk_hash:x}@{self.dtype}"
        if self.tags_in_string and self.tags:
            text += "".join(f"@{k}%{v}" for k, v in self.tags)
        return text


def salted_keys(model, tokens, chunk, cache_salt=None, tags_in_string=True, **more_tags):
    configs = {"lmcache.tag.cache_salt": cache_salt} if cache_salt else {}
    configs.update({f"lmcache.tag.{k}": v for k, v in more_tags.items()})
    configs["lmcache.ttl"] = 60  # not a tag: no part of the key's identity
    return [TaggedCacheEngineKey(model, 1, 0, int.from_bytes(h[:8], "little"), request_configs=dict(configs),
                                 tags_in_string=tags_in_string) for h in prefix_hashes(tokens, chunk)]


@pytest.mark.parametrize("tags_in_string", [True, False], ids=["to_string-with-tags", "to_string-without-tags"])
def test_plugin_cache_salt_keeps_two_requests_apart(lm, plugin, tags_in_string):
    """Two requests with the same tokens and two cache salts: LMCache's chunk
    hashes are the same, its CacheEngineKeys differ by the cache_salt tag.
    What one stored is a miss (contains, lookup, get) for the other salt and
    for an unsalted request; the same salt, from another LMCache instance,
    finds and loads it. A to_string() that leaves the tags out is completed
    with them, so that the keys still differ; one that writes them is used
    as it is."""
    writer, cpu, manager, md = plugin(f"sp-salts-{tags_in_string}")
    reader, cpu_r, manager_r, _ = plugin(f"sp-salts-{tags_in_string}")
    tokens = list(range(3 * md.chunk_size))
    a = salted_keys("llama", tokens, md.chunk_size, "tenant-a", tags_in_string)
    b = salted_keys("llama", tokens, md.chunk_size, "tenant-b", tags_in_string)
    plain = salted_keys("llama", tokens, md.chunk_size, None, tags_in_string)
    other_tag = salted_keys("llama", tokens, md.chunk_size, "tenant-a", tags_in_string, user="u2")
    assert [k.chunk_hash for k in a] == [k.chunk_hash for k in b] and a[0] != b[0]
    assert manager.put(a, [filled(cpu, md, k) for k in a]) == [True] * 3
    for other in (b, plain, other_tag):
        assert manager_r.lookup(other) == 0
        assert not any(reader.contains(k) for k in other)
        assert manager_r.retrieve(other) == [None] * 3
    assert not cpu_r.live, "the misses' MemoryObjs must be released"
    again = salted_keys("llama", tokens, md.chunk_size, "tenant-a", tags_in_string)
    assert manager_r.lookup(again) == 3
    objs = manager_r.retrieve(again)
    assert all(holds(o, k) for o, k in zip(objs, again))
    for o in objs:
        o.ref_count_down()
    stored = reader.key_of(a[0])
    assert stored == b"sp-salts-%s/" % str(tags_in_string).encode() + \
        f"llama@1@0@{a[0].chunk_hash:x}@bfloat16@cache_salt%tenant-a".encode()
    assert reader.key_of(plain[0]).endswith(b"@bfloat16"), "an unsalted key keeps LMCache's string as it is"


def test_module_imports_without_lmcache():
    code = (f"import sys, {MODULE} as m; assert not m.HAVE_LMCACHE; assert 'lmcache' not in sys.modules; "
            "b = m.MemKVStorageBackend.__mro__[1]; assert b.__module__ == m.__name__; print('ok')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"),
                                                                  os.path.join(REPO, "build", "python")) if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# --- every client option ------------------------------------------------------------

def _build_l2(settings):
    connector = create_native_plugin(settings)
    return connector._core.client, connector.close


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(lm, server, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in adapter_params or
    by its MEMKV_* variable, is the client's."""
    base = {"servers": [server.address], "auth_key": server.auth_key}
    check_option_reaches_client(_build_l2, base, name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(lm, server, monkeypatch, capsys, name, source):
    base = {"servers": [server.address], "auth_key": server.auth_key}
    message = check_bad_option_is_named(create_native_plugin, lm.ConfigError, base, name, source, monkeypatch)
    assert message.startswith("memkv lmcache adapter: ") and message in capsys.readouterr().err


# --- back-pressure ----------------------------------------------------------------

def test_l2_chunks_a_busy_server_sheds_are_not_stored_and_loads_go_on(lm, server, caplog):
    """Chunks 1 and 3 of four shed by an overloaded server (Busy; a
    SheddingClient in place of the connector's client): the set completes
    not ok with exactly those keys False and says they were shed, nothing is
    counted as an error, the log line is INFO, and the stored chunks load."""
    connector = create_native_plugin(params(server, namespace="l2-busy"))
    size = 8192
    try:
        keys = [l2_key("m", h) for h in prefix_hashes(list(range(4 * 16)), 16)]
        names = {connector.key_of(keys[i]) for i in (1, 3)}
        connector._core.client = SheddingClient(connector._core.client, lambda key: key in names)
        arena = Arena(4, size)
        for row, k in enumerate(keys):
            arena.array[row] = chunk_bytes_of(bytes.fromhex(k.split("@")[3]), size)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="memkv.adapters"):
            ok, error, bools = one(connector, connector.submit_batch_set(keys, arena.views(range(4))))
        assert not ok and bools == [True, False, True, False]
        assert "2 of 4" in error and "2 shed by a busy server" in error
        stats = connector.get_stats()
        assert stats["stores_shed"] == 2 and stats["errors"] == 0 and stats["put_ok"] == 2
        assert [r.levelno for r in caplog.records if "busy" in r.getMessage()] == [logging.INFO]
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert one(connector, connector.submit_batch_exists(keys))[2] == [True, False, True, False]
        arena.array[:] = 0
        assert one(connector, connector.submit_batch_get([keys[0], keys[2]], arena.views([0, 2]))) == \
            (True, "", [True, True])
        for row in (0, 2):
            assert np.array_equal(arena.array[row], chunk_bytes_of(bytes.fromhex(keys[row].split("@")[3]), size))
    finally:
        connector.close()


def test_plugin_chunks_a_busy_server_sheds_are_not_stored_and_loads_go_on(lm, plugin, caplog):
    """The storage plugin: a store whose last two chunks a busy server sheds
    (a SheddingClient in place of PageIO's client) reports them not stored,
    runs the store callback only for the stored ones, releases every
    MemoryObj, raises nothing; the lookup finds the stored prefix and it
    loads."""
    backend, cpu, manager, md = plugin("sp-busy")
    keys = engine_keys("llama", list(range(4 * md.chunk_size)), md.chunk_size)
    names = {backend.key_of(k) for k in keys[2:]}
    backend._core.io.client = SheddingClient(backend._core.io.client, lambda key: key in names)
    called = []
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        objs = [filled(cpu, md, k) for k in keys]
        futures = backend.batched_submit_put_task(keys, objs, on_complete_callback=called.append)
        for o in objs:
            o.ref_count_down()
        done, pending = concurrent.futures.wait(futures, timeout=10)
    assert not pending
    assert [ok for f in done for ok in f.result()] == [True, True, False, False]
    assert called == keys[:2]
    assert not cpu.live, "every MemoryObj of the store is released, stored or shed"
    stats = backend.get_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert manager.lookup(keys) == 2
    objs = manager.retrieve(keys[:2])
    assert all(holds(o, k) for o, k in zip(objs, keys))
    for o in objs:
        o.ref_count_down()

"""memkv.adapters.lmcache driven by LMCache's released package, no look-alike
in between: LMCache's own configuration (LMCacheEngineConfig), metadata and
StorageManager load the MemKV storage plugin through LMCache's plugin
launcher, beside LMCache's LocalCPUBackend, and store and load real CPU
tensors of KV chunks through LMCache's own put and get paths, against a real
MemKV server on loopback. LMCache runs with its CPU device stub (no GPU)."""

import os
import time

import pytest
import torch

import memkv
from memkv.testing import LocalServer

from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.event_manager import EventManager
from lmcache.v1.metadata import LMCacheMetadata
from lmcache.v1.storage_backend.storage_manager import StorageManager

from memkv.adapters.lmcache import HAVE_LMCACHE, MemKVStorageBackend
from lmcache_partner import chunks

MODEL = "tiny-kv"
CHUNK = 16
KV_SHAPE = (4, 2, CHUNK, 2, 32)  # layers, K and V, tokens, heads, head size
DTYPE = torch.bfloat16


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.005)
    return condition()


def config_for(server, **extra):
    settings = {
        "storage_plugin.memkv.module_path": "memkv.adapters.lmcache",
        "storage_plugin.memkv.class_name": "MemKVStorageBackend",
        "storage_plugin.memkv.servers": server.address,
        "storage_plugin.memkv.auth_key": server.auth_key,
        "storage_plugin.memkv.timeout_ms": 2000,
    }
    settings.update(extra)
    return LMCacheEngineConfig.from_defaults(chunk_size=CHUNK, local_cpu=True, max_local_cpu_size=0.1,
                                             storage_plugins=["memkv"], extra_config=settings)


def metadata():
    return LMCacheMetadata(model_name=MODEL, world_size=1, local_world_size=1, worker_id=0, local_worker_id=0,
                           kv_dtype=DTYPE, kv_shape=KV_SHAPE, chunk_size=CHUNK)


def key(i):
    return CacheEngineKey(MODEL, 1, 0, 0x5EED0000 + i, DTYPE)


def raw(obj):
    return bytes(obj.tensor.contiguous().view(torch.uint8).numpy())


@pytest.fixture
def server():
    with LocalServer() as s:
        yield s


@pytest.fixture
def manager(server):
    m = StorageManager(config_for(server), metadata(), EventManager())
    yield m
    m.close()


def test_lmcache_loads_the_plugin_through_its_own_launcher(manager, server):
    """StorageManager builds the MemKV storage plugin through storage_plugin_launcher from
    LMCacheEngineConfig.extra_config, beside LocalCPUBackend."""
    assert HAVE_LMCACHE, "memkv.adapters.lmcache did not find LMCache's StoragePluginInterface"
    backends = manager.storage_backends
    assert list(backends) == ["LocalCPUBackend", "memkv"], list(backends)
    backend = backends["memkv"]
    assert isinstance(backend, MemKVStorageBackend)
    from lmcache.v1.storage_backend.abstract_backend import StoragePluginInterface
    assert isinstance(backend, StoragePluginInterface)
    assert backend.local_cpu_backend is backends["LocalCPUBackend"]


def test_chunks_stored_by_lmcache_come_back_byte_for_byte(manager, server):
    """StorageManager.batched_put of 8 bf16 KV chunks; batched_get, get, get_non_blocking and contains from
    MemKV give the same bytes."""
    objs = chunks(manager, 8, seed=1)
    keys = [key(i) for i in range(8)]
    want = [raw(o) for o in objs]
    manager.batched_put(keys, objs)  # to every backend: LocalCPUBackend and MemKV
    assert wait_for(lambda: manager.storage_backends["memkv"].batched_contains(keys) == len(keys))

    # What MemKV holds, read back through LMCache's own get paths from the
    # MemKV backend alone (LocalCPUBackend holds the same chunks).
    got = manager.batched_get(keys, location="memkv")
    assert [raw(g) for g in got] == want
    one = manager.get(keys[3], location="memkv")
    assert raw(one) == want[3]
    future = manager.get_non_blocking(keys[5], location="memkv")
    assert raw(future.result(timeout=10)) == want[5]
    assert manager.contains(keys[0], search_range=["memkv"]) == "memkv"

    # The value in MemKV is the chunk's bytes, under the adapter's key.
    with server.client(identity=manager.storage_backends["memkv"]._core.identity) as client:
        stored = client.get(manager.storage_backends["memkv"].key_of(keys[2]))
        assert bytes(stored) == want[2]


def test_a_chunk_memkv_does_not_hold_is_a_miss_in_lmcache(manager):
    """A chunk MemKV lacks: contains None, get None, batched_get None in its place, the prefix stops at the
    hole."""
    objs = chunks(manager, 2, seed=2)
    manager.batched_put([key(100), key(101)], objs)
    assert wait_for(lambda: manager.storage_backends["memkv"].batched_contains([key(100), key(101)]) == 2)
    missing = [key(100), key(999), key(101)]
    assert manager.contains(key(999), search_range=["memkv"]) is None
    assert manager.storage_backends["memkv"].batched_contains(missing) == 1, "the prefix stops at the hole"
    assert manager.get(key(999), location="memkv") is None
    got = manager.batched_get(missing, location="memkv")
    assert got[1] is None and got[0] is not None and got[2] is not None


def test_a_server_that_is_down_gives_misses_and_failed_stores_never_an_exception(server):
    """A killed server: contains, get, batched_get give misses and batched_put goes on, with no exception;
    LocalCPUBackend still serves."""
    manager = StorageManager(config_for(server), metadata(), EventManager())
    try:
        objs = chunks(manager, 2, seed=3)
        manager.batched_put([key(200), key(201)], objs)
        backend = manager.storage_backends["memkv"]
        assert wait_for(lambda: backend.batched_contains([key(200), key(201)]) == 2)
        server.kill()
        # LMCache asks, stores and loads as before; MemKV answers misses.
        assert manager.contains(key(200), search_range=["memkv"]) is None
        assert manager.get(key(200), location="memkv") is None
        assert manager.batched_get([key(200), key(201)], location="memkv") == [None, None]
        manager.batched_put([key(202)], chunks(manager, 1, seed=4))
        # The chunks LMCache keeps in its own CPU tier still serve.
        assert manager.get(key(200), location="LocalCPUBackend") is not None
        stats = backend.get_stats()
        assert stats, stats
    finally:
        manager.close()


def test_a_misconfigured_plugin_says_what_is_wrong(server, capfd):
    """A plugin setting that is wrong: LMCache goes on without the plugin, and stderr names the setting."""
    # LMCache only logs a plugin that fails to build and goes on without it;
    # the adapter also writes the reason to stderr, so the operator sees it.
    manager = StorageManager(config_for(server, **{"storage_plugin.memkv.servers": ""}), metadata(),
                             EventManager())
    try:
        assert "memkv" not in manager.storage_backends
        err = capfd.readouterr().err
        assert "memkv lmcache adapter" in err and "servers" in err, err
    finally:
        manager.close()


def test_the_versions_under_test():
    """The releases under test, printed."""
    import lmcache
    version = getattr(lmcache, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version
        version = dist_version("lmcache")
    print(f"lmcache {version}, torch {torch.__version__}, memkv {memkv.__version__}")
    assert os.environ.get("MEMKV_BINARY"), "the tests run against the build's memkv server"


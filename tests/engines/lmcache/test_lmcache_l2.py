"""memkv.adapters.lmcache.MemKVL2Connector inside LMCache's released package:
the multi-process server's L2 adapter registry builds it from a
`native_plugin` config (the JSON an operator passes to --l2-adapter) and
wraps it in LMCache's own NativeConnectorL2Adapter, which stores, looks up
and loads LMCache MemoryObjs through it against a real MemKV server."""

import time

import pytest
import torch

from memkv.testing import LocalServer

from lmcache.v1.distributed.api import ObjectKey
from lmcache.v1.distributed.l2_adapters.config import get_l2_adapter_config_class
from lmcache.v1.distributed.l2_adapters.factory import create_l2_adapter_from_registry
from lmcache.v1.memory_allocators.host_memory_allocator import HostMemoryAllocator

SHAPE = torch.Size([2, 4, 16, 64])  # K and V, layers, tokens, hidden
DTYPE = torch.bfloat16


def wait_for(query, timeout=10.0):
    """The first non-None answer of query(), polled against a deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        answer = query()
        if answer is not None:
            return answer
        time.sleep(0.002)
    raise AssertionError(f"no answer within {timeout} s")


def adapter_for(server, **params):
    settings = {"servers": [server.address], "auth_key": server.auth_key, "timeout_ms": 2000}
    settings.update(params)
    config = get_l2_adapter_config_class("native_plugin").from_dict(
        {"type": "native_plugin", "module_path": "memkv.adapters.lmcache", "class_name": "MemKVL2Connector",
         "adapter_params": settings})
    return create_l2_adapter_from_registry(config)


def objects(allocator, count, seed=None):
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    out = []
    for _ in range(count):
        obj = allocator.allocate(SHAPE, DTYPE)
        assert obj is not None
        if gen is not None:
            obj.tensor.copy_(torch.randn(tuple(SHAPE), generator=gen).to(DTYPE))
        else:
            obj.tensor.zero_()
        out.append(obj)
    return out


def raw(obj):
    return bytes(obj.tensor.contiguous().view(torch.uint8).numpy())


def keys(n, model="tiny-kv", salt=""):
    return [ObjectKey(chunk_hash=bytes([i]) * 32, model_name=model, kv_rank=0, cache_salt=salt) for i in range(n)]


def found(bitmap, n):
    return [bitmap.test(i) for i in range(n)]


@pytest.fixture
def server():
    with LocalServer() as s:
        yield s


@pytest.fixture
def allocator():
    return HostMemoryAllocator(64 << 20)


def store(adapter, ks, objs):
    task = adapter.submit_store_task(ks, objs)
    results = wait_for(lambda: adapter.pop_completed_store_tasks().get(task))
    return results


def lookup(adapter, ks):
    task = adapter.submit_lookup_and_lock_task(ks, {})
    return found(wait_for(lambda: adapter.query_lookup_and_lock_result(task)), len(ks))


def load(adapter, ks, objs):
    task = adapter.submit_load_task(ks, objs)
    return found(wait_for(lambda: adapter.query_load_result(task)), len(ks))


def test_lmcache_stores_looks_up_and_loads_through_the_memkv_connector(server, allocator):
    """The native_plugin L2 adapter registry builds MemKVL2Connector; NativeConnectorL2Adapter stores,
    looks up and loads 6 MemoryObjs byte for byte."""
    adapter = adapter_for(server, namespace="l2-real")
    try:
        ks = keys(6)
        sent = objects(allocator, 6, seed=7)
        result = store(adapter, ks, sent)
        assert result >= 0, f"store failed: {result}"
        assert lookup(adapter, ks) == [True] * 6
        back = objects(allocator, 6)
        assert load(adapter, ks, back) == [True] * 6
        assert [raw(o) for o in back] == [raw(o) for o in sent]
    finally:
        adapter.close()


def test_a_missing_chunk_is_a_miss_and_salted_keys_stay_apart(server, allocator):
    """L2 lookups and loads of a missing chunk are misses; another cache_salt reaches nothing."""
    adapter = adapter_for(server, namespace="l2-miss")
    try:
        ks = keys(3)
        assert store(adapter, [ks[0], ks[2]], objects(allocator, 2, seed=8)) >= 0
        assert lookup(adapter, ks) == [True, False, True]
        salted = keys(3, salt="user-b")
        assert lookup(adapter, salted) == [False, False, False], "another user's salt reaches nothing"
        back = objects(allocator, 3)
        assert load(adapter, ks, back) == [True, False, True]
    finally:
        adapter.close()


def test_a_server_that_is_down_fails_stores_and_misses_lookups(server, allocator):
    """L2 against a killed server: lookups and loads miss, a store reports failure."""
    adapter = adapter_for(server, namespace="l2-down")
    try:
        ks = keys(2)
        assert store(adapter, ks, objects(allocator, 2, seed=9)) >= 0
        server.kill()
        assert lookup(adapter, ks) == [False, False]
        assert load(adapter, ks, objects(allocator, 2)) == [False, False]
        assert store(adapter, keys(3)[2:], objects(allocator, 1, seed=10)) < 0, "the store reports its failure"
    finally:
        adapter.close()

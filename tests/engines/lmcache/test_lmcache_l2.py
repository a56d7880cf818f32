"""memkv.adapters.lmcache.MemKVL2Connector inside LMCache's released package:
LMCache's own --l2-adapter parser and L2 adapter registry build it from the
`native_plugin` JSON an operator passes, and wrap it in LMCache's own
NativeConnectorL2Adapter, which stores, looks up, loads and deletes
LMCache's ObjectKeys and MemoryObjs (allocated by its HostMemoryAllocator)
through it, against real MemKV servers on loopback."""

import argparse
import hashlib
import inspect
import json
import logging
import re
import time

import pytest
import torch

import memkv
from memkv.adapters.lmcache import ConfigError, MemKVL2Connector, chunk_hash_of

from lmcache.v1.distributed.api import ObjectKey
from lmcache.v1.distributed.l2_adapters import create_l2_adapter
from lmcache.v1.distributed.l2_adapters.config import add_l2_adapters_args, parse_args_to_l2_adapters_config
from lmcache.v1.distributed.l2_adapters.native_connector_l2_adapter import (NativeConnectorL2Adapter,
                                                                            _object_key_to_string)

try:
    from lmcache.v1.memory_allocators.host_memory_allocator import HostMemoryAllocator
except ImportError:  # LMCache 0.4 has its allocators in memory_management
    from lmcache.v1.memory_management import HostMemoryAllocator

from lmcache_partner import frozen, wait_for
from shedding_client import SheddingClient

SHAPE = torch.Size([2, 4, 16, 64])  # K and V, layers, tokens, hidden
DTYPE = torch.bfloat16
MiB = 1 << 20


def adapter_for(server, /, **params):
    """What `lmcache server --l2-adapter '<JSON>'` builds: LMCache's parser of the flag, then its registry."""
    settings = {"servers": [server.address], "auth_key": server.auth_key, "timeout_ms": 2000}
    settings.update(params)
    spec = {"type": "native_plugin", "module_path": "memkv.adapters.lmcache", "class_name": "MemKVL2Connector",
            "adapter_params": settings}
    parser = add_l2_adapters_args(argparse.ArgumentParser())
    config = parse_args_to_l2_adapters_config(parser.parse_args(["--l2-adapter", json.dumps(spec)]))
    assert len(config.adapters) == 1
    return create_l2_adapter(config.adapters[0])


def connector_of(adapter):
    """The MemKVL2Connector LMCache's NativeConnectorL2Adapter drives."""
    connector = adapter._client
    assert isinstance(connector, MemKVL2Connector)
    return connector


def objects(allocator, count, seed=None, shape=SHAPE):
    """`count` MemoryObjs from LMCache's allocator: random bf16 KV for a seed, else zeros."""
    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    out = []
    for _ in range(count):
        obj = allocator.allocate(shape, DTYPE)
        assert obj is not None, "LMCache's allocator is full"
        if gen is not None:
            obj.tensor.copy_(torch.randn(tuple(shape), generator=gen).to(DTYPE))
        else:
            obj.tensor.zero_()
        out.append(obj)
    return out


def raw(obj):
    return bytes(obj.tensor.contiguous().view(torch.uint8).numpy())


def hashes(label, n):
    """n distinct 32-byte chunk hashes."""
    return [hashlib.sha256(f"{label}/{i}".encode()).digest() for i in range(n)]


def keys_of(chunk_hashes, model="tiny-kv", salt="", kv_rank=0, group=0):
    return [ObjectKey(chunk_hash=h, model_name=model, kv_rank=kv_rank, object_group_id=group, cache_salt=salt)
            for h in chunk_hashes]


def keys(n, model="tiny-kv", salt=""):
    return keys_of([bytes([i]) * 32 for i in range(n)], model, salt)


def found(bitmap, n):
    return [bitmap.test(i) for i in range(n)]


@pytest.fixture
def server(shared_server):
    return shared_server


@pytest.fixture
def allocator():
    return HostMemoryAllocator(64 * MiB)


@pytest.fixture
def adapters():
    """Builds adapters with adapter_for and closes them after the test."""
    made = []

    def make(server, **params):
        made.append(adapter_for(server, **params))
        return made[-1]

    yield make
    for adapter in made:
        adapter.close()


def store(adapter, ks, objs, timeout=10.0):
    """Stores and waits: LMCache's L2StoreResult (>= 0 stored, < 0 failed)."""
    task = adapter.submit_store_task(ks, objs)
    done = {}

    def completed():
        done.update(adapter.pop_completed_store_tasks())
        return task in done

    wait_for(completed, timeout, "the store's completion")
    return done[task]


def lookup(adapter, ks, timeout=10.0):
    """Which keys LMCache's lookup finds (their locks released again)."""
    if "group_layout_descs" in inspect.signature(adapter.submit_lookup_and_lock_task).parameters:
        task = adapter.submit_lookup_and_lock_task(ks, {})
    else:  # LMCache 0.4
        task = adapter.submit_lookup_and_lock_task(ks)
    result = found(wait_for(lambda: adapter.query_lookup_and_lock_result(task), timeout, "the lookup"), len(ks))
    adapter.submit_unlock(ks)
    return result


def load(adapter, ks, objs, timeout=10.0):
    task = adapter.submit_load_task(ks, objs)
    return found(wait_for(lambda: adapter.query_load_result(task), timeout, "the load"), len(ks))


def test_lmcache_builds_the_connector_from_its_l2_adapter_json(server, adapters):
    """LMCache's --l2-adapter parser and native_plugin factory build MemKVL2Connector from adapter_params and
    wrap it in NativeConnectorL2Adapter, which watches its event fd; closing the adapter closes it."""
    adapter = adapters(server, namespace="l2-factory", async_threads=2)
    assert isinstance(adapter, NativeConnectorL2Adapter)
    connector = connector_of(adapter)
    assert connector.namespace == "l2-factory"
    assert adapter._client_fd == connector.event_fd() >= 0
    assert adapter.report_status()["is_healthy"]
    assert lookup(adapter, keys(1)) == [False]
    adapter.close()
    assert connector.event_fd() == -1, "LMCache's close() closes the connector"


def test_lmcache_stores_looks_up_and_loads_through_the_memkv_connector(server, adapters, allocator):
    """The native_plugin L2 adapter registry builds MemKVL2Connector; NativeConnectorL2Adapter stores,
    looks up and loads 6 MemoryObjs byte for byte."""
    adapter = adapters(server, namespace="l2-real")
    ks = keys(6)
    sent = objects(allocator, 6, seed=7)
    result = store(adapter, ks, sent)
    assert result >= 0, f"store failed: {result}"
    assert lookup(adapter, ks) == [True] * 6
    back = objects(allocator, 6)
    assert load(adapter, ks, back) == [True] * 6
    assert [raw(o) for o in back] == [raw(o) for o in sent]


def test_chunks_stored_for_one_request_are_found_by_later_ones(server, adapters, allocator):
    """Request 1 stores 4 chunks; request 2 (the same 4 and 2 more) finds and loads the 4, then stores
    its 2; request 3 loads all 6. Every byte and the connector's counters check."""
    adapter = adapters(server, namespace="l2-requests")
    connector = connector_of(adapter)
    request1 = keys_of(hashes("requests", 4))
    request2 = keys_of(hashes("requests", 6))
    assert request2[:4] == request1
    assert lookup(adapter, request1) == [False] * 4
    sent = objects(allocator, 6, seed=1)
    assert store(adapter, request1, sent[:4]) >= 0
    assert lookup(adapter, request2) == [True] * 4 + [False] * 2
    back = objects(allocator, 4)
    assert load(adapter, request2[:4], back) == [True] * 4
    assert [raw(o) for o in back] == [raw(o) for o in sent[:4]]
    assert store(adapter, request2[4:], sent[4:]) >= 0
    assert lookup(adapter, request2) == [True] * 6
    back = objects(allocator, 6)
    assert load(adapter, request2, back) == [True] * 6
    assert [raw(o) for o in back] == [raw(o) for o in sent]
    stats = connector.get_stats()
    assert stats["put_ok"] == 6 and stats["get_hits"] == 10 and stats["errors"] == 0, stats


def test_the_lookup_prefix_stops_at_a_deleted_middle_chunk(server, adapters, allocator):
    """LMCache's eviction delete of chunk 3 of 8: the lookup finds the others (LMCache's prefix ends at
    chunk 3), a load of 5 loads all but chunk 3, and deleting it again is no failure."""
    adapter = adapters(server, namespace="l2-prefix")
    connector = connector_of(adapter)
    ks = keys_of(hashes("prefix", 8))
    sent = objects(allocator, 8, seed=2)
    assert store(adapter, ks, sent) >= 0
    adapter.delete([ks[3]])  # blocks until the connector's completion
    present = lookup(adapter, ks)
    assert present == [True, True, True, False, True, True, True, True]
    assert present.index(False) == 3
    back = objects(allocator, 5)
    assert load(adapter, ks[:5], back) == [True, True, True, False, True]
    assert raw(back[4]) == raw(sent[4]) and not any(raw(back[3])), "a miss leaves the object as it was"
    adapter.delete([ks[3]])
    assert connector.get_stats()["errors"] == 0


def test_loads_land_in_the_memory_objects_lmcache_hands_over(server, adapters, allocator):
    """A load writes each chunk into the MemoryObj LMCache handed over for its key (in the batch's own
    order, at the object's own address), not into a buffer of the connector's."""
    adapter = adapters(server, namespace="l2-zero-copy")
    ks = keys_of(hashes("zero-copy", 3))
    sent = objects(allocator, 3, seed=3)
    assert store(adapter, ks, sent) >= 0
    targets = objects(allocator, 3)
    addresses = [t.data_ptr for t in targets]
    assert load(adapter, [ks[2], ks[0], ks[1]], targets) == [True] * 3
    assert [t.data_ptr for t in targets] == addresses
    assert [raw(t) for t in targets] == [raw(sent[2]), raw(sent[0]), raw(sent[1])]


def _kib(field):
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1)) * 1024


def _reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("cannot reset the peak RSS (/proc/self/clear_refs)")


def test_a_64_mib_chunk_is_copied_neither_on_store_nor_on_load(server, adapters):
    """A 64 MiB MemoryObj stored and loaded through LMCache's adapter: the process's peak RSS does not grow
    by a copy of it on either way, and the bytes come back."""
    big, slack = 64 * MiB, 24 * MiB
    allocator = HostMemoryAllocator(big + 4 * MiB)
    obj = allocator.allocate(torch.Size([2, 1, 8192, 2048]), DTYPE)  # 64 MiB of bf16
    assert obj is not None and obj.get_size() == big
    words = obj.raw_data[:big].view(torch.int64)
    words.copy_(torch.arange(words.numel(), dtype=torch.int64))
    adapter = adapters(server, namespace="l2-rss")
    key = keys_of(hashes("big", 1))
    _reset_peak_rss()
    start = _kib("VmHWM")
    assert store(adapter, key, [obj], timeout=30) >= 0
    assert _kib("VmHWM") - start < slack, "the store copied the chunk"
    words.zero_()
    _reset_peak_rss()
    start = _kib("VmHWM")
    assert load(adapter, key, [obj], timeout=30) == [True]
    assert _kib("VmHWM") - start < slack, "the load copied the chunk"
    assert int(words[12345]) == 12345 and int(words[-1]) == words.numel() - 1
    adapter.delete(key)


def test_a_value_of_another_size_is_a_miss(server, adapters, allocator):
    """A value rewritten at another size behind LMCache's back, and objects smaller or larger than the
    stored chunk: those loads are misses, the others load."""
    adapter = adapters(server, namespace="l2-size")
    connector = connector_of(adapter)
    ks = keys_of(hashes("size", 3))
    sent = objects(allocator, 3, seed=4)
    assert store(adapter, ks, sent) >= 0
    with server.client(identity=connector._core.identity) as plain:
        plain.put(connector.key_of(_object_key_to_string(ks[1])), bytes(4096))
    back = objects(allocator, 3)
    assert load(adapter, ks, back) == [True, False, True]
    small = objects(allocator, 1, shape=torch.Size([2, 4, 8, 64]))
    large = objects(allocator, 1, shape=torch.Size([2, 4, 32, 64]))
    assert load(adapter, [ks[0], ks[2]], small + large) == [False, False]


def test_namespaces_models_ranks_and_groups_do_not_collide(server, adapters, allocator):
    """One chunk hash under two namespaces holds two values; another model, kv_rank or object group
    reaches neither. The MemKV key is the namespace and LMCache's key string."""
    a = adapters(server, namespace="tenant-a")
    b = adapters(server, namespace="tenant-b")
    h = hashes("collide", 1)
    key = keys_of(h, model="llama")
    in_a, in_b = objects(allocator, 1, seed=5), objects(allocator, 1, seed=6)
    assert store(a, key, in_a) >= 0
    assert lookup(b, key) == [False]
    assert store(b, key, in_b) >= 0
    back = objects(allocator, 2)
    assert load(a, key, back[:1]) == [True] and load(b, key, back[1:]) == [True]
    assert raw(back[0]) == raw(in_a[0]) and raw(back[1]) == raw(in_b[0])
    others = keys_of(h, model="mistral") + keys_of(h, model="llama", kv_rank=1) + keys_of(h, model="llama", group=1)
    assert lookup(a, others) == [False] * 3
    assert connector_of(a).key_of(_object_key_to_string(key[0])) == b"tenant-a/" + _object_key_to_string(
        key[0]).encode()


def test_a_key_longer_than_memkvs_limit_stays_within_it(server, adapters, allocator):
    """An ObjectKey whose key string passes MemKV's 1024-byte key limit (a long model name) is stored under
    a hashed key within it, distinct from that of a key differing in its last character."""
    adapter = adapters(server, namespace="l2-long")
    connector = connector_of(adapter)
    h = hashes("long", 1)
    key = keys_of(h, model="m" * 1100, salt="s" * 100)
    other = keys_of(h, model="m" * 1100, salt="s" * 99 + "t")
    stored = connector.key_of(_object_key_to_string(key[0]))
    assert len(stored) <= 1024 and stored.startswith(b"l2-long/")
    assert stored != connector.key_of(_object_key_to_string(other[0]))
    sent = objects(allocator, 1, seed=8)
    assert store(adapter, key, sent) >= 0
    assert lookup(adapter, key + other) == [True, False]
    back = objects(allocator, 1)
    assert load(adapter, key, back) == [True] and raw(back[0]) == raw(sent[0])


def test_cache_salts_keep_two_users_apart(server, adapters, allocator):
    """ObjectKeys of the same chunks with two cache salts, and unsalted: what one salt stored is a miss
    (lookup, load) for the other and for no salt, and found and loaded by the same salt through another
    LMCache server's adapter. The chunk hash a store carries is the same for every salt."""
    writer = adapters(server, namespace="l2-salts")
    reader = adapters(server, namespace="l2-salts")
    h = hashes("salts", 3)
    a, b, plain = keys_of(h, salt="tenant-a"), keys_of(h, salt="tenant-b"), keys_of(h)
    sent = objects(allocator, 3, seed=9)
    assert store(writer, a, sent) >= 0
    for other in (b, plain):
        assert lookup(reader, other) == [False] * 3
        back = objects(allocator, 3)
        assert load(reader, other, back) == [False] * 3
        assert not any(any(raw(o)) for o in back), "a miss wrote into LMCache's memory"
    assert lookup(reader, a) == [True] * 3
    back = objects(allocator, 3)
    assert load(reader, a, back) == [True] * 3 and [raw(o) for o in back] == [raw(o) for o in sent]
    text_a, text_b = _object_key_to_string(a[0]), _object_key_to_string(b[0])
    assert text_a.endswith("@tenant-a")
    assert connector_of(reader).key_of(text_a) == b"l2-salts/" + text_a.encode() != connector_of(reader).key_of(
        text_b)
    assert chunk_hash_of(text_a) == chunk_hash_of(text_b) == chunk_hash_of(_object_key_to_string(plain[0])) == h[0]


def test_many_batches_in_flight_and_batches_over_1024_keys(server, adapters):
    """1100 chunks stored in one LMCache store task and looked up in one (over MemKV's 1024 keys per call),
    loaded by 8 load tasks submitted before any is waited for, then deleted by one eviction delete."""
    adapter = adapters(server, namespace="l2-many", async_threads=3)
    allocator = HostMemoryAllocator(32 * MiB)
    shape = torch.Size([2, 1, 4, 32])  # 512 bytes
    n = 1100
    ks = keys_of(hashes("many", n))
    sent = objects(allocator, n, seed=10, shape=shape)
    assert store(adapter, ks, sent, timeout=30) >= 0
    absent = keys_of(hashes("many-absent", 1))
    assert lookup(adapter, ks + absent) == [True] * n + [False]
    back = objects(allocator, n, shape=shape)
    tasks = [adapter.submit_load_task(ks[i::8], back[i::8]) for i in range(8)]
    assert len(set(tasks)) == 8
    for i, task in enumerate(tasks):
        bitmap = wait_for(lambda task=task: adapter.query_load_result(task), 30, f"load task {i}")
        assert found(bitmap, len(ks[i::8])) == [True] * len(ks[i::8])
    assert [raw(o) for o in back] == [raw(o) for o in sent]
    adapter.delete(ks)
    assert not any(lookup(adapter, ks))


def test_a_server_that_stops_answering_then_dies_then_comes_back(own_server, adapters, allocator):
    """Through LMCache's adapter: a frozen server turns a load into misses once timeout_ms has passed; a
    stopped one makes lookups, loads and stores fail quickly, without an exception; the restarted (empty)
    server is used again."""
    server = own_server["server"]
    adapter = adapters(server, namespace="l2-fault", timeout_ms=1000, connect_timeout_ms=500)
    connector = connector_of(adapter)
    ks = keys_of(hashes("fault", 4))
    sent = objects(allocator, 4, seed=11)
    assert store(adapter, ks, sent) >= 0
    back = objects(allocator, 4)
    with frozen(server):
        start = time.monotonic()
        assert load(adapter, ks, back) == [False] * 4
        assert time.monotonic() - start < 2.5, "a hung server must not hold a load much past timeout_ms"
    wait_for(lambda: load(adapter, ks, back) == [True] * 4, 15, "a load from the server that answers again")

    server.stop()
    start = time.monotonic()
    assert lookup(adapter, ks) == [False] * 4
    assert load(adapter, ks, back) == [False] * 4
    assert store(adapter, ks, sent) < 0, "the store reports its failure"
    adapter.delete(ks[:1])
    assert time.monotonic() - start < 5, "a dead server must not hold LMCache past timeout_ms"
    assert connector.get_stats()["errors"] > 0

    own_server["restart"]()
    wait_for(lambda: store(adapter, ks[:1], sent[:1]) >= 0, 15, "a store to the restarted server")
    assert lookup(adapter, ks) == [True, False, False, False], "the restarted server is empty"
    assert store(adapter, ks, sent) >= 0
    back = objects(allocator, 4)
    assert load(adapter, ks, back) == [True] * 4 and [raw(o) for o in back] == [raw(o) for o in sent]


def test_chunks_a_busy_server_sheds_are_not_stored_and_loads_go_on(server, adapters, allocator, caplog):
    """Chunks 1 and 3 of a store shed by an overloaded server (Busy; a SheddingClient in place of the
    connector's client): LMCache's store task fails, its lookup finds exactly the stored chunks and they
    load; the connector counts 2 shed and no error, and says so at INFO only."""
    adapter = adapters(server, namespace="l2-busy")
    connector = connector_of(adapter)
    ks = keys_of(hashes("busy", 4))
    names = {connector.key_of(_object_key_to_string(ks[i])) for i in (1, 3)}
    connector._core.client = SheddingClient(connector._core.client, lambda key: key in names)
    sent = objects(allocator, 4, seed=12)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert store(adapter, ks, sent) < 0
    stats = connector.get_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0 and stats["put_ok"] == 2, stats
    ours = [r for r in caplog.records if r.name.startswith("memkv")]
    assert [r.levelno for r in ours if "busy" in r.getMessage()] == [logging.INFO]
    assert not [r for r in ours if r.levelno >= logging.WARNING]
    assert lookup(adapter, ks) == [True, False, True, False]
    back = objects(allocator, 2)
    assert load(adapter, [ks[0], ks[2]], back) == [True, True]
    assert [raw(o) for o in back] == [raw(sent[0]), raw(sent[2])]


@pytest.mark.parametrize("bad, named", [
    ({"timeout_ms": "fast"},
     "'timeout_ms' in adapter_params of --l2-adapter (native_plugin): 'fast' is not a non-negative integer"),
    ({"namespaec": "x"}, "unknown setting(s) 'namespaec' in adapter_params of --l2-adapter (native_plugin)"),
])
def test_a_bad_adapter_param_stops_lmcache_with_a_named_error(server, capfd, bad, named):
    """A wrong adapter_params entry in the --l2-adapter JSON: LMCache's factory raises the adapter's
    ConfigError naming it, which is also on stderr."""
    with pytest.raises(ConfigError) as e:
        adapter_for(server, **bad)
    assert named in str(e.value) and isinstance(e.value, memkv.InvalidArgument)
    assert named in capfd.readouterr().err


def test_loads_report_their_chunks_in_time_or_late_and_params_name_the_identity(server, adapters, allocator):
    """A load's leading run of chunks is reported in time, a chunk loaded
    after a missing one late. LMCache builds the connector from its params
    alone: its cache identity is LMCache's engine and version, with what
    identity_* params say (the model, here)."""
    with_identity = hasattr(memkv, "CacheIdentity")
    params = {"identity_model": "tiny-kv", "identity_extras": ["team=x"]} if with_identity else {}
    adapter = adapters(server, namespace="l2-restores", **params)
    connector = connector_of(adapter)
    if with_identity:
        import lmcache
        ident = connector._core.identity
        assert (ident.model, ident.engine, ident.engine_version, ident.extras) == \
            ("tiny-kv", "lmcache", lmcache.__version__, {"team": "x"})
    ks = keys_of(hashes("restores", 5))
    assert store(adapter, ks, objects(allocator, 5, seed=3)) >= 0
    assert load(adapter, ks[:3], objects(allocator, 3)) == [True] * 3
    stats = connector.get_stats()
    assert (stats["restored_in_time"], stats["restored_late"]) == (3, 0)
    adapter.delete([ks[1]])
    assert load(adapter, ks, objects(allocator, 5)) == [True, False, True, True, True]
    stats = connector.get_stats()
    assert (stats["restored_in_time"], stats["restored_late"]) == (4, 3)

"""memkv.adapters.lmcache.MemKVStorageBackend as LMCache's released package
runs it: LMCacheEngineConfig (from its defaults or a YAML file) and
LMCacheMetadata, LMCache's StorageManager building the plugin through its
storage plugin launcher beside its LocalCPUBackend, keys made by its
ChunkedTokenDatabase from tokens (real CacheEngineKeys, cache-salt tags
included), and MemoryObjs from LocalCPUBackend's own allocator; the async
lookup and load run on the StorageManager's event loop, as it runs them.
Against real MemKV servers on loopback (a hung, a killed and a restarted one
among them). LMCache runs with its CPU device stub."""

import asyncio
import collections
import logging
import re
import time

import pytest
import torch

import memkv
from memkv.adapters.lmcache import ConfigError, MemKVStorageBackend

from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.event_manager import EventManager
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.metadata import LMCacheMetadata
from lmcache.v1.storage_backend import storage_plugin_launcher
from lmcache.v1.storage_backend.abstract_backend import StoragePluginInterface
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend
from lmcache.v1.storage_backend.storage_manager import StorageManager
from lmcache.v1.token_database import ChunkedTokenDatabase

from lmcache_partner import chunks, frozen, wait_for
from shedding_client import SheddingClient

MODULE = "memkv.adapters.lmcache"
MODEL = "tiny-kv"
CHUNK = 16
KV_SHAPE = (4, 2, CHUNK, 2, 32)  # layers, K and V, tokens, heads, head size
DTYPE = torch.bfloat16


def config_for(server, name="memkv", max_local_cpu_size=0.05, plugins=None, **settings):
    """LMCacheEngineConfig with the MemKV plugin under `name`; LocalCPUBackend is the allocator only
    (local_cpu false), so every chunk a test stores or loads goes through MemKV."""
    extra = {f"storage_plugin.{name}.module_path": MODULE,
             f"storage_plugin.{name}.class_name": "MemKVStorageBackend",
             f"storage_plugin.{name}.servers": server.address,
             f"storage_plugin.{name}.auth_key": server.auth_key,
             f"storage_plugin.{name}.timeout_ms": 2000}
    extra.update({f"storage_plugin.{name}.{k}": v for k, v in settings.items()})
    return LMCacheEngineConfig.from_defaults(chunk_size=CHUNK, local_cpu=False, max_local_cpu_size=max_local_cpu_size,
                                             storage_plugins=plugins or [name], extra_config=extra)


def metadata(model=MODEL, world_size=1, worker_id=0, role=None):
    kwargs = {"role": role} if role else {}
    return LMCacheMetadata(model_name=model, world_size=world_size, local_world_size=world_size,
                           worker_id=worker_id, local_worker_id=worker_id, kv_dtype=DTYPE, kv_shape=KV_SHAPE,
                           chunk_size=CHUNK, **kwargs)


@pytest.fixture
def server(shared_server):
    return shared_server


@pytest.fixture
def managers():
    """Builds LMCache StorageManagers (and closes them, with their plugins, after the test)."""
    made = []

    def make(config, md=None):
        made.append(StorageManager(config, md or metadata(), EventManager()))
        return made[-1]

    yield make
    for manager in made:
        manager.close()


def plugin(manager):
    backend = manager.storage_backends["memkv"]
    assert isinstance(backend, MemKVStorageBackend)
    return backend


def request_keys(manager, tokens, salt=None, **tags):
    """The CacheEngineKeys LMCache's ChunkedTokenDatabase makes for the tokens of a request (its
    cache_salt and other tags in request_configs, as LMCache's vLLM integration passes them)."""
    configs = {"lmcache.tag.cache_salt": salt} if salt else {}
    configs.update({f"lmcache.tag.{k}": v for k, v in tags.items()})
    configs["lmcache.ttl"] = 60  # not a tag: no part of a key's identity
    db = ChunkedTokenDatabase(manager.config, manager.metadata)
    return [key for _, _, key in db.process_tokens(tokens=list(tokens), request_configs=configs)]


def tokens(n_chunks, start=0):
    return list(range(start, start + n_chunks * CHUNK))


def raw(obj):
    return bytes(obj.tensor.contiguous().view(torch.uint8).numpy())


def released(objs):
    """Whether nobody holds the MemoryObjs any more (LMCache freed them)."""
    return all(o.get_ref_count() == 0 for o in objs)


def put(manager, keys, objs):
    """StorageManager.batched_put (which releases the caller's hold), then waits until the plugin's
    stores are done: the plugin holds each object it stores until its store has finished."""
    manager.batched_put(keys, objs)
    wait_for(lambda: released(objs), 10, "the plugin's stores")


def hits(manager, keys):
    """LMCache's prefix lookup in MemKV: how many chunks from keys[0] are there."""
    return manager.batched_contains(keys, search_range=["memkv"])[0]


def on_lmcache_loop(manager, coro, timeout=10):
    """Runs a coroutine on the StorageManager's event loop (where LMCache awaits its backends)."""
    return asyncio.run_coroutine_threadsafe(coro, manager.loop).result(timeout)


def async_lookup_and_load(manager, keys, lookup_id="req"):
    """What StorageManager.async_lookup_and_prefetch does with a backend: batched_async_contains, then
    batched_get_non_blocking of the hit prefix, on its event loop."""
    backend = plugin(manager)
    hit = on_lmcache_loop(manager, backend.batched_async_contains(lookup_id, keys, False))
    if hit == 0:
        return []
    lengths = [i * CHUNK for i in range(hit + 1)]
    return on_lmcache_loop(manager, backend.batched_get_non_blocking(lookup_id, keys[:hit],
                                                                     {"cum_chunk_lengths": lengths}))


@pytest.fixture
def handed_out(monkeypatch):
    """record(manager) -> the list of every MemoryObj its LocalCPUBackend hands out from then on."""

    def record(manager):
        cpu = manager.storage_backends["LocalCPUBackend"]
        out, real = [], cpu.allocate

        def allocate(*args, **kwargs):
            obj = real(*args, **kwargs)
            if obj is not None:
                out.append(obj)
            return obj

        monkeypatch.setattr(cpu, "allocate", allocate)
        return out

    return record


def test_lmcache_builds_the_plugin_from_its_yaml_config_file(server, managers, tmp_path):
    """A YAML file as docs/engines/lmcache.md writes it (storage_plugins as one string, settings as
    strings) read by LMCacheEngineConfig.from_file: StorageManager's launcher builds MemKVStorageBackend
    with LMCache's keywords, its settings, LocalCPUBackend as allocator and the chunk layout of the
    metadata."""
    path = tmp_path / "lmcache.yaml"
    path.write_text(f"""chunk_size: {CHUNK}
local_cpu: false
max_local_cpu_size: 0.05
storage_plugins: memkv
extra_config:
  storage_plugin.memkv.module_path: {MODULE}
  storage_plugin.memkv.class_name: MemKVStorageBackend
  storage_plugin.memkv.servers: {server.address}
  storage_plugin.memkv.auth_key: "{server.auth_key}"
  storage_plugin.memkv.namespace: yaml-ns
  storage_plugin.memkv.async_threads: "2"
  storage_plugin.memkv.timeout_ms: "2000"
""")
    config = LMCacheEngineConfig.from_file(str(path))
    assert config.storage_plugins == ["memkv"]
    md = metadata()
    manager = managers(config, md)
    backend = plugin(manager)
    assert isinstance(backend, StoragePluginInterface)
    assert backend.plugin_name == "memkv" and backend.namespace == "yaml-ns" and str(backend) == "MemKVStorageBackend"
    cpu = manager.storage_backends["LocalCPUBackend"]
    assert isinstance(cpu, LocalCPUBackend)
    assert backend.local_cpu_backend is cpu and backend.get_allocator_backend() is cpu
    assert backend.metadata is md and backend.config is config and backend.dst_device == "cpu"
    assert backend.loop is manager.loop
    assert backend._core.async_threads == 2 and backend._core.config.client_options["timeout_ms"] == 2000
    shape = md.get_shapes()[0]
    assert backend._layout.nbytes == shape.numel() * DTYPE.itemsize
    keys = request_keys(manager, tokens(2))
    put(manager, keys, chunks(manager, 2, seed=20))
    assert hits(manager, keys) == 2
    assert backend.key_of(keys[0]) == b"yaml-ns/" + keys[0].to_string().encode()


def test_chunks_stored_for_one_request_are_found_by_later_ones(server, managers, handed_out):
    """Request 1 stores 3 chunks; request 2 (the same tokens and 2 more chunks; LMCache's token database
    gives it the same first 3 keys) finds and loads them through StorageManager's batched_get, stores its 2;
    then the async lookup and load, get, get_non_blocking give all 5. Loaded objects are LocalCPUBackend's,
    of the metadata's shape, and every object is released in the end."""
    manager = managers(config_for(server, namespace="sp-requests"))
    backend = plugin(manager)
    handed = handed_out(manager)
    keys1 = request_keys(manager, tokens(3))
    keys2 = request_keys(manager, tokens(5))
    assert keys2[:3] == keys1 and len(set(keys2)) == 5
    assert hits(manager, keys1) == 0
    objs = chunks(manager, 5, seed=21)
    want = [raw(o) for o in objs]
    put(manager, keys1, objs[:3])
    assert not any(backend.exists_in_put_tasks(k) for k in keys1)

    assert hits(manager, keys2) == 3
    got = manager.batched_get(keys2[:3], location="memkv")
    assert [raw(o) for o in got] == want[:3]
    shape = manager.metadata.get_shapes()[0]
    assert all(o.get_shape() == shape and o.get_dtype() == DTYPE and o.get_memory_format() == MemoryFormat.KV_2LTD
               and o.get_ref_count() == 1 for o in got)
    for o in got:
        o.ref_count_down()
    put(manager, keys2[3:], objs[3:])

    assert hits(manager, keys2) == 5
    loaded = async_lookup_and_load(manager, keys2)
    assert [raw(o) for o in loaded] == want
    single = backend.get_blocking(keys2[4])
    assert raw(single) == want[4]
    future = manager.get_non_blocking(keys2[0], location="memkv")
    first = future.result(timeout=10)
    assert raw(first) == want[0]
    for o in loaded + [single, first]:
        o.ref_count_down()
    assert len(handed) == 3 + 5 + 1 + 1 and released(handed), "every object a load allocated is released"


def test_a_store_chains_each_chunk_to_the_one_before_it(server, managers):
    """A store carries LMCache's chunk hashes (the token database's ints, as int64) and names each chunk's
    parent, the chunk before it in the request (the first heads the chain); a lookup is one
    match_prefix."""
    manager = managers(config_for(server, namespace="sp-chain"))
    backend = plugin(manager)
    keys = request_keys(manager, tokens(4))
    client = backend._core.io.client
    seen = []

    class Recording:  # the real client, with the options of its submitted puts and its match_prefix calls kept
        def __getattr__(self, name):
            return getattr(client, name)

        def submit_put_ptr(self, *args, **kwargs):
            seen.append(kwargs.get("options"))
            return client.submit_put_ptr(*args, **kwargs)

        def match_prefix(self, names):
            seen.append(("match", len(names)))
            return client.match_prefix(names)

    backend._core.io.client = Recording()
    put(manager, keys, chunks(manager, 4, seed=22))
    options = seen[0]
    assert all(isinstance(k.chunk_hash, int) for k in keys)
    int64 = [k.chunk_hash - (1 << 64) if k.chunk_hash >= 1 << 63 else k.chunk_hash for k in keys]
    assert [o.block_hash for o in options] == int64
    assert [o.parent_key for o in options] == [None] + [backend.key_of(k) for k in keys[:3]]
    assert [o.parent_hash for o in options] == [None] + int64[:3]
    assert {o.hash_kind for o in options} == {"int64"}
    assert hits(manager, keys) == 4 and seen[-1] == ("match", 4)


def test_a_key_with_a_bytes_chunk_hash_is_stored_with_that_hash(server, managers):
    """CacheEngineKey also takes a bytes chunk hash (to_string writes its hex): a store carries those
    bytes as the block hash and the parent's, and the chunks load."""
    manager = managers(config_for(server, namespace="sp-bytes"))
    backend = plugin(manager)
    keys = [CacheEngineKey(MODEL, 1, 0, bytes([i + 1]) * 16, DTYPE) for i in range(2)]
    assert keys[0].to_string() == f"{MODEL}@1@0@{'01' * 16}@bfloat16"
    client = backend._core.io.client
    seen = []

    class Recording:
        def __getattr__(self, name):
            return getattr(client, name)

        def submit_put_ptr(self, *args, **kwargs):
            seen.append(kwargs.get("options"))
            return client.submit_put_ptr(*args, **kwargs)

    backend._core.io.client = Recording()
    objs = chunks(manager, 2, seed=23)
    want = [raw(o) for o in objs]
    put(manager, keys, objs)
    assert [o.block_hash for o in seen[0]] == [k.chunk_hash for k in keys]
    assert [o.parent_hash for o in seen[0]] == [None, keys[0].chunk_hash]
    got = manager.batched_get(keys, location="memkv")
    assert [raw(o) for o in got] == want
    for o in got:
        o.ref_count_down()


def test_the_lookup_prefix_stops_at_a_missing_middle_chunk(server, managers, handed_out):
    """Chunk 2 of 6 removed through StorageManager.remove: the lookup prefix is 2, contains misses only
    chunk 2, the async load gives 2 chunks, a load of all 6 with a gap in what loads releases what follows
    the gap; batched_remove counts all 6 (absent ones too)."""
    manager = managers(config_for(server, namespace="sp-prefix"))
    backend = plugin(manager)
    keys = request_keys(manager, tokens(6))
    objs = chunks(manager, 6, seed=24)
    want = [raw(o) for o in objs]
    put(manager, keys, objs)
    handed = handed_out(manager)
    assert manager.remove(keys[2], locations=["memkv"]) == 1
    assert hits(manager, keys) == 2
    assert [manager.contains(k, search_range=["memkv"]) for k in keys] == ["memkv", "memkv", None] + ["memkv"] * 3
    got = async_lookup_and_load(manager, keys)
    assert [raw(o) for o in got] == want[:2]
    for o in got:
        o.ref_count_down()
    objs = on_lmcache_loop(manager, backend.batched_get_non_blocking("req", keys, None))
    assert [raw(o) for o in objs] == want[:2]
    for o in objs:
        o.ref_count_down()
    assert released(handed)
    assert manager.batched_remove(keys, locations=["memkv"]) == 6 and hits(manager, keys) == 0


def test_loads_read_straight_into_the_memory_objects_they_allocate(server, managers, handed_out, monkeypatch):
    """StorageManager.batched_get: each chunk is read into the MemoryObj the plugin allocated for it from
    LocalCPUBackend (the objects handed back are those objects, at their addresses)."""
    manager = managers(config_for(server, namespace="sp-zero-copy"))
    keys = request_keys(manager, tokens(2))
    objs = chunks(manager, 2, seed=25)
    want = [raw(o) for o in objs]
    put(manager, keys, objs)
    handed = handed_out(manager)
    addresses = []
    cpu = manager.storage_backends["LocalCPUBackend"]
    recording = cpu.allocate

    def allocate(*args, **kwargs):
        obj = recording(*args, **kwargs)
        addresses.append(obj.data_ptr)
        return obj

    monkeypatch.setattr(cpu, "allocate", allocate)
    got = manager.batched_get(keys, location="memkv")
    assert [id(o) for o in got] == [id(o) for o in handed], "each chunk is read into the object allocated for it"
    assert [o.data_ptr for o in got] == addresses and [raw(o) for o in got] == want
    for o in got:
        o.ref_count_down()


def test_a_partial_chunk_is_not_stored_and_a_value_of_another_size_is_a_miss(server, managers, handed_out):
    """A chunk of half the tokens is not stored; a value rewritten at another size behind LMCache's back is
    a miss (its object released); with LocalCPUBackend full, loads are misses, not errors."""
    manager = managers(config_for(server, namespace="sp-size", max_local_cpu_size=0.002))
    backend = plugin(manager)
    keys = request_keys(manager, tokens(3))
    shape = manager.metadata.get_shapes()[0]
    partial = manager.allocate(torch.Size([shape[0], shape[1], CHUNK // 2, shape[3]]), DTYPE)
    assert backend.batched_submit_put_task([keys[0]], [partial]) is None, "a partial chunk is not stored"
    partial.ref_count_down()
    objs = chunks(manager, 2, seed=26)
    want = raw(objs[0])
    put(manager, keys[1:], objs)
    with server.client(identity=backend._core.identity) as plain:
        plain.put(backend.key_of(keys[2]), bytes(1000))
    assert hits(manager, keys[1:]) == 2
    handed = handed_out(manager)
    got = manager.batched_get(keys, location="memkv")
    assert got[0] is None and raw(got[1]) == want and got[2] is None
    got[1].ref_count_down()
    assert len(handed) == 3 and released(handed), "the objects of misses are released"
    # Fill LocalCPUBackend (the allocator the loads allocate from), then load.
    filler = []
    while True:
        obj = manager.allocate(shape, DTYPE, eviction=False, busy_loop=False)
        if obj is None:
            break
        filler.append(obj)
    assert filler
    assert manager.batched_get(keys[1:2], location="memkv") == [None]
    for o in filler:
        o.ref_count_down()


def test_namespaces_models_and_ranks_do_not_collide(server, managers):
    """Two namespaces hold the same chunk apart; another model's keys, or another worker's of a world of 2,
    find nothing. The MemKV key is the namespace and CacheEngineKey.to_string()."""
    a = managers(config_for(server, namespace="tenant-a"), metadata("llama"))
    b = managers(config_for(server, namespace="tenant-b"), metadata("llama"))
    mistral = managers(config_for(server, namespace="tenant-a"), metadata("mistral"))
    rank1 = managers(config_for(server, namespace="tenant-a"), metadata("llama", world_size=2, worker_id=1))
    llama = request_keys(a, tokens(2))
    put(a, llama, chunks(a, 2, seed=27))
    assert hits(a, llama) == 2 and hits(b, llama) == 0
    assert hits(mistral, request_keys(mistral, tokens(2))) == 0
    assert hits(rank1, request_keys(rank1, tokens(2))) == 0
    assert plugin(a).key_of(llama[0]) == b"tenant-a/" + llama[0].to_string().encode()
    assert llama[0].to_string().startswith("llama@1@0@")


def test_a_server_that_stops_answering_then_dies_then_comes_back(own_server, managers, handed_out):
    """A frozen server: lookups and loads through StorageManager are misses within timeout_ms; a stopped
    one: contains, loads, the async pair, stores and removes fail quickly, without an exception, and
    release every object; the restarted (empty) server is used again."""
    server = own_server["server"]
    manager = managers(config_for(server, namespace="sp-fault", timeout_ms=1000, connect_timeout_ms=500))
    backend = plugin(manager)
    keys = request_keys(manager, tokens(3))
    objs = chunks(manager, 3, seed=28)
    want = [raw(o) for o in objs]
    put(manager, keys, objs)
    handed = handed_out(manager)
    with frozen(server):
        start = time.monotonic()
        assert hits(manager, keys) == 0 and manager.batched_get(keys[:1], location="memkv") == [None]
        assert time.monotonic() - start < 4.5, "a hung server must not hold LMCache much past timeout_ms"
    assert released(handed)

    server.stop()
    start = time.monotonic()
    assert hits(manager, keys) == 0
    assert [manager.contains(k, search_range=["memkv"]) for k in keys] == [None] * 3
    assert manager.batched_get(keys, location="memkv") == [None] * 3
    assert async_lookup_and_load(manager, keys) == []
    assert on_lmcache_loop(manager, backend.batched_get_non_blocking("req", keys)) == []
    objs = chunks(manager, 3, seed=28)
    futures = backend.batched_submit_put_task(keys, objs)
    for o in objs:
        o.ref_count_down()
    assert [ok for f in futures for ok in f.result(timeout=10)] == [False] * 3
    assert manager.remove(keys[0], locations=["memkv"]) == 0
    assert time.monotonic() - start < 5, "a dead server must not hold LMCache"
    assert released(handed) and released(objs) and not any(backend.exists_in_put_tasks(k) for k in keys)

    own_server["restart"]()

    def stored_again():
        obj = chunks(manager, 1, seed=28)
        future = backend.batched_submit_put_task(keys[:1], obj)
        obj[0].ref_count_down()
        return future[0].result(timeout=10) == [True]

    wait_for(stored_again, 15, "a store to the restarted server")
    assert hits(manager, keys) == 1
    got = manager.batched_get(keys[:1], location="memkv")
    assert raw(got[0]) == want[0]
    got[0].ref_count_down()


@pytest.mark.parametrize("setting, value, named", [
    ("timeout_ms", -1, ("'timeout_ms' in extra_config (storage_plugin.memkv.*): '-1' is not a non-negative "
                        "integer; allowed: 1..3600000")),
    ("servers", "nohost", "'servers' in extra_config (storage_plugin.memkv.*): 'nohost' is not host:port"),
    ("namespaec", "x", "unknown setting(s) 'namespaec' in extra_config (storage_plugin.memkv.*)"),
])
def test_a_bad_setting_is_loud_though_lmcache_goes_on_without_the_plugin(server, managers, caplog, capfd, setting,
                                                                         value, named):
    """A wrong storage_plugin.memkv.* setting: LMCache's launcher swallows the error and starts without the
    plugin; the adapter's CRITICAL log line and stderr name the setting, where it came from and what is
    allowed."""
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        manager = managers(config_for(server, **{setting: value}))
    assert "memkv" not in manager.storage_backends
    critical = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL and r.name.startswith("memkv")]
    assert len(critical) == 1 and named in critical[0], critical
    assert named in capfd.readouterr().err


def test_a_worker_without_local_cpu_backend_is_refused_and_a_scheduler_answers_lookups(server, managers, capfd):
    """max_local_cpu_size 0 on a worker: LMCache's storage_plugin_launcher gets no LocalCPUBackend and
    the plugin refuses to start, saying why; on LMCache's scheduler role (no LocalCPUBackend) the plugin
    answers lookups of what a worker stored, and loads are misses."""
    backends = collections.OrderedDict()
    storage_plugin_launcher(config_for(server, max_local_cpu_size=0), metadata(), None, None, "cpu", backends)
    assert "memkv" not in backends
    assert "max_local_cpu_size > 0" in capfd.readouterr().err

    worker = managers(config_for(server, namespace="sp-scheduler"))
    keys = request_keys(worker, tokens(2))
    put(worker, keys, chunks(worker, 2, seed=29))
    scheduler = managers(config_for(server, namespace="sp-scheduler"), metadata(role="scheduler"))
    assert "LocalCPUBackend" not in scheduler.storage_backends
    assert plugin(scheduler).local_cpu_backend is None
    assert hits(scheduler, keys) == 2
    assert plugin(scheduler).get_blocking(keys[0]) is None


def test_the_plugin_listed_under_two_names_is_refused(server, managers, capfd):
    """storage_plugins lists two names that both load MemKVStorageBackend: neither starts, and stderr says
    which."""
    config = config_for(server, plugins=["memkv", "again"])
    config.extra_config.update({"storage_plugin.again.module_path": MODULE,
                                "storage_plugin.again.class_name": "MemKVStorageBackend"})
    manager = managers(config)
    assert "memkv" not in manager.storage_backends and "again" not in manager.storage_backends
    assert "again, memkv all load" in capfd.readouterr().err


def test_cache_salts_and_tags_keep_two_requests_apart(server, managers):
    """Same tokens, LMCache's keys with two cache salts, none, or another tag besides the salt: the chunk
    hashes are equal, the keys not. What one salt stored is a miss (lookup, contains, get) for the others,
    and found and loaded by the same salt from another LMCache instance. The MemKV key is to_string(),
    salt tag included."""
    writer = managers(config_for(server, namespace="sp-salts"))
    reader = managers(config_for(server, namespace="sp-salts"))
    toks = tokens(3)
    a = request_keys(writer, toks, "tenant-a")
    b = request_keys(reader, toks, "tenant-b")
    plain = request_keys(reader, toks)
    other_tag = request_keys(reader, toks, "tenant-a", user="u2")
    assert [k.chunk_hash for k in a] == [k.chunk_hash for k in b] == [k.chunk_hash for k in plain]
    assert a[0] != b[0] and a[0] != plain[0] and a[0] != other_tag[0]
    objs = chunks(writer, 3, seed=30)
    want = [raw(o) for o in objs]
    put(writer, a, objs)
    for other in (b, plain, other_tag):
        assert hits(reader, other) == 0
        assert not any(plugin(reader).contains(k) for k in other)
        assert reader.batched_get(other, location="memkv") == [None] * 3
    again = request_keys(reader, toks, "tenant-a")
    assert hits(reader, again) == 3
    got = reader.batched_get(again, location="memkv")
    assert [raw(o) for o in got] == want
    for o in got:
        o.ref_count_down()
    stored = plugin(reader).key_of(a[0])
    assert stored == f"sp-salts/{MODEL}@1@0@{a[0].chunk_hash:x}@bfloat16@cache_salt%tenant-a".encode()
    assert plugin(reader).key_of(plain[0]).endswith(b"@bfloat16"), "an unsalted key is LMCache's string as it is"


def test_chunks_a_busy_server_sheds_are_not_stored_and_loads_go_on(server, managers, caplog):
    """The last two chunks of a store shed by a busy server (a SheddingClient in place of the plugin's):
    reported not stored, the store callback runs for the stored ones only, every MemoryObj is released,
    nothing raises or warns; the lookup finds the stored prefix and it loads."""
    manager = managers(config_for(server, namespace="sp-busy"))
    backend = plugin(manager)
    keys = request_keys(manager, tokens(4))
    names = {backend.key_of(k) for k in keys[2:]}
    backend._core.io.client = SheddingClient(backend._core.io.client, lambda key: key in names)
    called = []
    objs = chunks(manager, 4, seed=31)
    want = [raw(o) for o in objs]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        futures = backend.batched_submit_put_task(keys, objs, on_complete_callback=called.append)
        for o in objs:
            o.ref_count_down()
        assert [ok for f in futures for ok in f.result(timeout=10)] == [True, True, False, False]
    assert called == keys[:2]
    wait_for(lambda: released(objs), 10, "the release of every stored or shed object")
    stats = backend.get_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0, stats
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("memkv")]
    assert hits(manager, keys) == 2
    got = manager.batched_get(keys[:2], location="memkv")
    assert [raw(o) for o in got] == want[:2]
    for o in got:
        o.ref_count_down()


def test_a_plugin_built_outside_lmcache_raises_the_config_error(server):
    """Built as the launcher builds it (keywords config, dst_device, metadata, local_cpu_backend, loop) but
    outside LMCache's try: the ConfigError itself reaches the caller."""
    config = config_for(server, timeout_ms="soon")
    with pytest.raises(ConfigError, match=re.escape("'timeout_ms' in extra_config (storage_plugin.memkv.*)")) as e:
        MemKVStorageBackend(config=config, dst_device="cpu", metadata=metadata(role="scheduler"),
                            local_cpu_backend=None, loop=None)
    assert isinstance(e.value, memkv.InvalidArgument) and isinstance(e.value, ValueError)


# ------------------------------------------------------------ cache identity, restores

needs_identity = pytest.mark.skipif(not hasattr(memkv, "CacheIdentity"), reason="this memkv has no CacheIdentity")


@needs_identity
def test_identity_from_lmcaches_metadata_keeps_dtype_and_ranks_apart(server, managers):
    """The plugin's cache identity is LMCache's metadata (model_name,
    kv_dtype, chunk_size, worker_id of world_size, memory format and
    kv_shape) with LMCache's version; a deployment that differs only in
    dtype or worker finds nothing of another's on the shared server, and the
    server keeps them apart by identity: a client of another identity does
    not find the very key the plugin stored."""
    import lmcache
    a = managers(config_for(server, namespace="sp-ident"), metadata())
    fp16 = managers(config_for(server, namespace="sp-ident"), LMCacheMetadata(
        model_name=MODEL, world_size=1, local_world_size=1, worker_id=0, local_worker_id=0,
        kv_dtype=torch.float16, kv_shape=KV_SHAPE, chunk_size=CHUNK))
    rank1 = managers(config_for(server, namespace="sp-ident"), metadata(world_size=2, worker_id=1))
    ident = plugin(a)._core.identity
    assert (ident.model, ident.kv_dtype, ident.block_tokens, ident.tp_rank, ident.tp_size) == \
        (MODEL, "bfloat16", CHUNK, 0, 1)
    assert ident.layout == "KV_2LTD/" + "x".join(map(str, KV_SHAPE))
    assert ident.engine == "lmcache" and ident.engine_version == lmcache.__version__
    assert plugin(fp16)._core.identity.kv_dtype == "float16"
    assert (plugin(rank1)._core.identity.tp_rank, plugin(rank1)._core.identity.tp_size) == (1, 2)
    assert len({ident.tag, plugin(fp16)._core.identity.tag, plugin(rank1)._core.identity.tag}) == 3
    keys = request_keys(a, tokens(2))
    put(a, keys, chunks(a, 2, seed=41))
    assert hits(a, keys) == 2
    assert hits(fp16, request_keys(fp16, tokens(2))) == 0 and hits(rank1, request_keys(rank1, tokens(2))) == 0

    key = plugin(a).key_of(keys[0])
    common = {"servers": [server.address], "auth_key": server.auth_key}
    with memkv.Client(**common, identity=ident) as mine, \
            memkv.Client(**common, identity=plugin(fp16)._core.identity) as other:
        assert mine.exists(key) and not other.exists(key)


@needs_identity
def test_identity_settings_replace_and_extend_what_lmcache_says(server, managers):
    """identity_* plugin settings replace a field each; identity_extras adds extras."""
    manager = managers(config_for(server, namespace="sp-ident2", identity_revision="v2", identity_extras="team=x"))
    ident = plugin(manager)._core.identity
    assert ident.revision == "v2" and ident.extras == {"team": "x"} and ident.model == MODEL


def test_loads_report_their_chunks_in_time_or_late(server, managers):
    """A load's leading run of chunks is in time; chunks loaded after a
    missing one are late (LMCache recomputes from the first miss)."""
    manager = managers(config_for(server, namespace="sp-restores"))
    backend = plugin(manager)
    keys = request_keys(manager, tokens(5))
    put(manager, keys, chunks(manager, 5, seed=42))
    for o in manager.batched_get(keys[:3], location="memkv"):
        o.ref_count_down()
    assert (backend.get_stats()["restored_in_time"], backend.get_stats()["restored_late"]) == (3, 0)
    assert manager.remove(keys[1], locations=["memkv"]) == 1
    for o in on_lmcache_loop(manager, backend.batched_get_non_blocking("req", keys, None)):
        o.ref_count_down()
    assert (backend.get_stats()["restored_in_time"], backend.get_stats()["restored_late"]) == (4, 3)

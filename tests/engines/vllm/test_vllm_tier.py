"""memkv.adapters.vllm (MemKVTierManager) inside vLLM's released package.

vLLM builds the tier as `vllm serve` does: OffloadingSpecFactory makes a
TieringOffloadingSpec from an OffloadingConfig whose kv_connector_extra_config
names the tier in secondary_tiers, and the spec's get_manager() makes the
CPU primary tier (vLLM's shared-memory region, a few rows), the tier (through
SecondaryTierFactory, from the entry) and the TieringOffloadingManager that
drives it. An Engine here then makes the calls vLLM's OffloadingConnector
scheduler makes on that manager: on_new_request; prepare_store and
complete_store (a store from the GPU, whose completion cascades the chunks
to the tier); the prefix scan of lookup() (the connector's
_maximal_prefix_lookup: HIT_PENDING and RETRY defer the request without
ending the scan, MISS ends it) and on_schedule_end() closing each step
(which submits the promotions of the step and collects finished jobs);
prepare_load and complete_load (a load onto the GPU). The GPU side is the
test's: it writes a chunk's bytes into the primary row that prepare_store
names and reads a promoted chunk from the row that prepare_load names. The
Engine records the TransferJobs vLLM submits to the tier and the JobResults
the tier reports (the calls go through unchanged). Every transfer goes to a
memkv server process.

Where a test needs what vLLM's manager never does (jobs naming rows outside
the primary tier, calls after shutdown), it calls the tier with vLLM's own
TransferJob and ReqContext, and its docstring says so. The Engine and the
other helpers are in vllm_partner.py; the tests of faults (servers killed,
stalled, busy or draining; drain and shutdown) in test_vllm_tier_faults.py.
"""

import logging
import resource
from typing import Dict, List, Optional

import numpy as np
import pytest

import vllm
import vllm.plugins
from vllm.lora.request import LoRARequest
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import sha256, xxhash
from vllm.v1.core import kv_cache_utils
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.kv_offload.base import Locality, LookupResult, ReqContext, TierFilter, TierMatcher, make_offload_key
from vllm.v1.kv_offload.tiering.backpressure import EMABackpressureDetector
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager, TransferJob
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
from vllm.v1.request import Request

import memkv
import memkv.adapters.vllm as adapter

from vllm_partner import (ADAPTER, ROW, chunk_bytes, offload_keys, offloading_spec,
                          poll, primary, same_rows, tier_entry)


def test_factory_builds_the_tier_and_a_request_round_trips(server, engines):
    """vLLM's TieringOffloadingSpec builds the tier from a module_path entry
    of secondary_tiers; vLLM's TieringOffloadingManager cascades one
    engine's stored chunks to MemKV, and a second engine on the same server
    finds them (RETRY, then HIT), promotes them into its own primary rows
    and loads the same bytes."""
    writer = engines(tier_entry(server, name="memkv0", io_threads=2))
    tier = writer.tier
    assert isinstance(tier, adapter.MemKVTierManager) and isinstance(tier, SecondaryTierManager)
    assert tier.tier_type == "MemKVTierManager" and tier.locality is Locality.REMOTE
    assert tier.row_bytes == ROW == writer.row_bytes and tier.block_size_bytes == ROW
    ctx = writer.request("req-a")
    keys = offload_keys(b"round-trip", 8)

    # Unknown keys: RETRY while the server is asked, then MISS.
    assert writer.manager.lookup(keys[0], ctx) is LookupResult.RETRY
    assert writer.matched(keys, ctx) == 0

    # The cascade of a store from the GPU: the 8 chunks go to MemKV.
    result = writer.store(keys, ctx)
    assert result.success and result.transfer_time is not None and result.transfer_time >= 0
    job = writer.submitted[result.job_id]
    assert not job.is_promotion and list(job.keys) == keys and len(job.chunk_ids) == 8

    # Another engine (fresh primary, same servers and model) promotes them.
    reader = engines(tier_entry(server), rows=16)
    ctx2 = reader.request("req-b")
    assert reader.matched(keys, ctx2) == 8
    loaded, failed = reader.promoted()
    assert sorted(loaded) == sorted(keys) and not failed
    got = reader.read(keys, ctx2)
    for i, k in enumerate(keys):
        assert np.array_equal(got[i], chunk_bytes(k, ROW)), f"chunk {i} differs"
    untouched = sorted(set(range(16)) - {int(c) for j in reader.promotions() for c in j.chunk_ids})
    assert not reader.copy(untouched).any(), "rows not named by the load were written"
    assert not reader.manager.has_pending_work() and not writer.manager.has_pending_work()
    stats = reader.tier.stats()
    assert stats["loaded_chunks"] == 8 and stats["io"]["get_bytes"] == 8 * ROW


def test_stores_carry_each_chunks_block_hash(server, engines):
    """A cascade's puts carry the block hash of each OffloadKey (without its
    KV cache group index) and no parent: a job does not say its keys are
    one chain."""
    writer = engines(tier_entry(server), rows=4)
    client = writer.tier._client
    seen = []
    real_submit = client.submit_put_ptr

    class Recording:  # the real client, with its submit_put_ptr options kept
        def __getattr__(self, name):
            return getattr(client, name)

        def submit_put_ptr(self, *args, **kwargs):
            seen.extend(kwargs["options"])
            return real_submit(*args, **kwargs)

    writer.tier._client = Recording()
    ctx = writer.request("req-hash")
    keys = offload_keys(b"block-hash", 4, group=1)
    assert writer.store(keys, ctx).success
    assert [o.block_hash for o in seen] == [k[:-4] for k in keys]
    assert all(o.parent_key is None and o.parent_hash is None and o.retention == "normal" for o in seen)
    reader = engines(tier_entry(server), rows=4)
    assert reader.matched(keys, reader.request("req-hash-2")) == 4


def test_vllm_loads_the_entry_point_and_builds_the_memkv_type(server, engines, monkeypatch):
    """vLLM's load_general_plugins (VLLM_PLUGINS=memkv) finds the memkv
    distribution's vllm.general_plugins entry point through importlib.metadata
    and runs register(): the entry {"type": "memkv"}, without module_path,
    which vLLM refuses as an unknown type before, then builds the tier."""
    # Registrations made here are undone after the test.
    monkeypatch.setattr(SecondaryTierFactory, "_registry", dict(SecondaryTierFactory._registry))
    SecondaryTierFactory._registry.pop(adapter.TIER_NAME, None)
    monkeypatch.setattr(vllm.plugins, "plugins_loaded", False)
    monkeypatch.setenv("VLLM_PLUGINS", "memkv")
    entry = tier_entry(server, type="memkv")
    del entry["module_path"]
    with pytest.raises(ValueError, match="Unknown secondary tier type: 'memkv'"):
        engines(entry)

    vllm.plugins.load_general_plugins()
    assert adapter.TIER_NAME in SecondaryTierFactory._registry
    adapter.register()  # vLLM may load plugins more than once per process: nothing happens
    engine = engines(entry, rows=4)
    assert isinstance(engine.tier, adapter.MemKVTierManager) and engine.tier.tier_type == "memkv"
    keys = offload_keys(b"entry-point", 4)
    assert engine.store(keys, engine.request("ep")).success
    reader = engines(tier_entry(server), rows=4)  # the module_path form reads what the memkv type stored
    assert reader.matched(keys, reader.request("ep2")) == 4


def test_module_path_form_needs_no_plugin(server, engines, monkeypatch):
    """{"type": "MemKVTierManager", "module_path": "memkv.adapters.vllm"}:
    vLLM's tier factory imports the class from module_path with no plugin
    loaded and passes the rest of the entry to it."""
    monkeypatch.setattr(SecondaryTierFactory, "_registry", dict(SecondaryTierFactory._registry))
    SecondaryTierFactory._registry.pop(adapter.TIER_NAME, None)
    engine = engines(tier_entry(server), rows=4)
    assert adapter.TIER_NAME not in SecondaryTierFactory._registry
    assert isinstance(engine.tier, adapter.MemKVTierManager) and engine.tier.tier_type == "MemKVTierManager"
    keys = offload_keys(b"module-path", 4)
    assert engine.store(keys, engine.request("mp")).success
    reader = engines(tier_entry(server), rows=4)
    assert reader.matched(keys, reader.request("mp2")) == 4


def test_keys_vllm_reads_in_the_entry_are_accepted(server, engines):
    """The keys of a tier entry that vLLM itself reads: a backpressure entry
    (EMABackpressureDetector) becomes the tier's bp_detector, with the
    network watermarks that "locality": "REMOTE" selects, and is fed by the
    cascades; the locality the tier reports follows the entry (LOCAL /
    REMOTE, any case) and a request whose load-tier filter excludes it never
    asks it; a tier name is accepted; another locality is refused, named."""
    engine = engines(tier_entry(server, name="remote_memkv", locality="REMOTE",
                                backpressure={"backpressure_cls": "EMABackpressureDetector"}), rows=4)
    detector = engine.tier.bp_detector
    assert isinstance(detector, EMABackpressureDetector)
    assert detector._high == EMABackpressureDetector.NETWORK_HIGH_WATER_S
    assert detector._low == EMABackpressureDetector.NETWORK_LOW_WATER_S
    assert engine.tier.locality is Locality.REMOTE
    keys = offload_keys(b"locality", 4)
    assert engine.store(keys, engine.request("bp")).success
    assert detector._completions == 1, "the manager did not feed the cascade to the detector"

    reader = engines(tier_entry(server, locality="local"), rows=4)
    assert reader.tier.locality is Locality.LOCAL
    remote_only = TierFilter(matchers=(TierMatcher(locality=Locality.REMOTE),))
    assert reader.matched(keys, reader.request("filtered", load_tier_filter=remote_only)) == 0
    assert reader.tier.stats()["lookups"] == 0, "a filtered-out tier was asked"
    assert reader.matched(keys, reader.request("unfiltered")) == 4

    # The keys vLLM's factory puts in or leaves: accepted; a base-class
    # argument (backpressure_detector) goes to vLLM's base.
    _, view = primary(2)
    tier = adapter.MemKVTierManager(offloading_spec=offloading_spec(), primary_kv_view=view,
                                    tier_type="MemKVTierManager", type="MemKVTierManager", module_path=ADAPTER,
                                    name="remote_memkv", backpressure_detector=None,
                                    servers=server.address, auth_key=server.auth_key)
    assert tier.bp_detector is None
    tier.shutdown()
    with pytest.raises(adapter.ConfigError, match=r"'locality' in secondary_tiers\[0\] of kv_connector_extra_config: "
                                                  r"'nearby' is not a locality; allowed: LOCAL, REMOTE"):
        engines(tier_entry(server, locality="nearby"))


def test_several_requests_and_prefix_semantics(server, engines):
    """Two requests' cascades at once; a fresh engine's prefix scans find
    each request's own full prefix and only its own tail; a missing middle
    chunk ends the prefix where vLLM's scan ends it; later requests asking
    for a known-absent chunk share its verdict (no new probe)."""
    writer = engines(tier_entry(server), rows=16)
    shared = offload_keys(b"prefix-s", 6)
    a_keys = shared[:4] + offload_keys(b"prefix-A", 2)
    b_keys = shared[:4] + offload_keys(b"prefix-B", 3)
    ra, rb = writer.request("a"), writer.request("b")
    ja = writer.put(a_keys, ra)
    jb = writer.put(b_keys, rb)  # its prefix is in the primary tier already: only its tail is cascaded
    assert [list(writer.submitted[j].keys) for j in ja + jb] == [a_keys, b_keys[4:]]
    done = writer.wait(ja + jb)
    assert all(r.success for r in done.values())

    fresh = engines(tier_entry(server), rows=16)
    assert fresh.matched(a_keys, fresh.request("a2")) == 6
    assert fresh.matched(b_keys, fresh.request("b2")) == 7
    assert fresh.matched(shared[:4] + offload_keys(b"prefix-C", 2), fresh.request("c")) == 4

    gap = offload_keys(b"prefix-gap", 5)
    assert writer.store([gap[0], gap[1], gap[3], gap[4]], writer.request("g")).success
    fresh3 = engines(tier_entry(server, miss_ttl_ms=600000), rows=16)
    assert fresh3.matched(gap, fresh3.request("g2")) == 2
    assert sorted(fresh3.promoted()[0]) == sorted(gap[:2])  # only the prefix found is promoted

    # The absent chunk's verdict is shared by later requests: no new probe.
    probes = fresh3.tier.stats()["probes"]
    for r in ("x", "y", "z"):
        assert fresh3.matched(gap, fresh3.request(r)) == 2
    assert fresh3.tier.stats()["probes"] == probes


def test_zero_copy_from_and_into_the_primary_rows(server, engines):
    """The tier moves vLLM's own primary rows (its shared-memory region) to
    and from MemKV by address: the row addresses are vLLM's, peak RSS does
    not grow by the 2 x 96 MiB moved, and vLLM releases its view at
    shutdown (the tier holds no export of it)."""
    rows, row_bytes = 24, 4 << 20  # 96 MiB each way
    writer = engines(tier_entry(server, batch_blocks=8), rows=rows, row_bytes=row_bytes)
    reader = engines(tier_entry(server), rows=rows, row_bytes=row_bytes)
    tier = writer.tier
    assert tier.row_bytes == row_bytes
    assert [tier.row_address(i) for i in (0, 5)] == [writer.address(0), writer.address(5)]
    assert reader.tier.row_address(rows - 1) == reader.address(rows - 1)
    keys = offload_keys(b"zero-copy", rows)
    ctx = writer.request("z")
    out = writer.manager.prepare_store(keys, ctx)
    written = [int(c) for c in out.store_spec.chunk_ids]
    for key, chunk in zip(out.keys_to_store, written):  # the GPU side, one row at a time
        writer.write([chunk], [chunk_bytes(key, row_bytes)])
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    writer.manager.complete_store(out.keys_to_store, ctx)
    [store] = list(writer.submitted)
    assert writer.wait([store], timeout_s=60)[store].success
    ctx2 = reader.request("z2")
    assert reader.matched(keys, ctx2, timeout_s=60) == rows
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss) / 1024
    assert grew_mib < 48, f"peak RSS grew {grew_mib:.0f} MiB moving 2 x 96 MiB: something copied"
    read = [int(c) for c in reader.manager.prepare_load(keys, ctx2).chunk_ids]
    reader.manager.complete_load(keys, ctx2)
    assert same_rows(writer, written, reader, read)
    reader.shutdown()  # vLLM's primary tier releases its view: BufferError if an export were held


def test_two_models_and_two_layouts_do_not_collide(server, engines):
    """vLLM's OffloadingConfig names the model, dtype and parallel layout:
    two models, or one model in two tensor-parallel layouts, have other keys
    for the same OffloadKey and never read each other's chunks; an explicit
    namespace replaces the model part only."""
    keys = offload_keys(b"models", 3)
    a = engines(tier_entry(server), rows=3, model="org/model-a")
    b = engines(tier_entry(server), rows=3, model="org/model-b")
    assert a.tier.memkv_key(keys[0]) != b.tier.memkv_key(keys[0])
    assert a.tier.memkv_key(keys[0]) == (b"vllm/org-model-a/" + keys[0].hex().encode() +
                                         b"/tp1-pp1-pcp1-dcp1-bfloat16-t16x1-r%d" % ROW)
    long_name = adapter.default_namespace(offloading_spec(model="/models/" + "x" * 300 + "/ é"))
    assert long_name.startswith("vllm/-models-xxx") and len(long_name) <= 5 + 120 and long_name.isascii()
    assert a.store(keys, a.request("a"), tag=b"model-a").success
    assert b.matched(keys, b.request("b")) == 0  # model b never sees model a's chunks
    assert b.store(keys, b.request("b2"), tag=b"model-b").success
    for model, tag in (("org/model-a", b"model-a"), ("org/model-b", b"model-b")):
        reader = engines(tier_entry(server), rows=3, model=model)
        ctx = reader.request("l")
        assert reader.matched(keys, ctx) == 3, model
        got = reader.read(keys, ctx)
        assert all(np.array_equal(got[i], chunk_bytes(k, ROW, tag)) for i, k in enumerate(keys)), model
    # Same model, another tensor-parallel layout: other keys.
    tp2 = engines(tier_entry(server), rows=3, model="org/model-a", tp=2)
    assert tp2.tier.memkv_key(keys[0]) != a.tier.memkv_key(keys[0])
    assert tp2.matched(keys, tp2.request("t")) == 0
    # An explicit namespace replaces the model part; the layout part stays.
    named = engines(tier_entry(server, namespace="team-x"), rows=3, model="org/model-a")
    assert named.tier.memkv_key(keys[0]).startswith(b"team-x/")
    assert named.tier.memkv_key(keys[0]).endswith(a.tier.memkv_key(keys[0]).rsplit(b"/", 1)[1])


def test_cache_salt_keeps_two_requests_apart(server, engines):
    """vLLM's own block hashes (Request with get_request_block_hasher, sha256)
    of one prompt under two cache salts, no salt and another LoRA differ from
    the first block on; the tier keys the whole OffloadKey, so what one
    salt stored is a MISS for the others (nothing promoted) and the same
    salt, in another engine, finds and loads it all."""
    init_none_hash(sha256)
    hasher = get_request_block_hasher(16, sha256)
    tokens = list(range(5000, 5000 + 6 * 16))

    def request_keys(cache_salt: Optional[str] = None, lora: Optional[LoRARequest] = None) -> List[bytes]:
        request = Request(request_id="r", prompt_token_ids=tokens, sampling_params=SamplingParams(max_tokens=1),
                          pooling_params=None, cache_salt=cache_salt, lora_request=lora, block_hasher=hasher)
        return [make_offload_key(h, 0) for h in request.block_hashes]

    a = request_keys("tenant-a")
    b = request_keys("tenant-b")
    plain = request_keys()
    lora = request_keys("tenant-a", LoRARequest("adapter-1", 1, "/adapters/1"))
    assert len(a) == 6 and all(len({x, y, z, w}) == 4 for x, y, z, w in zip(a, b, plain, lora))
    writer = engines(tier_entry(server), rows=6)
    assert all(k.hex().encode() in writer.tier.memkv_key(k) for k in a)
    assert writer.store(a, writer.request("a")).success

    reader = engines(tier_entry(server), rows=6)
    for name, other in (("b", b), ("plain", plain), ("lora", lora)):
        assert reader.matched(other, reader.request(name)) == 0, name
    assert not reader.promotions() and not reader.copy(range(6)).any(), "a miss was promoted"
    ctx = reader.request("a-again")
    assert reader.matched(request_keys("tenant-a"), ctx) == 6
    got = reader.read(a, ctx)
    assert all(np.array_equal(got[i], chunk_bytes(k, ROW)) for i, k in enumerate(a))


def test_wrong_size_value_fails_the_load(server, engines):
    """A promotion whose values are of another size than the row fails
    (partially: successful_keys names the chunks loaded); vLLM keeps those
    and drops the others, whose lookups then answer MISS."""
    writer = engines(tier_entry(server), rows=4)
    keys = offload_keys(b"wrong-size", 4)
    assert writer.store(keys, writer.request("w")).success
    # Another writer of the tier's identity leaves values of other sizes under keys 2 and 3.
    with server.client(identity=writer.tier.identity) as plain:
        plain.put(writer.tier.memkv_key(keys[2]), b"short value")
        plain.put(writer.tier.memkv_key(keys[3]), np.zeros(ROW * 2, dtype=np.uint8))
    reader = engines(tier_entry(server), rows=4)
    ctx = reader.request("w2")
    assert reader.matched(keys, ctx) == 2
    loaded, failed = reader.promoted()
    assert sorted(loaded) == sorted(keys[:2]) and sorted(failed) == sorted(keys[2:])
    for job in reader.promotions():  # a job with loaded and failed chunks names the loaded ones
        result = reader.results[job.job_id]
        if not result.success and set(job.keys) & set(keys[:2]):
            assert sorted(result.successful_keys) == sorted(set(job.keys) & set(keys[:2]))
    got = reader.read(keys[:2], ctx)
    assert all(np.array_equal(got[i], chunk_bytes(k, ROW)) for i, k in enumerate(keys[:2]))
    # vLLM asks the tier again for the failed chunks: MISS, so it does not promote them again.
    assert reader.lookups(keys, ctx) == [LookupResult.HIT, LookupResult.HIT, LookupResult.MISS]
    assert reader.manager.lookup(keys[3], ctx) is LookupResult.MISS
    assert reader.tier.lookup(keys[2], ctx) is LookupResult.MISS


def test_bad_jobs_fail_without_raising(server):
    """Jobs vLLM's manager never submits (it names only rows its primary
    tier allocated), so made here with vLLM's TransferJob and ReqContext and
    submitted to a tier vLLM's factory built: rows outside the view, fewer
    rows than keys, a negative row. Each is reported failed by
    get_finished_jobs(), none raises; an empty job succeeds."""
    _, view = primary(4)
    tier = SecondaryTierFactory.create_secondary_tier(tier_entry(server), view, offloading_spec(rows=4))
    try:
        ctx = ReqContext(req_id="bad")
        keys = offload_keys(b"bad-job", 2)
        jobs = [TransferJob(job_id=0, keys=keys, chunk_ids=np.array([0, 4], dtype=np.int32), is_promotion=False,
                            req_context=ctx),
                TransferJob(job_id=1, keys=keys, chunk_ids=np.array([0], dtype=np.int32), is_promotion=True,
                            req_context=ctx),
                TransferJob(job_id=2, keys=keys, chunk_ids=np.array([-1, 0], dtype=np.int32), is_promotion=True,
                            req_context=ctx),
                TransferJob(job_id=3, keys=[], chunk_ids=np.array([], dtype=np.int32), is_promotion=False,
                            req_context=ctx)]
        for job in jobs:
            (tier.submit_load if job.is_promotion else tier.submit_store)(job)
        done: Dict[int, JobResult] = {}

        def all_reported() -> bool:
            done.update((r.job_id, r) for r in tier.get_finished_jobs())
            return len(done) == 4
        poll(all_reported, 10, "results of the bad jobs")
        assert [done[j].success for j in range(4)] == [False, False, False, True]
        assert all(isinstance(r, JobResult) for r in done.values())
    finally:
        tier.shutdown()


def test_settings_errors_name_the_setting(server, engines, monkeypatch):
    """A bad setting is a ConfigError naming it and what is allowed; built
    by vLLM's TieringOffloadingSpec, the message names the entry of
    secondary_tiers it came from, and vLLM shuts down the tier it had
    already built. The environment is the fallback for what the entry lacks."""
    _, view = primary(2)
    spec = offloading_spec(rows=2)

    def build(**settings):
        return adapter.MemKVTierManager(offloading_spec=spec, primary_kv_view=view, tier_type="memkv", **settings)

    ok = {"servers": [server.address], "auth_key": server.auth_key}
    with pytest.raises(adapter.ConfigError,
                       match="'timeout_ms' in .*: 'fast' is not a non-negative integer; allowed: 1..3600000"):
        build(**ok, timeout_ms="fast")
    with pytest.raises(adapter.ConfigError, match="unknown setting.*'server'.*allowed: servers"):
        build(server=server.address, auth_key=server.auth_key)
    # Through vLLM: the second entry is refused, naming it.
    built = []
    real_init = adapter.MemKVTierManager.__init__

    def counting_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        built.append(self)
    monkeypatch.setattr(adapter.MemKVTierManager, "__init__", counting_init)
    with pytest.raises(adapter.ConfigError, match=r"'timeout_ms' in secondary_tiers\[1\] of kv_connector_extra_config"):
        engines(tier_entry(server), tier_entry(server, timeout_ms=0))
    monkeypatch.undo()
    assert len(built) == 1 and built[0]._closed, "vLLM did not shut down the tier it had built"
    with pytest.raises(adapter.ConfigError, match="'io_threads'.*1..64"):
        build(**ok, io_threads=0)
    with pytest.raises(adapter.ConfigError, match="'transport'.*allowed: auto, tcp, rdma"):
        build(**ok, transport="udp")
    with pytest.raises(adapter.ConfigError, match="'auth_key' in .*allowed: exactly 64 hex characters"):
        build(servers=[server.address], auth_key="nope")
    for name in ("MEMKV_SERVERS", "MEMKV_AUTH_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(adapter.ConfigError, match="no servers.*MEMKV_SERVERS"):
        build(auth_key=server.auth_key)
    monkeypatch.setenv("MEMKV_TIMEOUT_MS", "soon")
    with pytest.raises(adapter.ConfigError, match="MEMKV_TIMEOUT_MS \\(environment\\)"):
        build(**ok)
    assert issubclass(adapter.ConfigError, ValueError)
    monkeypatch.delenv("MEMKV_TIMEOUT_MS")
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    tier = build(io_threads="3")
    assert tier.config.servers == (server.address,) and tier.config.extra["io_threads"] == 3
    tier.shutdown()
    with pytest.raises(ValueError, match="primary_kv_view must be 2-D"):
        adapter.MemKVTierManager(offloading_spec=spec, primary_kv_view=memoryview(bytearray(64)), **ok)


def test_hash_seed_warning_only_when_vllm_seeds_at_random(server, monkeypatch, caplog):
    """The tier warns (once) that other processes cannot reuse its chunks
    only when vLLM seeds its block hashes at random: with PYTHONHASHSEED
    unset, not for vLLM's default sha256 (a fixed seed), but for xxhash; it
    learns which at the first lookup, since vLLM seeds (init_none_hash)
    after building its tiers."""
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)
    monkeypatch.setattr(adapter, "_WARNED_HASH_SEED", False)
    # vLLM's state before it seeds, restored after the test.
    monkeypatch.setattr(kv_cache_utils, "_NONE_HASH_SEED", None)
    monkeypatch.setattr(kv_cache_utils, "NONE_HASH", getattr(kv_cache_utils, "NONE_HASH", None), raising=False)
    _, view = primary(2)

    def tier_then_seed(hash_fn):
        monkeypatch.setattr(kv_cache_utils, "_NONE_HASH_SEED", None)
        tier = SecondaryTierFactory.create_secondary_tier(tier_entry(server), view, offloading_spec(rows=2))
        init_none_hash(hash_fn)
        tier.lookup(offload_keys(b"seed", 1)[0], ReqContext(req_id="seed"))
        tier.shutdown()

    def warnings():
        return [r for r in caplog.records if r.name == "memkv.adapters" and "PYTHONHASHSEED" in r.getMessage()]

    with caplog.at_level(logging.WARNING, logger="memkv.adapters"):
        tier_then_seed(sha256)
        assert not warnings(), "warned for a fixed seed"
        tier_then_seed(xxhash)
        assert len(warnings()) == 1 and warnings()[0].levelno == logging.WARNING
        tier_then_seed(xxhash)
        assert len(warnings()) == 1, "warned twice in one process"
    init_none_hash(sha256)


# ------------------------------------------------------------ cache identity, restores

needs_identity = pytest.mark.skipif(not hasattr(memkv, "CacheIdentity"), reason="this memkv has no CacheIdentity")


@needs_identity
def test_identity_from_vllms_config_keeps_dtype_and_tp_apart(server, engines):
    """The tier's cache identity is vLLM's OffloadingConfig (model, KV dtype,
    tokens per chunk, TP rank and size, KV layout and row size) with vLLM's
    version; two deployments that differ only in dtype or TP size share one
    server and never see each other's chunks. The server keeps them apart
    by identity, not only by key: a client of another identity (or of
    none) does not find the very key a tier stored."""
    keys = offload_keys(b"identity", 3)
    a = engines(tier_entry(server), rows=3, model="org/model-id", dtype="bfloat16")
    half = engines(tier_entry(server), rows=3, model="org/model-id", dtype="float16")
    tp2 = engines(tier_entry(server), rows=3, model="org/model-id", tp=2)
    ident = a.tier.identity
    assert (ident.model, ident.kv_dtype, ident.block_tokens, ident.tp_rank, ident.tp_size) == \
        ("org/model-id", "bfloat16", 16, 0, 1)
    assert ident.engine == "vllm" and ident.engine_version == vllm.__version__
    assert ident.layout.endswith(f"r{ROW}")
    assert half.tier.identity.kv_dtype == "float16" and tp2.tier.identity.tp_size == 2
    assert len({ident.tag, half.tier.identity.tag, tp2.tier.identity.tag}) == 3
    assert a.store(keys, a.request("a"), tag=b"bf16").success
    assert half.matched(keys, half.request("h")) == 0
    assert tp2.matched(keys, tp2.request("t")) == 0
    same = engines(tier_entry(server), rows=3, model="org/model-id", dtype="bfloat16")
    assert same.tier.identity == ident and same.matched(keys, same.request("s")) == 3

    key = a.tier.memkv_key(keys[0])
    common = {"servers": [server.address], "auth_key": server.auth_key, "transport": "tcp"}
    with memkv.Client(**common, identity=ident) as mine, \
            memkv.Client(**common, identity=half.tier.identity) as other, memkv.Client(**common) as none:
        assert mine.exists(key)
        assert not other.exists(key) and not none.exists(key)


@needs_identity
def test_identity_settings_replace_and_extend_what_vllm_says(server, engines):
    """identity_* settings in the tier's entry replace a field each
    (identity_revision: a revision vLLM's OffloadingConfig does not carry)
    and identity_extras adds to the extras; a bad one is a ConfigError
    naming the setting."""
    a = engines(tier_entry(server, identity_revision="abc123", identity_extras=["team=x"]), rows=3)
    assert a.tier.identity.revision == "abc123" and a.tier.identity.extras == {"team": "x"}
    assert a.tier.identity.kv_dtype == "bfloat16"
    with pytest.raises(adapter.ConfigError, match="identity_tp_rank"):
        engines(tier_entry(server, identity_tp_rank=5), rows=3)


def test_promotions_are_reported_in_time_or_late(server, engines):
    """A promotion that ends while vLLM still waits for it is reported in
    time (every chunk loaded); one whose request vLLM finished first, late."""
    keys = offload_keys(b"restores", 4)
    writer = engines(tier_entry(server), rows=4)
    assert writer.store(keys, writer.request("w")).success
    reader = engines(tier_entry(server), rows=8)
    assert reader.matched(keys, reader.request("r")) == 4
    io = reader.tier.stats()["io"]
    assert (io["restored_in_time"], io["restored_late"]) == (4, 0)

    # Straight to the tier (vLLM's manager never finishes a request it
    # promotes for): the request finishes before the load is collected.
    late_ctx = ReqContext(req_id="gone")
    reader.tier.submit_load(TransferJob(job_id=10_000, keys=keys, chunk_ids=np.arange(4, 8), is_promotion=True,
                                        req_context=late_ctx))
    reader.tier.on_request_finished(late_ctx)
    done = poll(lambda: [r for r in reader.tier.get_finished_jobs() if r.job_id == 10_000] or None, 10,
                "the late load")
    assert done[0].success
    io = reader.tier.stats()["io"]
    assert (io["restored_in_time"], io["restored_late"]) == (4, 4)
    if "fetched_in_time" in io["client"]:  # what the client sends the server
        assert (io["client"]["fetched_in_time"], io["client"]["fetched_late"]) == (4, 4)

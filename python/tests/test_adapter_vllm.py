"""memkv.adapters.vllm (MemKVTierManager) against real MemKV servers.

vLLM is not needed: its tiering API (vllm.v1.kv_offload.base and
.tiering.base/.factory) is replaced in sys.modules by small look-alikes of
the documented classes, and the tier is driven the way vLLM's
TieringOffloadingManager drives a secondary tier: built by the factory,
on_new_request, a prefix scan of lookup() per scheduler step (RETRY does not
stop the scan, MISS does) closed by on_schedule_end(), submit_store /
submit_load of TransferJobs whose chunk_ids index the primary memoryview,
and get_finished_jobs() polled until every job has reported. MemKV itself
is never mocked: every transfer goes to a memkv server process.
"""

import abc
import dataclasses
import enum
import hashlib
import importlib
import logging
import os
import pickle
import resource
import signal
import subprocess
import sys
import time
import types
from collections import namedtuple
from typing import Any, Dict, List, Optional

import numpy as np
import pytest

import memkv
import memkv.testing
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names
from shedding_client import SheddingClient

ADAPTER = "memkv.adapters.vllm"
ROW = 16 * 1024  # bytes of one primary row (one offloaded chunk) in most tests
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary() -> str:
    return os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv")


# ----------------------------------------------------------- vLLM look-alikes

def _module(name: str, **attrs: Any) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    return m


def make_modern_vllm(module_path_lookup: bool = True) -> Dict[str, types.ModuleType]:
    """The documented shapes of vLLM's current tiering API. With
    module_path_lookup (vLLM trees from 2026-08-05 on) the tier factory also
    imports a type it has not registered from the entry's module_path;
    without it (older trees) it knows only registered types."""

    class LookupResult(enum.Enum):
        MISS = enum.auto()
        HIT = enum.auto()
        HIT_PENDING = enum.auto()
        RETRY = enum.auto()

    class OffloadPolicy(enum.Enum):
        CHUNK_LEVEL = "chunk_level"
        REQUEST_LEVEL = "request_level"

    @dataclasses.dataclass
    class RequestOffloadingContext:
        policy: OffloadPolicy = OffloadPolicy.CHUNK_LEVEL

    @dataclasses.dataclass
    class ReqContext:
        req_id: str
        kv_transfer_params: Optional[dict] = None

    ScheduleEndContext = namedtuple("ScheduleEndContext", ["new_req_ids", "preempted_req_ids"])

    class Locality(enum.Enum):
        LOCAL = "LOCAL"
        REMOTE = "REMOTE"

    def make_offload_key(block_hash: bytes, group_idx: int) -> bytes:
        return block_hash + group_idx.to_bytes(4, "big", signed=False)

    @dataclasses.dataclass
    class TransferJob:
        job_id: int
        keys: Any
        chunk_ids: np.ndarray
        is_promotion: bool
        req_context: ReqContext

    @dataclasses.dataclass
    class JobResult:
        job_id: int
        success: bool
        successful_keys: Any = None
        transfer_time: Optional[float] = None

    class SecondaryTierManager(abc.ABC):
        medium = None

        def __init__(self, offloading_spec, primary_kv_view: memoryview, tier_type: str) -> None:
            self._offloading_spec = offloading_spec
            self._primary_kv_view = primary_kv_view
            self.tier_type = tier_type
            self.locality = None

        @abc.abstractmethod
        def lookup(self, key, req_context): ...

        @abc.abstractmethod
        def submit_store(self, job_metadata): ...

        @abc.abstractmethod
        def submit_load(self, job_metadata): ...

        @abc.abstractmethod
        def get_finished_jobs(self): ...

        @abc.abstractmethod
        def on_new_request(self, req_context): ...

        @abc.abstractmethod
        def drain_jobs(self): ...

        def has_pending_work(self):
            return False

        def on_schedule_end(self, context):
            return None

        def shutdown(self):
            return None

        def get_stats(self):
            return None

    class SecondaryTierFactory:
        _registry: Dict[str, Any] = {}

        @classmethod
        def register_tier(cls, tier_type, module_path, class_name):
            if tier_type in cls._registry:
                raise ValueError(f"Tier '{tier_type}' is already registered.")
            cls._registry[tier_type] = lambda: getattr(importlib.import_module(module_path), class_name)

        @classmethod
        def get_tier_class(cls, tier_config):
            tier_type = tier_config.get("type")
            if tier_type in cls._registry:
                return cls._registry[tier_type]()
            if not module_path_lookup or tier_config.get("module_path") is None:
                raise ValueError(f"Unknown secondary tier type: {tier_type!r}. "
                                 f"Supported types: {list(cls._registry)}")
            tier_cls = getattr(importlib.import_module(tier_config["module_path"]), tier_type)
            assert issubclass(tier_cls, SecondaryTierManager)
            return tier_cls

        @classmethod
        def create_secondary_tier(cls, tier_config, primary_kv_view, offloading_spec):
            tier_cls = cls.get_tier_class(tier_config)
            config = dict(tier_config)
            tier_type = config.pop("type")
            if module_path_lookup:  # the older factory passes every other key on
                config.pop("module_path", None)
            return tier_cls(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view,
                            tier_type=tier_type, **config)

    base = _module("vllm.v1.kv_offload.base", LookupResult=LookupResult, OffloadPolicy=OffloadPolicy,
                   RequestOffloadingContext=RequestOffloadingContext, ReqContext=ReqContext,
                   ScheduleEndContext=ScheduleEndContext, Locality=Locality, OffloadKey=bytes,
                   make_offload_key=make_offload_key)
    tiering_base = _module("vllm.v1.kv_offload.tiering.base", TransferJob=TransferJob, JobResult=JobResult,
                           SecondaryTierManager=SecondaryTierManager, JobId=int)
    factory = _module("vllm.v1.kv_offload.tiering.factory", SecondaryTierFactory=SecondaryTierFactory)
    return _package(base, tiering_base, factory)


def make_old_vllm() -> Dict[str, types.ModuleType]:
    """An older release: vllm_config constructor, lookup() -> bool | None, get_finished()."""

    class SecondaryTierManager(abc.ABC):
        def __init__(self, vllm_config, primary_kv_view: memoryview) -> None:
            self._vllm_config = vllm_config
            self._primary_kv_view = primary_kv_view

        @abc.abstractmethod
        def lookup(self, key, req_context): ...

        @abc.abstractmethod
        def submit_store(self, job_metadata): ...

        @abc.abstractmethod
        def submit_load(self, job_metadata): ...

        @abc.abstractmethod
        def get_finished(self): ...

        @staticmethod
        @abc.abstractmethod
        def get_tier_type() -> str: ...

    @dataclasses.dataclass
    class JobResult:
        job_id: int
        success: bool

    base = _module("vllm.v1.kv_offload.base", OffloadKey=bytes)
    tiering_base = _module("vllm.v1.kv_offload.tiering.base", JobResult=JobResult,
                           SecondaryTierManager=SecondaryTierManager)
    return _package(base, tiering_base, None)


def _package(base, tiering_base, factory) -> Dict[str, types.ModuleType]:
    mods = {"vllm": _module("vllm", __version__="0.0.test", __path__=[]),
            "vllm.v1": _module("vllm.v1", __path__=[]),
            "vllm.v1.kv_offload": _module("vllm.v1.kv_offload", __path__=[], base=base),
            "vllm.v1.kv_offload.base": base,
            "vllm.v1.kv_offload.tiering": _module("vllm.v1.kv_offload.tiering", __path__=[], base=tiering_base),
            "vllm.v1.kv_offload.tiering.base": tiering_base}
    if factory is not None:
        mods["vllm.v1.kv_offload.tiering.factory"] = factory
        mods["vllm.v1.kv_offload.tiering"].factory = factory
    return mods


class StubbedVLLM:
    """Installs look-alike vllm modules and imports the adapter fresh against them."""

    def __init__(self, mods: Dict[str, types.ModuleType]) -> None:
        self.mods = mods
        self.saved: Dict[str, Any] = {}

    def __enter__(self) -> types.ModuleType:
        for name in list(self.mods) + [ADAPTER]:
            self.saved[name] = sys.modules.pop(name, None)
        sys.modules.update(self.mods)
        return importlib.import_module(ADAPTER)

    def __exit__(self, *exc: object) -> None:
        for name, old in self.saved.items():
            sys.modules.pop(name, None)
            if old is not None:
                sys.modules[name] = old


@pytest.fixture(scope="module")
def vllm_api():
    """(the look-alike vllm modules, the adapter module imported against them)."""
    mods = make_modern_vllm()
    with StubbedVLLM(mods) as adapter:
        yield types.SimpleNamespace(base=mods["vllm.v1.kv_offload.base"],
                                    tiering=mods["vllm.v1.kv_offload.tiering.base"],
                                    factory=mods["vllm.v1.kv_offload.tiering.factory"].SecondaryTierFactory,
                                    adapter=adapter)


def spec(model: str = "org/model-7b", tp: int = 1, dtype: str = "bfloat16") -> Any:
    """What the tier reads of TieringOffloadingSpec: its OffloadingConfig."""
    ns = types.SimpleNamespace
    config = ns(model=ns(name=model, dtype=dtype),
                parallel=ns(rank=0, world_size=tp, tp_size=tp, pp_size=1, pcp_size=1, dcp_size=1),
                cache=ns(tokens_per_hash=16, blocks_per_chunk=1), extra_config={})
    return ns(config=config, extra_config={})


def primary(rows: int, row_bytes: int = ROW, seed: Optional[int] = None):
    """A primary tier: (numpy rows, the 2-D memoryview vLLM hands the tier)."""
    if seed is None:
        arr = np.zeros((rows, row_bytes), dtype=np.uint8)
    else:
        arr = np.random.default_rng(seed).integers(0, 256, (rows, row_bytes), dtype=np.uint8)
    return arr, memoryview(arr)


def offload_keys(prefix: bytes, n: int, group: int = 0) -> List[bytes]:
    """n chained-looking OffloadKeys (32-byte hash + 4-byte group index)."""
    return [(prefix * 32)[:28] + i.to_bytes(4, "big") + group.to_bytes(4, "big") for i in range(n)]


def poll(condition, timeout_s: float, what: str):
    """Polls condition() until it returns something other than None/False, or fails at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s")
        time.sleep(0.001)


class Scheduler:
    """The calls vLLM's TieringOffloadingManager makes on one secondary tier."""

    def __init__(self, api, tier) -> None:
        self.api = api
        self.tier = tier
        self.next_id = 0
        self.pending: Dict[int, Any] = {}

    def request(self, req_id: str):
        ctx = self.api.base.ReqContext(req_id=req_id)
        policy = self.tier.on_new_request(ctx)
        assert isinstance(policy, self.api.base.RequestOffloadingContext)
        return ctx

    def scan(self, keys, ctx) -> Optional[int]:
        """One step's prefix scan: hits before the first MISS, None if any lookup said RETRY."""
        LR = self.api.base.LookupResult
        hits, defer = 0, False
        for k in keys:
            result = self.tier.lookup(k, ctx)
            assert isinstance(result, LR), result
            if result is LR.HIT:
                hits += 1
            elif result is LR.RETRY:
                defer = True
            else:
                break
        self.tier.on_schedule_end(self.api.base.ScheduleEndContext((), ()))
        return None if defer else hits

    def matched(self, keys, ctx, timeout_s: float = 10.0) -> int:
        """Scans step after step until the tier stops deferring; the matched prefix."""
        box = []

        def step():
            n = self.scan(keys, ctx)
            if n is None:
                return None
            box.append(n)
            return True
        poll(step, timeout_s, "lookup verdict")
        return box[0]

    def submit(self, keys, chunk_ids, ctx, load: bool) -> int:
        job = self.api.tiering.TransferJob(job_id=self.next_id, keys=list(keys),
                                           chunk_ids=np.asarray(chunk_ids, dtype=np.int64),
                                           is_promotion=load, req_context=ctx)
        self.next_id += 1
        self.pending[job.job_id] = job
        (self.tier.submit_load if load else self.tier.submit_store)(job)
        return job.job_id

    def finish(self, job_ids, timeout_s: float = 10.0) -> Dict[int, Any]:
        """Polls get_finished_jobs() until every job in job_ids has reported."""
        want, got = set(job_ids), {}

        def step():
            for r in self.tier.get_finished_jobs():
                assert isinstance(r, self.api.tiering.JobResult), r
                assert r.job_id in self.pending, f"unknown job {r.job_id} reported"
                del self.pending[r.job_id]
                got[r.job_id] = r
            return want <= set(got)
        poll(step, timeout_s, f"result of jobs {sorted(want - set(got))}")
        return got

    def store(self, keys, rows, ctx) -> Any:
        return self.finish([self.submit(keys, rows, ctx, load=False)])[self.next_id - 1]

    def load(self, keys, rows, ctx) -> Any:
        return self.finish([self.submit(keys, rows, ctx, load=True)])[self.next_id - 1]


def tier_config(server, **extra: Any) -> Dict[str, Any]:
    cfg = {"type": "MemKVTierManager", "module_path": ADAPTER, "servers": [server.address],
           "auth_key": server.auth_key, "transport": "tcp", "timeout_ms": 5000}
    cfg.update(extra)
    return cfg


@pytest.fixture
def make_tier(vllm_api):
    """Builds tiers through the factory, as TieringOffloadingSpec does; shuts them down after the test."""
    made = []

    def make(config, view, offloading_spec=None):
        tier = vllm_api.factory.create_secondary_tier(config, view, offloading_spec or spec())
        made.append(tier)
        return tier
    yield make
    for t in made:
        t.shutdown()


# ------------------------------------------------------------------- tests

def test_factory_builds_the_tier_and_a_request_round_trips(server, vllm_api, make_tier):
    adapter = vllm_api.adapter
    src, view = primary(8, seed=1)
    tier = make_tier(tier_config(server, name="memkv0", io_threads=2), view)
    assert isinstance(tier, adapter.MemKVTierManager)
    assert isinstance(tier, vllm_api.tiering.SecondaryTierManager)
    assert tier.tier_type == "MemKVTierManager"
    assert tier.locality is vllm_api.base.Locality.REMOTE
    sched = Scheduler(vllm_api, tier)
    ctx = sched.request("req-a")
    keys = offload_keys(b"a", 8)

    # Unknown keys: RETRY while the lookup thread asks the server, then MISS.
    assert tier.lookup(keys[0], ctx) is vllm_api.base.LookupResult.RETRY
    assert sched.matched(keys, ctx) == 0

    # The cascade: chunks 0..7 of the primary go to MemKV.
    result = sched.store(keys, range(8), ctx)
    assert result.success and result.transfer_time is not None and result.transfer_time >= 0
    assert sched.matched(keys, ctx) == 8

    # A second engine process (fresh tier, same servers and model) finds them
    # through the server and promotes them into other rows of its own primary.
    dst, dst_view = primary(16)
    other = make_tier(tier_config(server), dst_view)
    sched2 = Scheduler(vllm_api, other)
    ctx2 = sched2.request("req-b")
    assert sched2.matched(keys, ctx2) == 8
    rows = [15 - i for i in range(8)]
    assert sched2.load(keys, rows, ctx2).success
    for i, r in enumerate(rows):
        assert np.array_equal(dst[r], src[i]), f"chunk {i} differs"
    assert not dst[:8].any(), "rows not named by the job were written"
    assert not other.has_pending_work() and not tier.has_pending_work()
    stats = other.stats()
    assert stats["loaded_chunks"] == 8 and stats["io"]["get_bytes"] == 8 * ROW


def test_stores_carry_each_chunks_block_hash(server, vllm_api, make_tier):
    """A store's puts carry the block hash of each OffloadKey (without its
    group index) and no parent: a job does not say its keys are one chain."""
    _, view = primary(4, seed=2)
    tier = make_tier(tier_config(server), view)
    client = tier._client
    seen = []
    real_submit = client.submit_put_ptr

    class Recording:  # the real client, with its submit_put_ptr options kept
        def __getattr__(self, name):
            return getattr(client, name)

        def submit_put_ptr(self, *args, **kwargs):
            seen.extend(kwargs["options"])
            return real_submit(*args, **kwargs)

    tier._client = Recording()
    sched = Scheduler(vllm_api, tier)
    ctx = sched.request("req-hash")
    keys = offload_keys(b"h", 4, group=1)
    assert sched.store(keys, range(4), ctx).success
    assert [o.block_hash for o in seen] == [k[:-4] for k in keys]
    assert all(o.parent_key is None and o.parent_hash is None and o.retention == "normal" for o in seen)
    assert sched.matched(keys, ctx) == 4


def test_register_entry_point_and_the_registered_name(server, vllm_api, make_tier):
    adapter = vllm_api.adapter
    adapter.register()
    adapter.register()  # vLLM may load plugins more than once per process
    assert adapter.TIER_NAME in vllm_api.factory._registry
    src, view = primary(4, seed=2)
    cfg = tier_config(server)
    cfg["type"] = "memkv"
    del cfg["module_path"]
    tier = make_tier(cfg, view)
    assert isinstance(tier, adapter.MemKVTierManager) and tier.tier_type == "memkv"
    sched = Scheduler(vllm_api, tier)
    assert sched.store(offload_keys(b"r", 4), range(4), sched.request("r")).success


def test_the_package_declares_the_vllm_general_plugins_entry_point(vllm_api):
    # What vLLM's load_general_plugins reads: the memkv distribution's
    # dist-info (build tree and python3-memkv alike).
    import importlib.metadata
    found = [ep for ep in importlib.metadata.entry_points(group="vllm.general_plugins") if ep.name == "memkv"]
    assert len(found) == 1, found
    assert found[0].value == "memkv.adapters.vllm:register"
    assert found[0].load() is vllm_api.adapter.register


def _run_vllm_general_plugins() -> List[str]:
    """What vLLM's load_general_plugins does at start-up, with VLLM_PLUGINS
    set to "memkv": find the vllm.general_plugins entry points through
    importlib.metadata, load the allowed ones and call them. Returns the
    names run."""
    import importlib.metadata
    ran = []
    for ep in importlib.metadata.entry_points(group="vllm.general_plugins"):
        if ep.name == "memkv":
            ep.load()()
            ran.append(ep.name)
    return ran


def _stores_and_matches(mods, factory, adapter, tier, tag):
    """The scheduler stores 4 chunks through `tier` and then finds all 4."""
    api = types.SimpleNamespace(base=mods["vllm.v1.kv_offload.base"],
                                tiering=mods["vllm.v1.kv_offload.tiering.base"], factory=factory, adapter=adapter)
    sched = Scheduler(api, tier)
    keys = offload_keys(tag, 4)
    ctx = sched.request(tag.decode())
    assert sched.store(keys, range(4), ctx).success
    assert sched.matched(keys, ctx) == 4


def test_entry_point_form_on_a_vllm_without_module_path_lookup(server):
    """vLLM trees before 2026-08-05: the tier factory knows only registered
    types, so {"type": "MemKVTierManager", "module_path": ...} is refused and
    {"type": "memkv"} works once the entry point (found by
    importlib.metadata, as vLLM finds it) has run."""
    mods = make_modern_vllm(module_path_lookup=False)
    with StubbedVLLM(mods) as adapter:
        factory = mods["vllm.v1.kv_offload.tiering.factory"].SecondaryTierFactory
        src, view = primary(4, seed=12)
        with pytest.raises(ValueError, match="Unknown secondary tier type: 'MemKVTierManager'"):
            factory.create_secondary_tier(tier_config(server), view, spec())
        assert "memkv" in _run_vllm_general_plugins()
        cfg = tier_config(server, type="memkv")
        del cfg["module_path"]
        tier = factory.create_secondary_tier(cfg, view, spec())
        try:
            assert isinstance(tier, adapter.MemKVTierManager) and tier.tier_type == "memkv"
            _stores_and_matches(mods, factory, adapter, tier, b"ep")
        finally:
            tier.shutdown()
        # This factory passes module_path on to the tier: accepted, as vLLM's own key.
        with_path = dict(cfg, module_path=ADAPTER)
        factory.create_secondary_tier(with_path, view, spec()).shutdown()


def test_module_path_form_on_a_vllm_with_module_path_lookup(server):
    """vLLM trees from 2026-08-05 on: {"type": "MemKVTierManager",
    "module_path": "memkv.adapters.vllm"} works with no plugin loaded."""
    mods = make_modern_vllm(module_path_lookup=True)
    with StubbedVLLM(mods) as adapter:
        factory = mods["vllm.v1.kv_offload.tiering.factory"].SecondaryTierFactory
        assert "memkv" not in factory._registry
        src, view = primary(4, seed=13)
        tier = factory.create_secondary_tier(tier_config(server), view, spec())
        try:
            assert isinstance(tier, adapter.MemKVTierManager) and tier.tier_type == "MemKVTierManager"
            _stores_and_matches(mods, factory, adapter, tier, b"mp")
        finally:
            tier.shutdown()


def test_engine_keys_left_in_the_config_are_accepted(server, vllm_api):
    # Some releases' factories pass 'type' and 'module_path' on; a tier name too.
    _, view = primary(2)
    tier = vllm_api.adapter.MemKVTierManager(
        offloading_spec=spec(), primary_kv_view=view, tier_type="MemKVTierManager", type="MemKVTierManager",
        module_path=ADAPTER, name="remote_memkv", servers=server.address, auth_key=server.auth_key)
    tier.shutdown()


def test_several_requests_and_prefix_semantics(server, vllm_api, make_tier):
    src, view = primary(12, seed=3)
    tier = make_tier(tier_config(server), view)
    sched = Scheduler(vllm_api, tier)
    shared = offload_keys(b"s", 6)
    a_keys = shared[:4] + offload_keys(b"A", 2)
    b_keys = shared[:4] + offload_keys(b"B", 3)
    ra, rb = sched.request("a"), sched.request("b")
    # Two requests' cascades in flight at once.
    ja = sched.submit(a_keys, range(6), ra, load=False)
    jb = sched.submit(b_keys[4:], range(6, 9), rb, load=False)  # its prefix is already stored by "a"
    done = sched.finish([ja, jb])
    assert done[ja].success and done[jb].success

    # A fresh process sees each request's full prefix, and only its own tail.
    _, view2 = primary(12)
    fresh = Scheduler(vllm_api, make_tier(tier_config(server), view2))
    assert fresh.matched(a_keys, fresh.request("a2")) == 6
    assert fresh.matched(b_keys, fresh.request("b2")) == 7
    assert fresh.matched(shared[:4] + offload_keys(b"C", 2), fresh.request("c")) == 4

    # A missing middle chunk stops the prefix where the scheduler stops.
    gap = offload_keys(b"g", 5)
    assert sched.store([gap[0], gap[1], gap[3], gap[4]], [0, 1, 3, 4], sched.request("g")).success
    _, view3 = primary(12)
    fresh3 = Scheduler(vllm_api, make_tier(tier_config(server), view3))
    assert fresh3.matched(gap, fresh3.request("g2")) == 2

    # Lookups of the same key by several requests share one probe and one verdict.
    probes = fresh3.tier.stats()["probes"]
    for r in ("x", "y", "z"):
        assert fresh3.matched(gap[:2], fresh3.request(r)) == 2
    assert fresh3.tier.stats()["probes"] == probes


def test_zero_copy_from_and_into_the_primary_rows(server, vllm_api, make_tier):
    rows, row_bytes = 24, 4 << 20  # 96 MiB each way
    src, view = primary(rows, row_bytes, seed=4)
    dst, dst_view = primary(rows, row_bytes)
    dst[:] = 1  # touched before the baseline, so its pages count already
    tier = make_tier(tier_config(server, batch_blocks=8), view)
    reader = make_tier(tier_config(server), dst_view)
    assert tier.row_bytes == row_bytes
    assert [tier.row_address(i) for i in (0, 5)] == [src[0].ctypes.data, src[5].ctypes.data]
    assert reader.row_address(rows - 1) == dst[rows - 1].ctypes.data
    sched, sched2 = Scheduler(vllm_api, tier), Scheduler(vllm_api, reader)
    keys = offload_keys(b"z", rows)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    assert sched.store(keys, range(rows), sched.request("z")).success
    assert sched2.load(keys[::-1], range(rows), sched2.request("z2")).success
    grew_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_rss) / 1024
    assert grew_mib < 48, f"peak RSS grew {grew_mib:.0f} MiB moving 2 x 96 MiB: something copied"
    for i in range(rows):
        assert np.array_equal(dst[i], src[rows - 1 - i])
    # The tier holds no export of the view: vLLM's primary tier can release it.
    reader.shutdown()
    dst_view.release()


def test_two_models_and_two_layouts_do_not_collide(server, vllm_api, make_tier):
    keys = offload_keys(b"n", 3)
    a_src, a_view = primary(3, seed=5)
    b_src, b_view = primary(3, seed=6)
    a = make_tier(tier_config(server), a_view, spec("org/model-a"))
    b = make_tier(tier_config(server), b_view, spec("org/model-b"))
    assert a.memkv_key(keys[0]) != b.memkv_key(keys[0])
    assert a.memkv_key(keys[0]) == (b"vllm/org-model-a/" + keys[0].hex().encode() +
                                    b"/tp1-pp1-pcp1-dcp1-bfloat16-t16x1-r%d" % ROW)
    long_name = vllm_api.adapter.default_namespace(spec("/models/" + "x" * 300 + "/ é"))
    assert long_name.startswith("vllm/-models-xxx") and len(long_name) <= 5 + 120 and long_name.isascii()
    sa, sb = Scheduler(vllm_api, a), Scheduler(vllm_api, b)
    assert sa.store(keys, range(3), sa.request("a")).success
    assert sb.matched(keys, sb.request("b")) == 0  # model b never sees model a's chunks
    assert sb.store(keys, range(3), sb.request("b")).success
    for model, src in (("org/model-a", a_src), ("org/model-b", b_src)):
        out, out_view = primary(3)
        s = Scheduler(vllm_api, make_tier(tier_config(server), out_view, spec(model)))
        assert s.load(keys, range(3), s.request("l")).success
        assert np.array_equal(out, src), model
    # Same model, another tensor-parallel layout: other keys.
    _, tp2_view = primary(3)
    tp2 = make_tier(tier_config(server), tp2_view, spec("org/model-a", tp=2))
    assert tp2.memkv_key(keys[0]) != a.memkv_key(keys[0])
    s_tp2 = Scheduler(vllm_api, tp2)
    assert s_tp2.matched(keys, s_tp2.request("t")) == 0
    # An explicit namespace replaces the model part; the layout part stays.
    _, ns_view = primary(3)
    named = make_tier(tier_config(server, namespace="team-x"), ns_view)
    assert named.memkv_key(keys[0]).startswith(b"team-x/") and named.memkv_key(keys[0]).endswith(
        a.memkv_key(keys[0]).rsplit(b"/", 1)[1])


# vLLM's prefix-cache hashing, as vllm/v1/core/kv_cache_utils.py does it:
# hash_block_tokens(hash_fn, parent, tokens, extra_keys) over (parent, tokens,
# extra_keys), NONE_HASH as the first block's parent, and
# generate_block_hash_extra_keys putting the request's cache_salt (and its
# LoRA name) in the extra keys of the block that starts at token 0 only;
# make_offload_key appends the KV cache group index as 4 big-endian bytes.
NONE_HASH = hashlib.sha256(b"none-hash-of-this-test").digest()


def hash_block_tokens(parent: Optional[bytes], tokens, extra_keys) -> bytes:
    return hashlib.sha256(pickle.dumps((parent or NONE_HASH, tuple(tokens), extra_keys))).digest()


def generate_block_hash_extra_keys(start_token_idx: int, cache_salt: Optional[str], lora_name: Optional[str]):
    keys = ([lora_name] if lora_name else []) + ([cache_salt] if start_token_idx == 0 and cache_salt else [])
    return tuple(keys) or None


def request_offload_keys(tokens, block_size: int = 16, cache_salt: Optional[str] = None,
                         lora_name: Optional[str] = None, group_idx: int = 0) -> List[bytes]:
    """The OffloadKeys of a request's full blocks (one block per chunk)."""
    out, parent = [], None
    for start in range(0, len(tokens) - len(tokens) % block_size, block_size):
        parent = hash_block_tokens(parent, tokens[start:start + block_size],
                                   generate_block_hash_extra_keys(start, cache_salt, lora_name))
        out.append(parent + group_idx.to_bytes(4, "big", signed=False))
    return out


def test_cache_salt_keeps_two_requests_apart(server, vllm_api, make_tier):
    """Two requests with the same tokens and two cache salts: vLLM's block
    hashes differ from the first block on, the tier keys the whole
    OffloadKey, so what one stored is a MISS (and fails to load) for the
    other, for an unsalted request and for another LoRA; the same salt, in
    another engine process, finds and loads it all."""
    tokens = list(range(5000, 5000 + 6 * 16))
    a = request_offload_keys(tokens, cache_salt="tenant-a")
    b = request_offload_keys(tokens, cache_salt="tenant-b")
    plain = request_offload_keys(tokens)
    lora = request_offload_keys(tokens, cache_salt="tenant-a", lora_name="adapter-1")
    assert all(len({x, y, z, w}) == 4 for x, y, z, w in zip(a, b, plain, lora)), "every block's hash differs"
    src, view = primary(6, seed=12)
    tier = make_tier(tier_config(server), view)
    assert all(k.hex().encode() in tier.memkv_key(k) for k in a)
    writer = Scheduler(vllm_api, tier)
    assert writer.store(a, range(6), writer.request("a")).success

    dst, dst_view = primary(6)
    reader = Scheduler(vllm_api, make_tier(tier_config(server), dst_view))
    for name, other in (("b", b), ("plain", plain), ("lora", lora)):
        ctx = reader.request(name)
        assert reader.matched(other, ctx) == 0, name
        assert not reader.load(other, range(6), ctx).success, name
    assert not dst.any(), "a miss wrote into the primary rows"
    again = request_offload_keys(tokens, cache_salt="tenant-a")
    ctx = reader.request("a-again")
    assert reader.matched(again, ctx) == 6
    assert reader.load(again, range(6), ctx).success
    assert np.array_equal(dst, src)


def test_wrong_size_value_fails_the_load(server, vllm_api, make_tier):
    src, view = primary(4, seed=7)
    tier = make_tier(tier_config(server), view)
    sched = Scheduler(vllm_api, tier)
    keys = offload_keys(b"w", 4)
    ctx = sched.request("w")
    assert sched.store(keys, range(4), ctx).success
    with server.client() as plain:  # another writer leaves a value of another size under key 2
        plain.put(tier.memkv_key(keys[2]), b"short value")
        plain.put(tier.memkv_key(keys[3]), np.zeros(ROW * 2, dtype=np.uint8))
    dst, dst_view = primary(4)
    reader = make_tier(tier_config(server), dst_view)
    s2 = Scheduler(vllm_api, reader)
    ctx2 = s2.request("w2")
    result = s2.load(keys, range(4), ctx2)
    assert not result.success
    assert list(result.successful_keys) == keys[:2]
    assert np.array_equal(dst[:2], src[:2])
    # The failed chunks now answer MISS, so vLLM does not promote them again.
    LR = vllm_api.base.LookupResult
    assert [reader.lookup(k, ctx2) for k in keys] == [LR.HIT, LR.HIT, LR.MISS, LR.MISS]


def test_bad_jobs_fail_without_raising(server, vllm_api, make_tier):
    _, view = primary(4)
    tier = make_tier(tier_config(server), view)
    sched = Scheduler(vllm_api, tier)
    ctx = sched.request("bad")
    keys = offload_keys(b"b", 2)
    bad = [sched.submit(keys, [0, 4], ctx, load=False),        # row 4 of a 4-row view
           sched.submit(keys, [0], ctx, load=True),            # 2 keys, 1 row
           sched.submit(keys, [-1, 0], ctx, load=True)]
    done = sched.finish(bad)
    assert not any(done[j].success for j in bad)
    assert sched.finish([sched.submit([], [], ctx, load=False)]).popitem()[1].success  # an empty job is done


def test_settings_errors_name_the_setting(server, vllm_api, monkeypatch):
    adapter = vllm_api.adapter
    _, view = primary(2)

    def build(**settings):
        return adapter.MemKVTierManager(offloading_spec=spec(), primary_kv_view=view, tier_type="memkv",
                                        **settings)

    ok = {"servers": [server.address], "auth_key": server.auth_key}
    with pytest.raises(adapter.ConfigError, match="'timeout_ms' in .*: 'fast' is not a non-negative integer; allowed: 1..3600000"):
        build(**ok, timeout_ms="fast")
    with pytest.raises(adapter.ConfigError, match="unknown setting.*'server'.*allowed: servers"):
        build(server=server.address, auth_key=server.auth_key)
    # Built by the factory, the message names the entry of secondary_tiers.
    entries = [{"type": "fs", "root_dir": "/kv"}, {"type": "memkv", **ok, "timeout_ms": 0}]
    tiering_spec = spec()
    tiering_spec.extra_config = {"secondary_tiers": entries}
    adapter.register()
    with pytest.raises(adapter.ConfigError, match=r"'timeout_ms' in secondary_tiers\[1\] of kv_connector_extra_config"):
        vllm_api.factory.create_secondary_tier(entries[1], view, tiering_spec)
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
    # The environment is the fallback for what the config dict lacks.
    monkeypatch.delenv("MEMKV_TIMEOUT_MS")
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    tier = build(io_threads="3")
    assert tier.config.servers == (server.address,) and tier.config.extra["io_threads"] == 3
    tier.shutdown()
    with pytest.raises(ValueError, match="primary_kv_view must be 2-D"):
        adapter.MemKVTierManager(offloading_spec=spec(), primary_kv_view=memoryview(bytearray(64)), **ok)


def test_incompatible_vllm_is_refused_with_a_clear_message(server):
    with StubbedVLLM(make_old_vllm()) as adapter:
        _, view = primary(2)
        with pytest.raises(adapter.IncompatibleVLLMError) as info:
            adapter.MemKVTierManager(offloading_spec=spec(), primary_kv_view=view, tier_type="memkv",
                                     servers=[server.address], auth_key=server.auth_key)
        message = str(info.value)
        assert "0.0.test" in message and "LookupResult" in message
        assert "lacks offloading_spec, tier_type" in message and "get_finished_jobs" in message
        adapter.register()  # no tier factory in that release: nothing to do, no error


def test_module_imports_and_runs_without_vllm(server):
    code = ("import sys, numpy as np\n"
            "sys.modules['vllm'] = None  # as if vLLM were not installed\n"
            "import memkv.adapters.vllm as a\n"
            "assert a.LookupResult is a._LocalLookupResult and a._VLLM_PROBLEM is None\n"
            "a.register()\n"
            "view = memoryview(np.zeros((2, 64), dtype=np.uint8))\n"
            f"t = a.MemKVTierManager(primary_kv_view=view, servers={server.address!r}, auth_key={server.auth_key!r})\n"
            "assert t.lookup(b'k' * 36) is a.LookupResult.RETRY\n"
            "t.shutdown()\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def fixed_port_server(auth_key: Optional[str] = None, port: Optional[int] = None) -> "memkv.testing.LocalServer":
    """A server on a fixed port below the kernel's ephemeral range, so that
    nothing else takes the port or its admin port (port + 1) while the server
    is down and it can be restarted at the same address."""
    last: Optional[Exception] = None
    for _ in range(20):
        p = port or memkv.testing.restartable_port()
        try:
            return memkv.testing.LocalServer(binary(), memory="64 MiB", workers=1, auth_key=auth_key,
                                             extra_args=["--address", f"127.0.0.1:{p}"]).start()
        except RuntimeError as e:  # that port or port + 1 is taken: another one (or the same one, later)
            last = e
    raise AssertionError(f"no server on a fixed port: {last}")


def test_server_down_then_restarted(vllm_api, make_tier):
    srv = fixed_port_server()
    try:
        src, view = primary(6, seed=8)
        tier = make_tier(tier_config(srv, timeout_ms=400, connect_timeout_ms=400), view)
        sched = Scheduler(vllm_api, tier)
        ctx = sched.request("f")
        keys = offload_keys(b"f", 9)
        assert sched.store(keys[:3], range(3), ctx).success
        address = srv.address
        in_flight = sched.submit(keys[6:], range(3), ctx, load=False)
        srv._process.kill()  # SIGKILL mid-run, maybe with that store on the wire
        srv._process.wait()

        t0 = time.monotonic()
        assert isinstance(sched.finish([in_flight], timeout_s=5)[in_flight].success, bool)
        assert sched.matched(keys[3:], ctx, timeout_s=5) == 0  # unknown keys: MISS, not RETRY forever
        store = sched.submit(keys[3:], range(3, 6), ctx, load=False)
        load = sched.submit(keys[:3], range(3), ctx, load=True)  # known present, but the server is gone
        done = sched.finish([store, load], timeout_s=5)
        assert not done[store].success and not done[load].success
        assert sched.matched(keys[:3], ctx, timeout_s=5) == 0  # the failed load turned them into misses
        tier.drain_jobs()
        assert time.monotonic() - t0 < 5

        # Restarted at the same address: empty, and the tier works again.
        srv = fixed_port_server(srv.auth_key, int(address.rsplit(":", 1)[1]))
        poll(lambda: sched.store(keys[:6], range(6), ctx).success, 10, "a store to the restarted server")
        dst, dst_view = primary(6)
        s2 = Scheduler(vllm_api, make_tier(tier_config(srv, timeout_ms=400), dst_view))
        ctx2 = s2.request("f2")
        assert s2.matched(keys[:6], ctx2) == 6
        assert s2.load(keys[:6], range(6), ctx2).success
        assert np.array_equal(dst, src)
    finally:
        srv.stop()


def freeze(pid: int) -> None:
    """SIGSTOP, then waits until every thread of the process is stopped (the
    signal takes effect asynchronously: a thread on a CPU may still answer)."""
    os.kill(pid, signal.SIGSTOP)

    def stopped() -> bool:
        try:
            states = []
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
        except OSError:
            return False
        return all(st in ("T", "t") for st in states)
    poll(stopped, 5, f"process {pid} stopped")


def test_stalled_server_is_bounded_by_timeout_ms(vllm_api, make_tier):
    srv = memkv.testing.LocalServer(binary(), memory="64 MiB", workers=1).start()
    pid = srv._process.pid
    try:
        src, view = primary(4, seed=9)
        tier = make_tier(tier_config(srv, timeout_ms=300, connect_timeout_ms=300), view)
        sched = Scheduler(vllm_api, tier)
        ctx = sched.request("slow")
        keys = offload_keys(b"p", 4)
        assert sched.store(keys[:2], range(2), ctx).success
        freeze(pid)  # alive, answering nothing: every call waits for its deadline
        t0 = time.monotonic()
        jobs = [sched.submit(keys[2:], [2, 3], ctx, load=False), sched.submit(keys[:2], [0, 1], ctx, load=True)]
        scan_start = time.monotonic()
        assert sched.scan(offload_keys(b"q", 64), ctx) is None  # 64 new keys: RETRY, without waiting
        calls = time.monotonic() - t0
        scan = time.monotonic() - scan_start
        assert sched.matched(keys[2:], ctx, timeout_s=5) == 0
        tier.drain_jobs()
        done = sched.finish(jobs, timeout_s=1)
        elapsed = time.monotonic() - t0
        assert calls < 0.05, f"submitting and a scan took {calls:.3f} s ({scan:.3f} s the scan): " \
                             "the scheduler thread waited on I/O"
        assert not any(r.success for r in done.values())
        assert elapsed < 3, f"faults took {elapsed:.1f} s with timeout_ms=300"
    finally:
        os.kill(pid, signal.SIGCONT)
        srv.stop()


def test_drain_and_shutdown(server, vllm_api, make_tier):
    src, view = primary(32, seed=10)
    tier = make_tier(tier_config(server, batch_blocks=4, io_threads=2), view)
    sched = Scheduler(vllm_api, tier)
    ctx = sched.request("d")
    jobs = [sched.submit(offload_keys(bytes([65 + j]), 8), range(8 * (j % 4), 8 * (j % 4) + 8), ctx, load=False)
            for j in range(6)]
    assert tier.has_pending_work()
    tier.drain_jobs()
    assert not tier.has_pending_work()
    done = {r.job_id: r for r in tier.get_finished_jobs()}
    assert sorted(done) == sorted(jobs) and all(r.success for r in done.values())

    tier.shutdown()
    tier.shutdown()
    LR = vllm_api.base.LookupResult
    assert tier.lookup(offload_keys(b"A", 1)[0], ctx) is LR.MISS
    late = sched.submit(offload_keys(b"L", 1), [0], ctx, load=True)
    assert not sched.finish([late])[late].success
    tier.drain_jobs()
    assert tier.get_stats() is None and tier.take_events() == ()
    view.release()


# ------------------------------------------------------------------- every client option

def _tier_builder(vllm_api):
    _, view = primary(2)
    return lambda settings: vllm_api.adapter.MemKVTierManager(offloading_spec=spec(), primary_kv_view=view,
                                                              tier_type="memkv", **settings)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(server, vllm_api, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in the tier's config
    or by its MEMKV_* variable, is the client's."""
    make = _tier_builder(vllm_api)

    def build(settings):
        tier = make(settings)
        return tier._client, tier.shutdown
    base = {"servers": [server.address], "auth_key": server.auth_key}
    check_option_reaches_client(build, base, name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(server, vllm_api, monkeypatch, name, source):
    base = {"servers": [server.address], "auth_key": server.auth_key}
    message = check_bad_option_is_named(_tier_builder(vllm_api), vllm_api.adapter.ConfigError, base, name, source,
                                        monkeypatch)
    assert message.startswith("memkv vllm adapter: ")


# ------------------------------------------------------------ back-pressure

def test_a_store_a_busy_server_sheds_is_skipped_not_failed(server, vllm_api, make_tier, caplog):
    """A store whose puts an overloaded server sheds (Busy; injected by a
    SheddingClient in place of the tier's client, the seam the hash test
    uses): the job reports success=False (its chunks are not in this tier),
    counts as shed rather than failed, logs at INFO, and lookups and loads of
    what was stored go on."""
    src, view = primary(8, seed=11)
    tier = make_tier(tier_config(server), view)
    sched = Scheduler(vllm_api, tier)
    ctx = sched.request("busy")
    stored, shed = offload_keys(b"s", 4), offload_keys(b"x", 4)
    assert sched.store(stored, range(4), ctx).success
    shed_names = {tier.memkv_key(k) for k in shed}
    tier._client = SheddingClient(tier._client, lambda key: key in shed_names)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        result = sched.store(shed, range(4, 8), ctx)
        half = sched.store(shed[:2] + offload_keys(b"y", 2), range(4, 8), ctx)
    assert not result.success and not half.success
    stats = tier.stats()
    assert stats["store_jobs_shed"] == 2 and stats["store_jobs_failed"] == 0
    assert stats["io"]["stores_shed"] == 6 and stats["io"]["errors"] == 0
    assert tier._client.shed_keys == 6
    busy_lines = [r for r in caplog.records if "busy" in r.getMessage()]
    assert busy_lines and all(r.levelno == logging.INFO for r in busy_lines)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    LR = vllm_api.base.LookupResult
    # The shed chunks are not there; the stored ones (and the two half-job
    # chunks the server took) are found and load.
    assert sched.matched(shed, ctx) == 0
    assert sched.matched(offload_keys(b"y", 2), ctx) == 2
    assert sched.matched(stored, ctx) == 4
    dst, dst_view = primary(4)
    reader = make_tier(tier_config(server), dst_view)
    s2 = Scheduler(vllm_api, reader)
    ctx2 = s2.request("busy-load")
    assert s2.matched(stored, ctx2) == 4
    assert s2.load(stored, range(4), ctx2).success
    assert np.array_equal(dst, src[:4])
    assert reader.lookup(shed[0], ctx2) in (LR.MISS, LR.RETRY)


def test_a_store_answered_draining_fails_like_unavailable(server, vllm_api, make_tier, caplog):
    _, view = primary(2, seed=12)
    tier = make_tier(tier_config(server), view)
    sched = Scheduler(vllm_api, tier)
    ctx = sched.request("drain")
    tier._client = SheddingClient(tier._client, lambda key: True, code=memkv.StatusCode.DRAINING)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert not sched.store(offload_keys(b"d", 2), range(2), ctx).success
    stats = tier.stats()
    assert stats["store_jobs_failed"] == 1 and stats["store_jobs_shed"] == 0
    assert stats["io"]["stores_shed"] == 0 and stats["io"]["errors"] == 1
    assert any(r.levelno == logging.WARNING and "Draining" in r.getMessage() for r in caplog.records)

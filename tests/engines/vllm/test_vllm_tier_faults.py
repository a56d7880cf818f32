"""MemKVTierManager inside vLLM's released package when things go wrong: a
server killed and restarted, a stalled server, drain and shutdown with
transfers in flight, a busy server shedding stores and a draining one
refusing them. The Engine (vllm_partner.py) drives vLLM's own
TieringOffloadingManager as in test_vllm_tier.py; every transfer goes to a
memkv server process. To have a promotion queued, but not yet submitted,
when a fault is injected, two tests first let the tier learn that the chunks
are present through its own lookup() and on_schedule_end(), called as the
manager calls them (queue_promotions)."""

import itertools
import logging
import os
import signal
import time
from typing import List

import numpy as np

import memkv
import memkv.testing
from shedding_client import SheddingClient

from vllm.v1.kv_offload.base import LookupResult
from vllm.v1.kv_offload.tiering.base import TransferJob

from vllm_partner import (ROW, chunk_bytes, fixed_port_server, freeze, offload_keys,
                          poll, queue_promotions, tier_entry)


def test_server_down_then_restarted(engines):
    """The server is killed mid-run: the cascade in flight reports, unknown
    chunks answer MISS (not RETRY forever), new cascades and a promotion of
    chunks the tier had found fail within timeout_ms, and the failed
    promotion's chunks answer MISS; restarted at the same address (empty),
    cascades succeed again and another engine promotes them."""
    srv = fixed_port_server()
    try:
        entry = dict(timeout_ms=400, connect_timeout_ms=400)
        writer = engines(tier_entry(srv, **entry), rows=32)
        reader = engines(tier_entry(srv, **entry), rows=8)
        ctx = writer.request("f")
        keys = offload_keys(b"restart", 9)
        assert writer.store(keys[:3], ctx).success
        ctx2 = reader.request("f2")
        queue_promotions(reader, keys[:3], ctx2)
        address = srv.address
        in_flight = writer.put(keys[6:], ctx)
        srv._process.kill()  # SIGKILL mid-run, maybe with that cascade on the wire
        srv._process.wait()

        t0 = time.monotonic()
        assert isinstance(writer.wait(in_flight, timeout_s=5)[in_flight[0]].success, bool)
        assert writer.matched(keys[3:6], ctx, timeout_s=5) == 0  # unknown chunks: MISS, not RETRY forever
        store = writer.put(keys[3:6], ctx)
        reader.step()  # submits the promotion queued before the kill
        [load] = reader.promotions()
        assert not writer.wait(store, timeout_s=5)[store[0]].success
        assert not reader.wait([load.job_id], timeout_s=5)[load.job_id].success
        assert reader.matched(keys[:3], ctx2, timeout_s=5) == 0  # the failed promotion turned them into misses
        writer.idle(timeout_s=5)
        assert time.monotonic() - t0 < 5

        # Restarted at the same address: empty, and the tier works again.
        srv = fixed_port_server(srv.auth_key, int(address.rsplit(":", 1)[1]))
        attempts = itertools.count()
        stored: List[bytes] = []

        def a_cascade_succeeds() -> bool:
            fresh = offload_keys(b"restart-again-%d" % next(attempts), 3)
            if writer.store(fresh, ctx).success:
                stored[:] = fresh
                return True
            return False
        poll(a_cascade_succeeds, 10, "a cascade to the restarted server")
        again = engines(tier_entry(srv, **entry), rows=4)
        ctx3 = again.request("f3")
        assert again.matched(stored, ctx3) == 3
        got = again.read(stored, ctx3)
        assert all(np.array_equal(got[i], chunk_bytes(k, ROW)) for i, k in enumerate(stored))
    finally:
        srv.stop()


def test_stalled_server_is_bounded_by_timeout_ms(engines):
    """A server that stops answering (SIGSTOP): vLLM's calls on the
    scheduler thread (a cascade, a promotion, a scan of 64 new chunks) return
    at once, and the jobs and lookups fail within timeout_ms."""
    srv = memkv.testing.LocalServer(memory="64 MiB", workers=1).start()
    pid = srv._process.pid
    try:
        entry = dict(timeout_ms=300, connect_timeout_ms=300)
        writer = engines(tier_entry(srv, **entry), rows=8)
        reader = engines(tier_entry(srv, **entry), rows=8)
        ctx = writer.request("slow")
        keys = offload_keys(b"stall", 4)
        assert writer.store(keys[:2], ctx).success
        ctx2 = reader.request("slow2")
        queue_promotions(reader, keys[:2], ctx2)
        freeze(pid)  # alive, answering nothing: every call waits for its deadline
        t0 = time.monotonic()
        store = writer.put(keys[2:], ctx)
        reader.step()  # submits the promotion
        [load] = reader.promotions()
        scan_start = time.monotonic()
        assert writer.scan(offload_keys(b"stall-new", 64), ctx) is None  # 64 new chunks: RETRY, without waiting
        calls = time.monotonic() - t0
        scan = time.monotonic() - scan_start
        assert reader.matched(keys[2:], ctx2, timeout_s=5) == 0
        done = {**writer.wait(store, timeout_s=3), **reader.wait([load.job_id], timeout_s=3)}
        elapsed = time.monotonic() - t0
        assert calls < 0.05, f"a cascade, a promotion and a scan took {calls:.3f} s ({scan:.3f} s the scan): " \
                             "the scheduler thread waited on I/O"
        assert not any(r.success for r in done.values())
        assert elapsed < 3, f"faults took {elapsed:.1f} s with timeout_ms=300"
    finally:
        os.kill(pid, signal.SIGCONT)
        srv.stop()


def test_drain_and_shutdown(server, engines):
    """vLLM's reset_cache drains the tier (drain_jobs) and collects every
    cascade's result; vLLM's shutdown shuts the tier down (twice is fine) and
    releases its primary view. Calls vLLM no longer makes after that (made
    here with vLLM's TransferJob) answer MISS and fail without raising."""
    engine = engines(tier_entry(server, batch_blocks=4, io_threads=2), rows=48)
    ctx = engine.request("d")
    jobs = [j for n in range(6) for j in engine.put(offload_keys(b"drain-%d" % n, 8), ctx)]
    assert len(jobs) == 6
    assert engine.manager.has_pending_work() and engine.tier.has_pending_work()
    engine.manager.reset_cache()  # drain_jobs, then every result collected (vLLM asserts none is left)
    assert not engine.manager.has_pending_work() and not engine.tier.has_pending_work()
    assert sorted(engine.results) == sorted(jobs) and all(r.success for r in engine.results.values())

    tier = engine.tier
    engine.shutdown()
    tier.shutdown()
    assert tier.lookup(offload_keys(b"drain-0", 1)[0], ctx) is LookupResult.MISS
    tier.submit_load(TransferJob(job_id=99, keys=offload_keys(b"drain-late", 1), chunk_ids=np.array([0], np.int32),
                                 is_promotion=True, req_context=ctx))
    late = poll(lambda: list(tier.get_finished_jobs()), 5, "the late job's result")
    assert [(r.job_id, r.success) for r in late] == [(99, False)]
    tier.drain_jobs()
    assert tier.get_stats() is None and tier.take_events() == ()


def test_a_store_a_busy_server_sheds_is_skipped_not_failed(server, engines, caplog):
    """A cascade whose puts an overloaded server sheds (Busy; injected by a
    SheddingClient in place of the tier's client) reports success=False (its
    chunks are not in this tier), counts as shed rather than failed, logs at
    INFO, and lookups and promotions of what was stored go on."""
    writer = engines(tier_entry(server), rows=16)
    ctx = writer.request("busy")
    stored, shed, shed2 = offload_keys(b"busy-s", 4), offload_keys(b"busy-x", 4), offload_keys(b"busy-x2", 2)
    taken = offload_keys(b"busy-y", 2)
    assert writer.store(stored, ctx).success
    shed_names = {writer.tier.memkv_key(k) for k in shed + shed2}
    writer.tier._client = SheddingClient(writer.tier._client, lambda key: key in shed_names)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        result = writer.store(shed, ctx)
        half = writer.store(shed2 + taken, ctx)
    assert not result.success and not half.success
    stats = writer.tier.stats()
    assert stats["store_jobs_shed"] == 2 and stats["store_jobs_failed"] == 0
    assert stats["io"]["stores_shed"] == 6 and stats["io"]["errors"] == 0
    assert writer.tier._client.shed_keys == 6
    ours = [r for r in caplog.records if r.name.startswith("memkv")]
    busy_lines = [r for r in ours if "busy" in r.getMessage()]
    assert busy_lines and all(r.levelno == logging.INFO for r in busy_lines)
    assert not [r for r in ours if r.levelno >= logging.WARNING]
    # The shed chunks are not there; the stored ones (and the two chunks of
    # the half-shed job the server took) are found and load.
    reader = engines(tier_entry(server), rows=8)
    ctx2 = reader.request("busy-load")
    assert reader.matched(shed, ctx2) == 0
    assert reader.matched(shed2, ctx2) == 0
    assert reader.matched(taken, ctx2) == 2
    assert reader.matched(stored, ctx2) == 4
    got = reader.read(stored, ctx2)
    assert all(np.array_equal(got[i], chunk_bytes(k, ROW)) for i, k in enumerate(stored))


def test_a_store_answered_draining_fails_like_unavailable(server, engines, caplog):
    """A cascade answered Draining fails as with a server down: counted
    failed (not shed), logged as a WARNING."""
    writer = engines(tier_entry(server), rows=2)
    ctx = writer.request("drain")
    writer.tier._client = SheddingClient(writer.tier._client, lambda key: True, code=memkv.StatusCode.DRAINING)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert not writer.store(offload_keys(b"draining", 2), ctx).success
    stats = writer.tier.stats()
    assert stats["store_jobs_failed"] == 1 and stats["store_jobs_shed"] == 0
    assert stats["io"]["stores_shed"] == 0 and stats["io"]["errors"] == 1
    assert any(r.levelno == logging.WARNING and "Draining" in r.getMessage() for r in caplog.records)

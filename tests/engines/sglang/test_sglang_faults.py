"""memkv.adapters.sglang inside SGLang when things go wrong: a server killed
and restarted, a stopped one (bounded by timeout_ms), misuse of the backend
(misses, not exceptions), a busy server shedding stores and a draining one
refusing them. Through SGLang's own cache controller and pools
(sglang_partner.py), against real MemKV servers on loopback."""

import logging
import signal
import time

import pytest

import memkv
import memkv.testing

from sglang.srt.mem_cache.hicache_storage import HiCacheStorageExtraInfo

from shedding_client import SheddingClient

from sglang_partner import (attach, backup, detach, fill, host_indices, host_pool, load, page, query,
                            request, restartable_server, same, settings, start_server, wait_state)


def test_server_killed_then_restarted():
    """A dead server: misses, failed stores, prefix 0, None; no exception and
    no wait, through the backend and the controller's loops. The same
    address restarted (empty): stores and loads work again, the old pages
    are gone."""
    first = restartable_server()
    pool = host_pool()
    fill(pool, range(6), seed=12)
    writer = attach(pool, settings(first, timeout_ms=500))
    storage = writer.storage_backend
    req = request(6)
    hashes = req.hashes
    assert backup(writer, hashes, host_indices(range(6))) == 6
    address, key = first.address, first.auth_key
    first._process.kill()
    first._process.wait()
    first.stop()

    fresh = host_pool()
    reader = attach(fresh, settings(first, timeout_ms=500, address=None))
    info = HiCacheStorageExtraInfo()
    calls = [
        (lambda: storage.batch_exists(hashes, info), 0),
        (lambda: storage.exists(hashes[0]), False),
        (lambda: query(reader, req), 0),
        (lambda: reader.storage_backend.batch_get_v1(hashes, host_indices(range(6)), info), [False] * 6),
        (lambda: load(reader, hashes, host_indices(range(6))), 0),
        (lambda: storage.batch_set_v1(hashes, host_indices(range(6)), info), [False] * 6),
        (lambda: backup(writer, hashes, host_indices(range(6))), 0),
        (lambda: storage.get(hashes[0], pool.get_dummy_flat_data_page()), None),
        (lambda: storage.batch_set(hashes[:1], [pool.get_data_page(0)]), False),
    ]
    for call, expected in calls:
        start = time.monotonic()
        assert call() == expected
        assert time.monotonic() - start < 2.0
    # The stores and gets count an error each; a lookup is a match_prefix,
    # for which a server that cannot be asked is a miss, as in the client.
    assert storage.memkv_stats()["errors"] >= 4 and reader.storage_backend.memkv_stats()["errors"] >= 2
    assert not any(page(fresh, p).any() for p in range(6))

    second = start_server(auth_key=key, address=address)
    try:
        assert second.address == address
        deadline = time.monotonic() + 10
        while not all(storage.batch_set_v1(hashes[:3], host_indices(range(3)), info)):
            assert time.monotonic() < deadline, "no store succeeded on the restarted server"
            time.sleep(0.02)  # the client retries a server marked down after ~200 ms
        assert storage.batch_exists(hashes) == 3  # pages 3..5 went with the old server
        while reader.storage_backend.batch_exists(hashes) != 3:
            assert time.monotonic() < deadline, "the reader did not see the restarted server"
            time.sleep(0.02)
        assert query(reader, req) == 3
        assert load(reader, hashes, host_indices(range(6))) == 3
        assert all(same(fresh, p, pool, p) for p in range(3))
        assert not any(page(fresh, p).any() for p in range(3, 6))
    finally:
        detach(writer, reader)
        second.stop()


def test_stopped_server_costs_at_most_timeout_ms():
    """A server that stops answering (SIGSTOP): each call gives up after
    timeout_ms with a miss; once it answers again, so does the backend."""
    s = start_server()
    pool = host_pool(pages=8)
    fill(pool, range(3), seed=13)
    ctl = attach(pool, settings(s, timeout_ms=300))
    storage = ctl.storage_backend
    hashes = request(3).hashes
    assert backup(ctl, hashes, host_indices(range(3))) == 3
    info = HiCacheStorageExtraInfo()
    s._process.send_signal(signal.SIGSTOP)
    wait_state(s._process.pid, stopped=True)
    try:
        for call, expected in [(lambda: storage.batch_exists(hashes, info), 0),
                               (lambda: storage.batch_get_v1(hashes, host_indices(range(4, 7)), info), [False] * 3),
                               (lambda: storage.batch_set_v1(hashes, host_indices(range(3)), info), [False] * 3)]:
            start = time.monotonic()
            assert call() == expected
            assert time.monotonic() - start < 1.5
    finally:
        s._process.send_signal(signal.SIGCONT)
        wait_state(s._process.pid, stopped=False)
    try:
        deadline = time.monotonic() + 10
        while storage.batch_exists(hashes) != 3:
            assert time.monotonic() < deadline, "the backend did not see the server again"
            time.sleep(0.02)
    finally:
        detach(ctl)
        s.stop()


def test_misuse_is_a_miss_not_an_exception(server, caplog):
    """No registered pool; a pool whose pages get_page_buffer_meta cannot
    describe (SGLang's MHA host pool in its page_unified layout, which it
    refuses with "Unsupported layout": logged as an ERROR at registration);
    host indices that do not match the keys: misses and failed stores, no
    exception. (A release without page_unified refuses that layout when the
    pool is built, so no such pool reaches the backend there.)"""
    ctl = attach(None, settings(server))
    storage = ctl.storage_backend
    hashes = request(2).hashes
    info = HiCacheStorageExtraInfo()
    assert storage.batch_exists(hashes, info) == 0 and storage.memkv_keys(hashes[0]) == []
    assert storage.batch_set_v1(hashes, host_indices(range(2)), info) == [False, False]

    try:
        unified = host_pool(layout="page_unified", pages=4)
    except ValueError as e:
        assert "Unsupported layout" in str(e)
        unified = None
    if unified is not None:
        with pytest.raises(ValueError, match="Unsupported layout"):
            unified.get_page_buffer_meta(host_indices([0]))
        with caplog.at_level(logging.ERROR, logger="memkv.adapters.sglang"):
            storage.register_mem_pool_host(unified)
        assert any(r.levelno == logging.ERROR and "page_unified" in r.getMessage() for r in caplog.records)
        assert storage.memkv_stats()["layout"] is None
        assert storage.batch_get_v1(hashes, host_indices(range(2)), info) == [False, False]
        assert storage.batch_set_v1(hashes, host_indices(range(2)), info) == [False, False]

    pool = host_pool(pages=4)
    storage.register_mem_pool_host(pool)
    assert storage.batch_set_v1(hashes, host_indices(range(3)), info) == [False, False]
    assert storage.batch_get_v1(hashes, host_indices(range(1)), info) == [False, False]
    assert storage.batch_set_v1(hashes, host_indices(range(2)), info) == [True, True]
    detach(ctl)


# --------------------------------------------------------------------------- back-pressure

def test_pages_a_busy_server_sheds_are_not_stored_and_loads_go_on(server, caplog):
    """Pages 2 and 4 of six: their V part shed by an overloaded server (Busy;
    a SheddingClient in place of PageIO's client, the seam CountingClient
    uses). batch_set_v1 reports exactly those pages not stored, nothing
    raises, the shed parts are counted in stores_shed (not errors) and
    logged at INFO only; the prefix stops at page 2, and the stored pages
    load byte for byte."""
    pool = host_pool(pages=8)
    fill(pool, range(6), seed=19)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    hashes = request(6).hashes
    shed = {storage.memkv_keys(hashes[i])[1] for i in (2, 4)}
    storage._io.client = SheddingClient(storage._io.client, lambda key: key in shed)
    info = HiCacheStorageExtraInfo()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert storage.batch_set_v1(hashes, host_indices(range(6)), info) == [True, True, False, True, False, True]
    stats = storage.memkv_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0
    assert [r.levelno for r in caplog.records if "busy" in r.getMessage()] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert storage.batch_exists(hashes) == 2
    fresh = host_pool(pages=8)
    reader = attach(fresh, settings(server))
    got = reader.storage_backend.batch_get_v1(hashes, host_indices(range(6)), info)
    assert got == [True, True, False, True, False, True]
    for p in (0, 1, 3, 5):
        assert same(fresh, p, pool, p), p
    detach(reader, ctl)


def test_a_flat_store_answered_draining_fails_like_unavailable(server, caplog):
    """Puts answered Draining: the pages are not stored, counted as errors
    (not shed) and logged as a WARNING."""
    pool = host_pool(pages=4)
    fill(pool, range(2), seed=20)
    ctl = attach(pool, settings(server))
    storage = ctl.storage_backend
    storage._io.client = SheddingClient(storage._io.client, lambda key: True, code=memkv.StatusCode.DRAINING)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        assert backup(ctl, request(2).hashes, host_indices(range(2))) == 0
    stats = storage.memkv_stats()
    assert stats["stores_shed"] == 0 and stats["errors"] == 1
    assert any(r.levelno == logging.WARNING and "Draining" in r.getMessage() for r in caplog.records)
    detach(ctl)

"""memkv.adapters._completions.CompletionFutures: Futures over a client's
asynchronous batches (what the LMCache storage plugin hands LMCache),
against a real server."""

import threading

import numpy as np
import pytest

import memkv
from memkv.adapters._completions import CompletionFutures


@pytest.fixture
def own_client(server):
    c = server.client()
    yield c
    c.close()


def test_each_future_completes_with_what_then_makes_of_its_result(own_client):
    futures = CompletionFutures(lambda: own_client, "test")
    values = np.arange(4 * 256, dtype=np.uint8).reshape(4, 256)
    keys = [f"cf-{i}".encode() for i in range(4)]
    put = futures.submit(lambda c: c.submit_put(keys, list(values)),
                         lambda r: (threading.current_thread().name, list(r.statuses)))
    name, statuses = put.result(timeout=10)
    assert statuses == [0] * 4 and name == "test-completions"
    out = np.zeros_like(values)
    got = futures.submit(lambda c: c.submit_get_into(keys + [b"cf-absent"], list(out) + [bytearray(8)]),
                         lambda r: r.statuses)
    assert got.result(timeout=10) == [0] * 4 + [memkv.StatusCode.NOT_FOUND]
    assert np.array_equal(out, values)
    many = [futures.submit(lambda c, k=k: c.submit_exists([k]), lambda r: r.present_prefix) for k in keys * 8]
    assert [f.result(timeout=10) for f in many] == [1] * 32
    assert futures.pending() == 0
    futures.close()


def test_an_exception_of_then_is_the_futures_and_a_refused_submission_raises(own_client):
    futures = CompletionFutures(lambda: own_client, "test")

    def boom(result):
        raise ValueError("then failed")

    with pytest.raises(ValueError, match="then failed"):
        futures.submit(lambda c: c.submit_exists([b"k"]), boom).result(timeout=10)
    with pytest.raises(memkv.InvalidArgument):
        futures.submit(lambda c: c.submit_get_into([b"k"], []), lambda r: r)  # 1 key but 0 buffers
    assert futures.pending() == 0
    futures.close()
    with pytest.raises(memkv.FailedPrecondition, match="closed"):
        futures.submit(lambda c: c.submit_exists([b"k"]), lambda r: r)


def test_close_waits_for_every_pending_future(own_client):
    futures = CompletionFutures(lambda: own_client, "test")
    pending = [futures.submit(lambda c: c.submit_put([b"cw"], [bytes(1 << 20)]), lambda r: r.ok) for _ in range(16)]
    futures.close()
    assert all(f.done() and f.result() for f in pending)
    futures.close()  # idempotent


def test_a_client_closed_first_still_settles_every_future(server):
    """Closing the client before close() here drops the completions of what it cancels: close() still
    returns, every Future done (then(None) for those whose completion never came)."""
    client = server.client()
    futures = CompletionFutures(lambda: client, "test")
    pending = [futures.submit(lambda c: c.submit_put([b"cc"], [bytes(1 << 20)]), lambda r: r is not None and r.ok)
               for _ in range(16)]
    client.close()
    futures.close()
    assert all(f.done() and isinstance(f.result(), bool) for f in pending)
    assert futures.pending() == 0

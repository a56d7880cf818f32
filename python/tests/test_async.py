"""Asynchronous batches: submit_*, completion_fd, poll_completions, cancel, and
the asyncio coroutines (aput, aget_into, aexists, adelete) against a real server."""

import asyncio
import select
import threading
import time

import pytest

import memkv


def collect(client, n, timeout_s=20.0):
    """Completions until n came, waiting on the fd as an event loop would."""
    fd = client.completion_fd()
    out = []
    deadline = time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < deadline:
        readable, _, _ = select.select([fd], [], [], 0.1)
        if readable:
            out.extend(client.poll_completions())
    return out


def test_results_equal_the_blocking_calls(client, key):
    keys = [f"{key}/{i}" for i in range(16)]
    values = [bytes([i]) * (100 + i) for i in range(16)]
    put_id = client.submit_put(keys[:8], values[:8], tag=5)
    [done] = collect(client, 1)
    assert (done.id, done.tag, done.op, done.cancelled) == (put_id, 5, "put", False)
    assert done.result.ok and done.result.present_prefix == 8

    async_bufs = [bytearray(200) for _ in keys]
    blocking_bufs = [bytearray(200) for _ in keys]
    want = client.batch_get_into(keys, blocking_bufs)
    client.submit_get_into(keys, async_bufs, tag=1)
    client.submit_exists(keys, tag=2)
    done = {c.tag: c for c in collect(client, 2)}
    assert done[1].op == "get"
    assert done[1].result.statuses == want.statuses
    assert done[1].result.sizes == want.sizes
    assert async_bufs == blocking_bufs
    assert done[2].result.statuses == client.batch_exists(keys).statuses
    assert done[2].result.sizes is None

    client.submit_delete(keys, tag=3)
    [deleted] = collect(client, 1)
    assert deleted.result.statuses == [0] * 8 + [memkv.StatusCode.NOT_FOUND] * 8
    assert client.batch_exists(keys).present_prefix == 0


def test_many_submissions_from_threads_complete_once(client, key):
    ids = []
    lock = threading.Lock()

    def submit(t):
        for j in range(25):
            i = client.submit_exists([f"{key}/{t}/{j}"], tag=t * 100 + j)
            with lock:
                ids.append(i)

    threads = [threading.Thread(target=submit, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = collect(client, 100)
    assert sorted(c.id for c in done) == sorted(ids)
    assert len({c.tag for c in done}) == 100
    assert client.poll_completions() == []
    readable, _, _ = select.select([client.completion_fd()], [], [], 0)
    assert not readable


def test_poll_waits_with_a_timeout(client, key):
    start = time.monotonic()
    assert client.poll_completions(timeout_ms=50) == []
    assert time.monotonic() - start >= 0.04
    client.submit_exists([key])
    assert len(client.poll_completions(timeout_ms=10000)) == 1


def test_cancel_of_a_finished_submission_is_false(client, key):
    i = client.submit_exists([key])
    assert len(collect(client, 1)) == 1
    assert client.cancel(i) is False
    assert client.cancel(987654321) is False


def test_bad_arguments_raise_at_submission(client, key):
    with pytest.raises(memkv.InvalidArgument):
        client.submit_put([key, key + "2"], [b"x"])
    with pytest.raises(memkv.InvalidArgument):
        client.submit_get_into([key], [b"read-only"])
    assert client.poll_completions() == []


def test_close_with_submissions_in_flight(server, key):
    c = server.client(timeout_ms=10000)
    value = bytes(256 * 1024)
    for i in range(50):
        c.submit_put([f"{key}/{i}"], [value])
    c.close()
    with pytest.raises(memkv.FailedPrecondition):
        c.poll_completions()
    with pytest.raises(memkv.FailedPrecondition):
        c.submit_exists([key])


def test_asyncio_coroutines(client, key):
    keys = [f"{key}/{i}" for i in range(8)]
    values = [bytes([i + 1]) * 4096 for i in range(8)]

    async def main():
        put = await client.aput(keys, values)
        assert put.ok
        bufs = [bytearray(4096) for _ in keys]
        # Several at once on one loop, each resolved from the one fd.
        got, present = await asyncio.gather(client.aget_into(keys, bufs), client.aexists(keys + [key + "/absent"]))
        assert got.ok and got.sizes == [4096] * 8
        assert [bytes(b) for b in bufs] == values
        assert present.statuses == [0] * 8 + [memkv.StatusCode.NOT_FOUND]
        deleted = await client.adelete(keys)
        assert deleted.ok

    asyncio.run(main())
    assert client.batch_exists(keys).present_prefix == 0


@pytest.mark.parametrize("how", ["close", "with"])
def test_closing_the_client_wakes_its_awaiters(server, key, how):
    c = server.client(timeout_ms=10000)
    value = bytes(256 * 1024)

    async def main():
        calls = [asyncio.ensure_future(c.aput([f"{key}/{i}"], [value])) for i in range(200)]
        await asyncio.sleep(0)  # every call submitted and awaiting
        if how == "close":
            c.close()
        else:
            c.__exit__(None, None, None)
        # Each wakes: finished before the close, or failed by it; none waits on.
        return await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), timeout=20)

    outcomes = asyncio.run(main())
    assert len(outcomes) == 200
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert all(isinstance(o, memkv.FailedPrecondition) for o in failed), failed
    assert all(o.ok for o in outcomes if not isinstance(o, BaseException))
    assert failed, "close() came after every put had finished"


def test_closing_from_another_thread_wakes_awaiters(server, key):
    c = server.client(timeout_ms=10000)
    value = bytes(256 * 1024)

    async def main():
        calls = [asyncio.ensure_future(c.aput([f"{key}/{i}"], [value])) for i in range(200)]
        await asyncio.sleep(0)
        closer = threading.Thread(target=c.close)
        closer.start()
        outcomes = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), timeout=20)
        closer.join()
        return outcomes

    outcomes = asyncio.run(main())
    assert all(isinstance(o, memkv.FailedPrecondition) or o.ok for o in outcomes), outcomes

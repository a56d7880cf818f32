"""One client shared by many threads, and close() racing calls in flight."""

import threading

import numpy as np

import memkv

THREADS = 8
ROUNDS = 40


def value_for(thread: int, round_: int) -> np.ndarray:
    size = 1000 + 977 * ((thread * ROUNDS + round_) % 50)
    return np.random.default_rng(thread * 1000 + round_).integers(0, 256, size, dtype=np.uint8)


def run_threads(target, count=THREADS):
    errors = []

    def guarded(i):
        try:
            target(i)
        except BaseException as e:  # collected and re-raised on the main thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def test_eight_threads_mixed_operations(client, key):
    def worker(t):
        buf = np.empty(1 << 16, dtype=np.uint8)
        for r in range(ROUNDS):
            k = f"{key}/{t}/{r}"
            v = value_for(t, r)
            client.put(k, v)
            assert client.exists(k)
            assert client.get_into(k, buf) == v.size and np.array_equal(buf[:v.size], v)
            assert client.get(k) == v.tobytes()
            if r % 4 == 3:  # a batch over the last four keys
                keys = [f"{key}/{t}/{i}" for i in range(r - 3, r + 1)]
                outs = [np.empty(1 << 16, dtype=np.uint8) for _ in keys]
                res = client.batch_get_into(keys, outs)
                assert res.ok
                for i, (out, size) in enumerate(zip(outs, res.sizes)):
                    assert np.array_equal(out[:size], value_for(t, r - 3 + i))
                assert client.batch_exists(keys).present_prefix == 4
                assert client.delete(keys[0]) and client.get(keys[0]) is None

    before = client.stats()["ops"]
    run_threads(worker)
    assert client.stats()["ops"] > before + THREADS * ROUNDS * 4


def test_close_while_threads_call(server, key):
    c = server.client()
    c.put(key, b"v")
    started = threading.Barrier(THREADS + 1)
    outcomes = []

    def worker(_):
        started.wait()
        while True:
            try:
                assert c.get(key) == b"v"
            except memkv.FailedPrecondition as e:
                outcomes.append(e)
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    started.wait()
    c.close()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert len(outcomes) == THREADS and all("closed" in str(e) for e in outcomes)

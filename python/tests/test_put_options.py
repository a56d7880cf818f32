"""Put options (memkv.PutOptions, the put keywords) and match_prefix against
real servers."""

import asyncio
import time

import numpy as np
import pytest

import memkv
from conftest import start_server


def _client_of(servers, **options):
    options.setdefault("transport", "tcp")
    return memkv.Client([s.address for s in servers], servers[0].auth_key, **options)


def test_match_prefix_over_two_servers_stops_at_the_hole(two_servers, key):
    keys = [f"{key}/{i}" for i in range(40)]
    with _client_of(two_servers) as c:
        assert {c.server_for(k) for k in keys} == {0, 1}
        stored = [k for i, k in enumerate(keys) if i != 23]
        assert c.batch_put(stored, [b"v"] * len(stored)).ok
        assert c.match_prefix(keys) == 23
        assert c.match_prefix(keys[:23]) == 23
        assert c.match_prefix(keys[23:]) == 0
        assert c.match_prefix(keys[24:]) == len(keys) - 24
        # Keys after the hole that are present do not count.
        assert c.match_prefix([keys[0], f"{key}/absent", keys[1]]) == 1
        assert c.match_prefix([k.encode() for k in keys[:5]]) == 5


def test_match_prefix_counts_a_key_on_an_unreachable_server_as_a_miss(key):
    first = start_server()
    second = start_server(first.auth_key)
    try:
        with _client_of([first, second], timeout_ms=2000, connect_timeout_ms=1000) as c:
            keys = [f"{key}/{i}" for i in range(30)]
            assert c.batch_put(keys, [b"v"] * len(keys)).ok
            second.stop()
            lost = next(i for i, k in enumerate(keys) if c.server_for(k) == 1)
            assert c.match_prefix(keys) == lost
    finally:
        first.stop()
        second.stop()


def test_match_prefix_refuses_bad_keys(client, key):
    with pytest.raises(memkv.InvalidArgument):
        client.match_prefix([f"{key}/a", ""])
    with pytest.raises(TypeError, match="keys"):
        client.match_prefix(f"{key}/a")
    with pytest.raises(memkv.InvalidArgument, match="1024"):
        client.match_prefix([f"{key}/{i}" for i in range(1025)])


def test_put_takes_every_option(client, key):
    client.put(f"{key}/head", b"h", block_hash=b"\x01" * 32)
    client.put(f"{key}/tail", b"t", ttl_ms=600_000, retention="evict_first", parent_key=f"{key}/head",
               block_hash=b"\x02" * 32, parent_hash=b"\x01" * 32)
    client.put(f"{key}/pinned", b"p", retention="pinned", ttl_ms=60_000, block_hash=-5, parent_hash=2**64 - 1)
    client.put(f"{key}/plain", b"n", retention="normal")
    buf = bytearray(b"zero copy")
    client.put_ptr(f"{key}/ptr", np.frombuffer(buf, dtype=np.uint8).ctypes.data, len(buf), parent_key=b"raw")
    assert [client.get(f"{key}/{k}") for k in ("head", "tail", "pinned", "plain", "ptr")] == \
        [b"h", b"t", b"p", b"n", b"zero copy"]
    assert client.match_prefix([f"{key}/head", f"{key}/tail", f"{key}/pinned"]) == 3


def test_batch_puts_take_one_options_per_key(client, key):
    keys = [f"{key}/{i}" for i in range(4)]
    options = [memkv.PutOptions(block_hash=i, parent_hash=i - 1, parent_key=keys[i - 1]) if i else None
               for i in range(4)]
    assert client.batch_put(keys, [b"a", b"b", b"c", b"d"], options=options).ok
    assert client.batch_get_into(keys, [bytearray(1) for _ in keys]).ok

    rows = np.arange(4 * 8, dtype=np.uint8).reshape(4, 8)
    ptr_keys = [f"{key}/ptr/{i}" for i in range(4)]
    addresses = [rows[i].ctypes.data for i in range(4)]
    assert client.batch_put_ptr(ptr_keys, addresses, 8, options=[memkv.PutOptions(ttl_ms=600_000)] * 4).ok
    out = np.zeros_like(rows)
    assert client.batch_get_into(ptr_keys, list(out)).ok
    assert np.array_equal(out, rows)

    sid = client.submit_put([f"{key}/async"], [b"s"], 7, options=[memkv.PutOptions(retention="evict_first")])
    ptr_sid = client.submit_put_ptr([f"{key}/async-ptr"], [rows[0].ctypes.data], 8, options=[None])
    done = {}
    deadline = time.monotonic() + 30
    while len(done) < 2 and time.monotonic() < deadline:
        for c in client.poll_completions(timeout_ms=1000):
            done[c.id] = c
    assert done[sid].result.ok and done[sid].tag == 7 and done[ptr_sid].result.ok

    async def aput():
        return await client.aput([f"{key}/aio"], [b"x"], options=[memkv.PutOptions(block_hash=b"h")])
    assert asyncio.run(aput()).ok
    assert client.get(f"{key}/aio") == b"x"


def test_put_options_read_back():
    o = memkv.PutOptions(ttl_ms=5, retention="pinned", parent_key="p", block_hash=-1, parent_hash=2**64 - 1)
    assert (o.ttl_ms, o.retention, o.parent_key, o.block_hash, o.parent_hash, o.hash_kind) == \
        (5, "pinned", b"p", -1, -1, "int64")
    b = memkv.PutOptions(block_hash=b"\x00\x01")
    assert (b.block_hash, b.parent_hash, b.parent_key, b.retention, b.hash_kind) == \
        (b"\x00\x01", None, None, "normal", "bytes")
    assert memkv.PutOptions() == memkv.PutOptions(ttl_ms=0, retention="normal")
    assert "retention='pinned'" in repr(o)


def _chain_one_by_one(keys, hashes, parent_key=None, parent_hash=None):
    """PutOptions.chain's meaning, one PutOptions at a time."""
    def usable(h):
        if isinstance(h, bytes):
            return 0 < len(h) <= 64
        return isinstance(h, int) and not isinstance(h, bool) and -(1 << 63) <= h < (1 << 64)

    parent_hash = parent_hash if usable(parent_hash) else None
    out = []
    for k, h in zip(keys, hashes):
        h = h if usable(h) else None
        if h is not None and parent_hash is not None and type(h) is not type(parent_hash):
            parent_hash = None
        out.append(memkv.PutOptions(parent_key=parent_key or None, block_hash=h, parent_hash=parent_hash))
        parent_key, parent_hash = k, h
    return out


@pytest.mark.parametrize("hashes, parent_key, parent_hash", [
    ([b"\x01" * 32, b"\x02" * 32, b"\x03" * 32], None, None),
    ([b"a" * 64, b"b" * 65, b"", b"c"], "head", b"p" * 16),  # over 64 and empty bytes are left out
    ([7, -(1 << 63), (1 << 64) - 1, 1 << 64, -(1 << 63) - 1], b"head", 3),  # past 64 bits left out
    ([b"x" * 8, 5, None, True, "text", 2.5, b"y"], None, 9),  # kinds mixed, None, a bool, other types
    ([], "head", b"p"),
])
def test_a_chain_of_options_is_the_same_as_one_put_options_at_a_time(hashes, parent_key, parent_hash):
    keys = [f"blk/{i}" if i % 2 else f"blk/{i}".encode() for i in range(len(hashes))]
    assert memkv.PutOptions.chain(keys, hashes, parent_key, parent_hash) == \
        _chain_one_by_one(keys, hashes, parent_key, parent_hash)


@pytest.mark.parametrize("hashes", [
    [b"\x01" * 32, b"\x02" * 32],
    [b"a" * 64, b"b" * 65, b"", b"c"],  # over 64 and empty bytes are left out
    [7, -(1 << 63), (1 << 64) - 1, 1 << 64, -(1 << 63) - 1],  # past 64 bits left out
    [b"x" * 8, 5, None, True, "text", 2.5, b"y"],  # kinds mixed, None, a bool, other types
    [],
])
def test_options_of_hashes_are_the_same_as_one_put_options_per_hash(hashes):
    def usable(h):
        if isinstance(h, bytes):
            return 0 < len(h) <= 64
        return isinstance(h, int) and not isinstance(h, bool) and -(1 << 63) <= h < (1 << 64)

    assert memkv.PutOptions.of_hashes(hashes) == [memkv.PutOptions(block_hash=h if usable(h) else None) for h in hashes]
    assert memkv.PutOptions.of_hashes(tuple(hashes)) == memkv.PutOptions.of_hashes(hashes)


def test_options_of_hashes_refuse_what_is_not_a_sequence():
    with pytest.raises(TypeError, match="block_hashes"):
        memkv.PutOptions.of_hashes(5)


def test_a_chain_refuses_lists_of_two_lengths_and_bad_keys():
    with pytest.raises(memkv.InvalidArgument, match="2 keys but 1 block hashes"):
        memkv.PutOptions.chain(["a", "b"], [b"h"])
    with pytest.raises(TypeError, match=r"keys\[1\]"):
        memkv.PutOptions.chain(["a", 5], [b"h", b"i"])


def test_bad_options_are_refused_naming_what_is_allowed(client, key):
    with pytest.raises(memkv.InvalidArgument, match="retention 'forever'.*'normal', 'pinned', 'evict_first'"):
        client.put(f"{key}/a", b"v", retention="forever")
    with pytest.raises(memkv.InvalidArgument, match="'normal', 'pinned', 'evict_first'"):
        memkv.PutOptions(retention="PINNED")
    with pytest.raises(TypeError, match="retention must be a str"):
        client.put(f"{key}/a", b"v", retention=1)
    with pytest.raises(memkv.InvalidArgument, match="block_hash is 65 bytes; allowed: at most 64"):
        client.put(f"{key}/a", b"v", block_hash=b"x" * 65)
    with pytest.raises(memkv.InvalidArgument, match="parent_hash .* does not fit 64 bits"):
        memkv.PutOptions(parent_hash=2**64)
    with pytest.raises(memkv.InvalidArgument, match="one kind"):
        memkv.PutOptions(block_hash=1, parent_hash=b"\x01")
    with pytest.raises(TypeError, match="block_hash must be bytes or an int"):
        memkv.PutOptions(block_hash="abc")
    with pytest.raises(memkv.InvalidArgument, match="ttl_ms -1 is out of range"):
        memkv.PutOptions(ttl_ms=-1)
    with pytest.raises(memkv.InvalidArgument, match="2 keys but 1 options"):
        client.batch_put([f"{key}/a", f"{key}/b"], [b"1", b"2"], options=[None])
    with pytest.raises(TypeError, match=r"options\[0\] must be a memkv.PutOptions or None"):
        client.batch_put([f"{key}/a"], [b"1"], options=[{"ttl_ms": 5}])
    with pytest.raises(TypeError):
        client.put(f"{key}/a", b"v", 5)  # the options are keywords only
    # Nothing was stored by the refused calls.
    assert not client.exists(f"{key}/a")


def _retention_server(**memory_settings):
    """A server that keeps TTLs and pins, or a skip naming what it lacks: one
    that does not know memory.pin_ttl refuses to start with it (its storage
    predates them). One that predates put options on the wire stores them as
    plain puts, which the caller checks (_skip_if_dropped)."""
    try:
        return start_server(memory_settings={"pin_ttl": "30m", **memory_settings})
    except RuntimeError as e:
        if "pin_ttl" in str(e):
            pytest.skip("the server's storage predates TTLs and pins (it does not know memory.pin_ttl)")
        raise


def _skip_if_dropped(client):
    if client.stats().get("put_options_dropped", 0) > 0:
        pytest.skip("the server predates put options (the client counted them dropped)")


def test_pins_past_the_cap_are_refused_naming_the_setting(key):
    server = _retention_server()
    try:
        with server.client() as client:
            client.put(f"{key}/probe", b"v", retention="evict_first")
            _skip_if_dropped(client)
            page = bytes(4 << 20)
            with pytest.raises(memkv.ResourceExhausted, match="memory.pinned_max_fraction"):
                for i in range(100):  # 400 MiB of pins against the default cap, half of 512 MiB
                    client.put(f"{key}/pin/{i}", page, retention="pinned")
            client.put(f"{key}/normal", page)  # the pool itself still takes values
    finally:
        server.stop()


def test_a_value_past_its_ttl_is_a_miss(key):
    server = _retention_server()
    try:
        with server.client() as client:
            client.put(f"{key}/short", b"v", ttl_ms=200)
            client.put(f"{key}/long", b"v", ttl_ms=600_000)
            _skip_if_dropped(client)
            deadline = time.monotonic() + 30
            while client.get(f"{key}/short") is not None:
                assert time.monotonic() < deadline, "the value outlived its 200 ms TTL by 30 s"
                time.sleep(0.05)
            assert client.match_prefix([f"{key}/long", f"{key}/short"]) == 1
            assert client.get(f"{key}/long") == b"v"
    finally:
        server.stop()

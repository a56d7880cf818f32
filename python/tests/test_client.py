"""Construction, from_env, the context manager, logging, fan-out over servers."""

import sys

import numpy as np
import pytest

import memkv


def test_context_manager_closes(server, key):
    with server.client() as c:
        c.put(key, b"v")
        assert not c.closed
    assert c.closed
    with pytest.raises(memkv.FailedPrecondition, match="closed") as e:
        c.get(key)
    assert e.value.code == 13
    c.close()  # twice is fine


def test_servers_as_comma_string(server, key):
    with memkv.Client(f" {server.address} ,", server.auth_key, transport="tcp", timeout_ms=None) as c:
        c.put(key, b"comma")
        assert c.get(key) == b"comma"


def test_from_env(server, key, monkeypatch):
    monkeypatch.delenv("MEMKV_CONFIG", raising=False)
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_TRANSPORT", "tcp")
    with memkv.Client.from_env() as c:
        c.put(key, b"from env")
        assert c.get(key) == b"from env"
    monkeypatch.setenv("MEMKV_AUTH_KEY", "not hex")
    with pytest.raises(memkv.InvalidArgument):
        memkv.Client.from_env()


def test_log_callback_receives_lines(server, key):
    lines = []
    # transport auto on a host without RDMA logs one INFO line (and with a
    # device, its own lines); debug lets every line through.
    with server.client(transport="auto", log_level="debug",
                       log_callback=lambda *line: lines.append(line)) as c:
        c.put(key, b"x")
        assert c.get(key) == b"x"
    assert lines, "no log line reached the callback"
    for level, component, message in lines:
        assert level in (memkv.LOG_DEBUG, memkv.LOG_INFO, memkv.LOG_WARN, memkv.LOG_ERROR)
        assert isinstance(component, str) and isinstance(message, str) and message


def test_log_level_off_silences_the_callback(server, key):
    lines = []
    with server.client(transport="auto", log_level="off", log_callback=lambda *line: lines.append(line)) as c:
        c.put(key, b"x")
    assert lines == []


def test_raising_log_callback_is_reported_not_propagated(server, key, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)

    def callback(level, component, message):
        raise RuntimeError("callback failed")

    with server.client(transport="auto", log_level=memkv.LOG_DEBUG, log_callback=callback) as c:
        c.put(key, b"still works")
        assert c.get(key) == b"still works"
    assert reported and all(isinstance(r.exc_value, RuntimeError) for r in reported)


def test_batch_fans_out_over_two_servers(two_servers, key):
    keys = [f"{key}/{i}" for i in range(64)]
    values = [np.full(1000 + i, i, dtype=np.uint8) for i in range(64)]
    with memkv.Client([s.address for s in two_servers], two_servers[0].auth_key, transport="tcp") as c:
        owners = [c.server_for(k) for k in keys]
        assert set(owners) == {0, 1}
        assert c.batch_put(keys, values).ok
        bufs = [np.zeros(2000, dtype=np.uint8) for _ in keys]
        r = c.batch_get_into(keys, bufs)
        assert r.ok and r.sizes == [v.size for v in values]
        assert all(np.array_equal(b[:v.size], v) for b, v in zip(bufs, values))
        assert c.batch_exists(keys).present_prefix == 64
    # Each server holds exactly its own share.
    with memkv.Client([two_servers[0].address], two_servers[0].auth_key, transport="tcp") as first:
        assert [code == 0 for code in first.batch_exists(keys)] == [o == 0 for o in owners]


def test_value_size_without_the_bytes(client, key):
    client.put(f"{key}/v", b"x" * 12345)
    assert client.value_size(f"{key}/v") == 12345
    assert client.value_size(f"{key}/absent") is None


def test_list_keys_pages_and_iter_keys_over_two_servers(two_servers, key):
    keys = sorted(f"{key}/list/{i:03d}".encode() for i in range(40))
    with memkv.Client([s.address for s in two_servers], two_servers[0].auth_key, transport="tcp") as c:
        assert c.batch_put(keys, [b"v"] * len(keys)).ok
        assert {c.server_for(k) for k in keys} == {0, 1}
        page, cursor = c.list_keys(f"{key}/list/", page_size=15)
        assert page == keys[:15] and cursor is not None
        page, cursor = c.list_keys(f"{key}/list/", cursor, 15)
        assert page == keys[15:30]
        page, cursor = c.list_keys(f"{key}/list/".encode(), cursor, 15)
        assert page == keys[30:] and cursor is None
        assert list(c.iter_keys(f"{key}/list/", page_size=7)) == keys
        assert list(c.iter_keys(f"{key}/none/")) == []
        with pytest.raises(memkv.InvalidArgument, match="allowed: 1..1024"):
            c.list_keys("", None, 0)


def test_register_memory_round_trip(client, key):
    buf = np.zeros(1 << 20, dtype=np.uint8)
    base = client.register_memory(buf)
    assert base == buf.ctypes.data
    client.put(key, np.arange(1 << 20, dtype=np.uint32).view(np.uint8)[: 1 << 20])
    assert client.get_into(key, buf) == 1 << 20
    client.unregister_memory(buf)
    raw = np.zeros(4096, dtype=np.uint8)
    assert client.register_memory(raw.ctypes.data, raw.nbytes) == raw.ctypes.data
    client.unregister_memory(raw.ctypes.data)


SERVER_VIEW_KEYS = {"name", "source", "id", "weight", "share", "state", "detail"}
SERVER_STATES = {"up", "pending", "down", "draining", "busy", "duplicate"}


def test_servers_lists_what_the_client_sees(two_servers):
    with memkv.Client(servers=[s.address for s in two_servers], auth_key=two_servers[0].auth_key) as c:
        views = c.servers()
        assert isinstance(views, list)
        for view in views:
            assert set(view) == SERVER_VIEW_KEYS, view
            assert isinstance(view["name"], str) and view["name"]
            assert isinstance(view["weight"], int) and view["weight"] >= 0
            assert 0.0 <= view["share"] <= 1.0
            assert view["state"] in SERVER_STATES, view
        if views:
            assert {v["name"] for v in views} == {s.address for s in two_servers}
    with pytest.raises(memkv.FailedPrecondition):
        c.servers()

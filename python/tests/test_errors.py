"""Errors: one class per status code with the wire's numbers, bad arguments,
bad options named, and failures against real (or silent) servers."""

import os
import re
import socket
import threading
import time

import numpy as np
import pytest

import memkv
from memkv._errors import _BY_CODE

from conftest import REPO

KEY_HEX = "ab" * 32
CLASSES = {
    "NOT_FOUND": memkv.NotFound, "INVALID_ARGUMENT": memkv.InvalidArgument,
    "DEADLINE_EXCEEDED": memkv.DeadlineExceeded, "UNAVAILABLE": memkv.Unavailable,
    "AUTH_FAILED": memkv.AuthFailed, "UNSUPPORTED_VERSION": memkv.UnsupportedVersion,
    "TOO_LARGE": memkv.TooLarge, "RESOURCE_EXHAUSTED": memkv.ResourceExhausted,
    "CORRUPTION": memkv.Corruption, "PROTOCOL_ERROR": memkv.ProtocolError, "INTERNAL": memkv.Internal,
    "IO_ERROR": memkv.IoError, "FAILED_PRECONDITION": memkv.FailedPrecondition,
    "PERMISSION_DENIED": memkv.PermissionDenied, "BUSY": memkv.Busy, "DRAINING": memkv.Draining,
}


def test_codes_are_those_of_the_c_api():
    with open(os.path.join(REPO, "include", "memkv", "memkv.h")) as f:
        c_codes = dict(re.findall(r"#define MEMKV_([A-Z_]+) (\d+)\n", f.read()))
    for name, cls in CLASSES.items():
        assert int(c_codes[name]) == cls.code == memkv.StatusCode[name], name
        assert issubclass(cls, memkv.Error)
        assert _BY_CODE[cls.code] is cls
    assert sorted(_BY_CODE) == list(range(1, 17))
    assert issubclass(memkv.InvalidArgument, ValueError)


def test_error_carries_code_and_message():
    e = memkv.TooLarge("too big", 7)
    assert e.code == 7 and e.message == "too big" and str(e) == "too big"


@pytest.mark.parametrize("options, named", [
    ({"timeout_ms": 0}, "timeout_ms"),
    ({"timeout_ms": -5}, "timeout_ms"),
    ({"connect_timeout_ms": 0}, "connect_timeout_ms"),
    ({"num_connections": 0}, "num_connections"),
    ({"num_connections": 1 << 40}, "num_connections"),
    ({"transport": "carrier-pigeon"}, "transport"),
    ({"servers": "no-port-here"}, "servers"),
    ({"servers": []}, "servers"),
    ({"auth_key": "abc"}, "auth_key"),
    ({"rdma_mtu": 1000}, "rdma_mtu"),
    ({"rdma_qps": 99}, "rdma_qps"),
    ({"log_level": "loud"}, "log_level"),
    ({"log_level": 9}, "log_level"),
])
def test_bad_option_is_invalid_argument_naming_it(options, named):
    args = {"servers": ["127.0.0.1:9"], "auth_key": KEY_HEX, **options}
    with pytest.raises(memkv.InvalidArgument) as e:
        memkv.Client(**args)
    assert e.value.code == memkv.StatusCode.INVALID_ARGUMENT
    assert named in str(e.value)


@pytest.mark.parametrize("options", [{"timeout_ms": "5"}, {"servers": 5}, {"log_callback": 3}, {"nope": 1}])
def test_wrong_option_type_is_type_error(options):
    with pytest.raises(TypeError):
        memkv.Client(**{"servers": ["127.0.0.1:9"], "auth_key": KEY_HEX, **options})


def test_bad_arguments(client, key):
    with pytest.raises(TypeError, match="key must be str or bytes"):
        client.put(5, b"x")
    with pytest.raises(TypeError, match="buffer protocol"):
        client.put(key, "a str is not bytes")
    with pytest.raises(memkv.InvalidArgument):
        client.put("", b"x")
    with pytest.raises(memkv.TooLarge):
        client.put("k" * 1025, b"x")
    client.put(key, b"12345678")
    with pytest.raises(memkv.InvalidArgument, match="writable"):
        client.get_into(key, bytes(8))
    with pytest.raises(memkv.InvalidArgument, match="C-contiguous"):
        client.get_into(key, np.zeros(32, dtype=np.uint8)[::2])
    with pytest.raises(memkv.InvalidArgument, match="C-contiguous"):
        client.put(key, np.zeros((4, 4), dtype=np.uint8).T)
    with pytest.raises(memkv.TooLarge) as e:
        client.get_into(key, bytearray(4))
    assert e.value.code == 7
    with pytest.raises(memkv.InvalidArgument, match="2 keys but 1 values"):
        client.batch_put([key, key], [b"x"])
    with pytest.raises(memkv.InvalidArgument, match="2 keys but 3 lengths"):
        client.batch_get_into_ptr([key, key], [1, 2], [1, 2, 3])
    with pytest.raises(TypeError, match="keys"):
        client.batch_exists("not-a-list")
    with pytest.raises(TypeError, match=r"keys\[1\]"):
        client.batch_exists([key, 7])
    with pytest.raises(memkv.InvalidArgument, match="null address"):
        client.put_ptr(key, 0, 10)
    with pytest.raises(memkv.InvalidArgument, match="out of range"):
        client.get_into_ptr(key, -1, 10)


def test_wrong_auth_key_is_auth_failed(server, key):
    with memkv.Client([server.address], "00" * 32, transport="tcp") as c:
        with pytest.raises(memkv.AuthFailed) as e:
            c.put(key, b"x")
    assert e.value.code == 5


def test_nothing_listening_is_unavailable(key):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    with memkv.Client([f"127.0.0.1:{port}"], KEY_HEX, transport="tcp", timeout_ms=2000) as c:
        with pytest.raises(memkv.Unavailable) as e:
            c.get(key)
    assert e.value.code == 4


class SilentServer:
    """Accepts connections and never answers: a stalled server."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.accepted = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        try:
            while True:
                self.accepted.append(self.listener.accept()[0])
        except OSError:
            pass  # closed

    def close(self):
        self.listener.close()
        for s in self.accepted:
            s.close()


def test_stalled_server_hits_the_deadline_while_other_threads_run(server, key):
    timeout_ms = 2000  # long enough for this thread's own calls even on a loaded machine
    stalled = SilentServer()
    outcome = {}

    def call():
        with memkv.Client([stalled.address], KEY_HEX, transport="tcp", timeout_ms=timeout_ms) as c:
            start = time.monotonic()
            try:
                c.put(key, b"x" * 100)
                outcome["error"] = None
            except memkv.Error as e:
                outcome["error"] = e
            outcome["seconds"] = time.monotonic() - start

    try:
        t = threading.Thread(target=call)
        t.start()
        # While that call waits on the network this thread holds the GIL and
        # uses the real server: the binding must have released it.
        with server.client() as other:
            other.put(key, b"meanwhile")
            assert other.get(key) == b"meanwhile"
        still_waiting = t.is_alive()
        t.join(timeout_ms / 1000 + 5)
        assert not t.is_alive(), "the call hung past its deadline"
    finally:
        stalled.close()
    assert still_waiting, "the stalled call should still have been waiting"
    assert isinstance(outcome["error"], (memkv.DeadlineExceeded, memkv.Unavailable)), outcome
    assert outcome["error"].code in (3, 4)
    assert outcome["seconds"] < timeout_ms / 1000 + 2


def test_batch_reports_per_key_misses(client, key):
    keys = [f"{key}/{i}" for i in range(4)]
    assert client.batch_put(keys[:2], [b"aa", b"bbb"]).ok
    bufs = [bytearray(8) for _ in keys]
    r = client.batch_get_into(keys, bufs)
    assert list(r) == r.statuses == [0, 0, 1, 1]
    assert r.present_prefix == 2 and not r.ok and len(r) == 4
    assert r.sizes == [2, 3, 0, 0]
    assert r[2] == memkv.StatusCode.NOT_FOUND and r[-1] == 1
    assert r.error(0) is None
    assert isinstance(r.error(3), memkv.NotFound) and r.error(3).code == 1
    assert r.messages[0] == "" and r.messages[3]
    with pytest.raises(IndexError):
        r[4]
    assert "present_prefix=2" in repr(r)

"""libkv_store_memkv.so through ctypes, the way oMLX's paged SSD cache uses it.

The table is mirrored field by field with ctypes (as oMLX's
storage_memkv.py mirrors it), chunks are put, made durable by a manifest
write (oMLX writes an empty sentinel manifest), read back and released with
libc's free(). Runs against the session's real server (conftest.py).

The plugin: KV_STORE_LIBRARY_PATH (a directory, as oMLX reads it), else
src/kvstore/ of the build that holds MEMKV_BINARY, else this checkout's
build/. Skipped, saying so, when it is not built.
"""

import ctypes
import ctypes.util
import hashlib
import os
import threading
import time
import uuid

import pytest

import memkv.testing
from conftest import memkv_binary

LIB_NAME = "libkv_store_memkv.so"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Return codes of memkv/kv_store.h.
KV_STORE_OK = 0
KV_STORE_ERR_NOT_FOUND = -1
KV_STORE_ERR_INVALID_ARGUMENT = -2
KV_STORE_ERR_UNAVAILABLE = -5


def _find_library():
    candidates = []
    if os.environ.get("KV_STORE_LIBRARY_PATH"):
        candidates.append(os.path.join(os.environ["KV_STORE_LIBRARY_PATH"], LIB_NAME))
    if os.environ.get("MEMKV_BINARY"):
        candidates.append(os.path.join(os.path.dirname(os.environ["MEMKV_BINARY"]), "src", "kvstore", LIB_NAME))
    candidates.append(os.path.join(REPO, "build", "src", "kvstore", LIB_NAME))
    for path in candidates:
        if os.path.exists(path):
            return path
    pytest.skip(f"{LIB_NAME} is not built (looked at {', '.join(candidates)}); "
                "build the memkv_kv_store target", allow_module_level=True)


class _Handle(ctypes.Structure):
    """Opaque: what open() returns."""


_HandlePtr = ctypes.POINTER(_Handle)
_U8Ptr = ctypes.POINTER(ctypes.c_uint8)
_U8PtrPtr = ctypes.POINTER(_U8Ptr)
_SizePtr = ctypes.POINTER(ctypes.c_size_t)


class _Vtable(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32),
        ("open", ctypes.CFUNCTYPE(_HandlePtr, ctypes.c_char_p)),
        ("close", ctypes.CFUNCTYPE(None, _HandlePtr)),
        ("put_chunk", ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, _U8Ptr, ctypes.c_size_t, _U8Ptr, ctypes.c_size_t)),
        ("get_chunk", ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, _U8Ptr, ctypes.c_size_t, _U8PtrPtr, _SizePtr)),
        ("put_manifest", ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, ctypes.c_char_p, _U8Ptr, ctypes.c_size_t)),
        ("get_manifest", ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, ctypes.c_char_p, _U8PtrPtr, _SizePtr)),
        ("delete_manifest", ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, ctypes.c_char_p)),
        ("prefetch_chunks", ctypes.CFUNCTYPE(ctypes.c_int, _HandlePtr, _U8Ptr, ctypes.c_size_t, ctypes.c_size_t)),
    ]


_LIB = ctypes.CDLL(_find_library(), mode=ctypes.RTLD_LOCAL)
_LIB.kv_store_get_vtable.argtypes = []
_LIB.kv_store_get_vtable.restype = ctypes.POINTER(_Vtable)
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
_LIBC.free.argtypes = [ctypes.c_void_p]
_LIBC.free.restype = None


def _u8(data: bytes):
    return (ctypes.c_uint8 * len(data)).from_buffer_copy(data) if data else (ctypes.c_uint8 * 0)()


class Store:
    """A handle, used as oMLX's MemkvBackend uses it."""

    def __init__(self, uri: str):
        self.vt = _LIB.kv_store_get_vtable().contents
        self.h = self.vt.open(uri.encode())
        if not self.h:
            raise RuntimeError(f"open failed for {uri!r}")

    def close(self):
        self.vt.close(self.h)

    def put(self, hash_bytes: bytes, data: bytes) -> int:
        return self.vt.put_chunk(self.h, _u8(hash_bytes), len(hash_bytes), _u8(data), len(data))

    def flush(self) -> int:
        # oMLX's sentinel: an empty manifest write makes buffered chunks durable.
        return self.vt.put_manifest(self.h, b"__omlx_index__", (ctypes.c_uint8 * 0)(), 0)

    def _take(self, rc, out, out_len):
        if rc < 0:
            assert not out, "a failed get must leave *out NULL"
            assert out_len.value == 0
            return rc, None
        assert out, "a successful get never returns NULL"
        try:
            return rc, ctypes.string_at(out, out_len.value)
        finally:
            _LIBC.free(ctypes.cast(out, ctypes.c_void_p))

    def get(self, hash_bytes: bytes):
        out, out_len = _U8Ptr(), ctypes.c_size_t(0)
        rc = self.vt.get_chunk(self.h, _u8(hash_bytes), len(hash_bytes), ctypes.byref(out), ctypes.byref(out_len))
        return self._take(rc, out, out_len)

    def put_manifest(self, name: str, data: bytes) -> int:
        return self.vt.put_manifest(self.h, name.encode(), _u8(data), len(data))

    def get_manifest(self, name: str):
        out, out_len = _U8Ptr(), ctypes.c_size_t(0)
        rc = self.vt.get_manifest(self.h, name.encode(), ctypes.byref(out), ctypes.byref(out_len))
        return self._take(rc, out, out_len)

    def prefetch(self, hashes) -> int:
        joined = b"".join(hashes)
        return self.vt.prefetch_chunks(self.h, _u8(joined), len(hashes[0]) if hashes else 0, len(hashes))


@pytest.fixture
def uri(server, monkeypatch):
    """A fresh namespace on the session's server, with its key in the environment."""
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_TRANSPORT", "tcp")
    return f"memkv://{server.address}/pytest/{uuid.uuid4().hex}"


def _block(i: int, size: int = 48 * 1024):
    """An oMLX-like block: a sha256 key and a blob."""
    blob = (f"block {i} ".encode() * (size // 8 + 1))[:size]
    return hashlib.sha256(blob).digest(), blob


def test_table_layout_and_version():
    vt = _LIB.kv_store_get_vtable().contents
    assert vt.version == 2
    assert ctypes.sizeof(_Vtable) == 8 + 8 * ctypes.sizeof(ctypes.c_void_p)
    for name, _ in _Vtable._fields_[1:]:
        assert getattr(vt, name), f"{name} is NULL"


def test_put_flush_get_free_like_omlx(uri):
    store = Store(uri)
    blocks = [_block(i) for i in range(8)]
    for key, blob in blocks:
        assert store.put(key, blob) == KV_STORE_OK
    assert store.flush() == KV_STORE_OK
    store.close()

    reader = Store(uri)
    for key, blob in blocks:
        assert reader.get(key) == (KV_STORE_OK, blob)
    rc, manifest = reader.get_manifest("__omlx_index__")
    assert (rc, manifest) == (KV_STORE_OK, b"")  # empty, but a real (freed) buffer
    reader.close()


def test_missing_chunk_and_manifest_are_not_found(uri):
    store = Store(uri)
    assert store.get(hashlib.sha256(b"never stored").digest()) == (KV_STORE_ERR_NOT_FOUND, None)
    assert store.get_manifest("never written") == (KV_STORE_ERR_NOT_FOUND, None)
    assert store.get(b"") == (KV_STORE_ERR_INVALID_ARGUMENT, None)
    store.close()


def test_manifest_then_prefetched_restore(uri):
    saver = Store(uri)
    blocks = [_block(i, 100 * 1024) for i in range(16)]
    for key, blob in blocks:
        assert saver.put(key, blob) == KV_STORE_OK
    index = b"".join(key for key, _ in blocks)
    assert saver.put_manifest("session-1", index) == KV_STORE_OK
    saver.close()

    reader = Store(uri)
    rc, got = reader.get_manifest("session-1")
    assert rc == KV_STORE_OK and got == index
    hashes = [got[i:i + 32] for i in range(0, len(got), 32)]
    assert reader.prefetch(hashes) == KV_STORE_OK
    for (key, blob), h in zip(blocks, hashes):
        assert h == key
        assert reader.get(h) == (KV_STORE_OK, blob)
    reader.close()


def test_bad_uri_is_refused_with_its_reason(uri, capfd):
    vt = _LIB.kv_store_get_vtable().contents
    assert not vt.open(b"memkv://127.0.0.1/ns")
    assert not vt.open(b"memkv://127.0.0.1:9900?x=1/ns")
    err = capfd.readouterr().err
    assert "server '127.0.0.1' has no port" in err
    assert "a query ('?') is not allowed" in err
    assert "expected memkv://host:port[,host:port...]/namespace" in err


@pytest.mark.parametrize("model, key_form", [
    ("/Users/me/models/Qwen3-8B-4bit", "%2FUsers/me/models/Qwen3-8B-4bit"),
    ("My Model (v2)", "My%20Model%20%28v2%29"),
    ("mlx-community/Llama-3.2-1B-Instruct-4bit", "mlx-community/Llama-3.2-1B-Instruct-4bit"),
    ("C:\\models\\qwen#3?", "C:%5Cmodels%5Cqwen%233%3F"),
])
def test_omlx_model_names_open_and_map_to_a_key_namespace(server, client, monkeypatch, model, key_form):
    """oMLX opens <uri path>/<model name>: a model that is a local path or
    holds spaces opens, and its keys live under the percent-encoded
    namespace, apart from every other model's."""
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_TRANSPORT", "tcp")
    base = f"omlx-{uuid.uuid4().hex[:8]}"
    store = Store(f"memkv://{server.address}/{base}/{model}")
    key, blob = _block(1, 4096)
    assert store.put(key, blob) == KV_STORE_OK
    assert store.flush() == KV_STORE_OK
    store.close()
    prefix = f"{base}/{key_form}"
    assert client.get(f"{prefix}/m/__omlx_index__".encode()) == b""
    assert client.get(f"{prefix}/c/{key.hex()}".encode()) == blob
    reader = Store(f"memkv://{server.address}/{base}/{model}")
    assert reader.get(key) == (KV_STORE_OK, blob)
    reader.close()
    other = Store(f"memkv://{server.address}/{base}/{model}x")
    assert other.get(key) == (KV_STORE_ERR_NOT_FOUND, None)
    other.close()


def test_threads_share_one_handle(uri):
    store = Store(uri)
    failures = []

    def work(t):
        try:
            for i in range(10):
                key, blob = _block(t * 100 + i, 16 * 1024)
                assert store.put(key, blob) == KV_STORE_OK
                assert store.put_manifest(f"t{t}", key) == KV_STORE_OK
                assert store.get(key) == (KV_STORE_OK, blob)
        except AssertionError as e:  # reported below, from the main thread
            failures.append(f"thread {t}: {e!r}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    store.close()
    assert failures == []


def _restartable_server(auth_key=None) -> memkv.testing.LocalServer:
    """A server that can stop and come back at the same address."""
    for _ in range(20):
        address = f"127.0.0.1:{memkv.testing.restartable_port()}"
        try:
            return memkv.testing.LocalServer(memkv_binary(), memory="64 MiB", workers=1, auth_key=auth_key,
                                             extra_args=["--address", address]).start()
        except RuntimeError:  # taken between the probe and the start: another one
            continue
    raise RuntimeError("no server started on a restartable port")


def test_open_handle_recovers_at_once_after_a_server_restart(monkeypatch):
    """Regression: an open handle that kept being used through a server
    restart failed for seconds after the server was back (the client's
    backoff had doubled on every refused connection) while a fresh handle
    worked at once. Now it succeeds within the first backoff step (200 ms)
    of the server listening again."""
    first = _restartable_server()
    address = first.address
    monkeypatch.setenv("MEMKV_AUTH_KEY", first.auth_key)
    monkeypatch.setenv("MEMKV_TRANSPORT", "tcp")
    monkeypatch.setenv("MEMKV_TIMEOUT_MS", "2000")
    monkeypatch.setenv("MEMKV_LOG_LEVEL", "off")
    uri = f"memkv://{address}/restart/{uuid.uuid4().hex}"
    store = Store(uri)
    second = None
    try:
        assert store.put_manifest("m", b"before") == KV_STORE_OK
        first.stop()
        # 3.5 s of outage with the handle in use, paced like an engine's
        # requests: every call fails, fast. (With a back-off that doubled on
        # each refusal, 200 ms .. 3.2 s, the next try after 3.5 s came at
        # 6.2 s.)
        outage_end = time.monotonic() + 3.5
        calls = 0
        while time.monotonic() < outage_end:
            rc, _ = store.get_manifest("m")
            assert rc == KV_STORE_ERR_UNAVAILABLE, rc
            calls += 1
            time.sleep(0.01)
        assert calls > 20
        second = _restartable_server_at(address, first.auth_key)
        ready = time.monotonic()  # start() returns once the server accepts clients
        failed = 0
        deadline = ready + 10.0
        while True:
            rc = store.put_manifest("m", b"after")
            if rc == KV_STORE_OK:
                break
            assert rc == KV_STORE_ERR_UNAVAILABLE, rc
            failed += 1
            assert time.monotonic() < deadline, "the handle never recovered"
            time.sleep(0.01)
        took = time.monotonic() - ready
        # The backoff's first step is 200 ms; the bound leaves room for a
        # loaded machine and is far below the seconds it took before.
        assert took < 1.0, f"the open handle recovered {took:.2f} s after the server was ready ({failed} failures)"
        assert store.get_manifest("m") == (KV_STORE_OK, b"after")
    finally:
        store.close()
        if second is not None:
            second.stop()
        first.stop()


def _restartable_server_at(address: str, auth_key: str) -> memkv.testing.LocalServer:
    """The server again at `address` (its port is below the ephemeral range:
    nothing else takes it meanwhile)."""
    return memkv.testing.LocalServer(memkv_binary(), memory="64 MiB", workers=1, auth_key=auth_key,
                                     extra_args=["--address", address]).start()

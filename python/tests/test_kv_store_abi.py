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
import uuid

import pytest

LIB_NAME = "libkv_store_memkv.so"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Return codes of memkv/kv_store.h.
KV_STORE_OK = 0
KV_STORE_ERR_NOT_FOUND = -1
KV_STORE_ERR_INVALID_ARGUMENT = -2


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
    assert not vt.open(uri.encode() + b"?x=1")
    err = capfd.readouterr().err
    assert "server '127.0.0.1' has no port" in err
    assert "a query ('?') is not allowed" in err
    assert "expected memkv://host:port[,host:port...]/namespace" in err


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

"""Values go in and come back byte for byte: sizes, key and buffer types, misses."""

import mmap

import numpy as np
import pytest

import memkv

MiB = 1 << 20


def pattern(size: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 65537, MiB, 8 * MiB + 3, 64 * MiB])
def test_round_trip_sizes(client, key, size):
    value = pattern(size, size)
    client.put(key, value)
    assert client.get(key) == value
    out = np.full(size + 16, 0xAB, dtype=np.uint8)
    assert client.get_into(key, out) == size
    assert out[:size].tobytes() == value
    assert (out[size:] == 0xAB).all(), "get_into wrote past the value"
    assert client.delete(key) is True


def test_miss_convention(client, key):
    buf = bytearray(8)
    assert client.get(key) is None
    assert client.get_into(key, buf) is None
    assert client.exists(key) is False
    assert client.delete(key) is False
    client.put(key, b"v")
    assert client.exists(key) is True
    assert client.delete(key) is True
    assert client.exists(key) is False


def test_str_key_is_its_utf8_bytes(client):
    client.put("clé-✓", b"unicode")
    assert client.get("clé-✓".encode("utf-8")) == b"unicode"
    client.put(b"\xff\x00raw", b"binary key")
    assert client.get(b"\xff\x00raw") == b"binary key"


def test_put_from_every_buffer_type(client, key):
    value = pattern(10000, 7)
    with mmap.mmap(-1, len(value)) as mm:
        mm[:] = value
        sources = [value, bytearray(value), memoryview(value), memoryview(value)[0:len(value)], mm,
                   np.frombuffer(value, dtype=np.uint8), np.frombuffer(value, dtype=np.float32, count=2500)
                   .reshape(50, 50)]
        for i, source in enumerate(sources):
            client.put(f"{key}/{i}", source)
            assert client.get(f"{key}/{i}") == value, type(source)


def test_get_into_every_writable_type(client, key):
    value = pattern(4096, 8)
    client.put(key, value)
    with mmap.mmap(-1, 4096) as mm:
        targets = [bytearray(4096), memoryview(bytearray(4096)), mm, np.zeros((64, 16), dtype=np.float32)]
        for target in targets:
            assert client.get_into(key, target) == 4096
            assert bytes(memoryview(target).cast("B")) == value, type(target)


def test_overwrite_replaces_value(client, key):
    client.put(key, b"first value")
    client.put(key, b"2nd")
    assert client.get(key) == b"2nd"


def test_raw_pointer_forms(client, key):
    src = np.frombuffer(pattern(3 * 4096, 9), dtype=np.uint8).copy()
    dst = np.zeros_like(src)
    client.put_ptr(key, src.ctypes.data, src.nbytes)
    assert client.get_into_ptr(key, dst.ctypes.data, dst.nbytes) == src.nbytes
    assert np.array_equal(src, dst)
    assert client.get_into_ptr(key + "/absent", dst.ctypes.data, dst.nbytes) is None

    pages = src.reshape(3, 4096)
    keys = [f"{key}/page{i}" for i in range(3)]
    addresses = [src.ctypes.data + i * 4096 for i in range(3)]
    assert client.batch_put_ptr(keys, addresses, 4096).ok
    out = np.zeros((3, 4096), dtype=np.uint8)
    r = client.batch_get_into_ptr(keys, [out.ctypes.data + i * 4096 for i in range(3)], [4096, 4096, 4096])
    assert r.ok and r.sizes == [4096] * 3
    assert np.array_equal(out, pages)
    # Engines' page tables: numpy arrays of addresses and lengths.
    out[:] = 0
    page_addresses = out.ctypes.data + np.arange(3, dtype=np.uint64) * np.uint64(4096)
    r = client.batch_get_into_ptr(keys, page_addresses, np.full(3, 4096, dtype=np.int64))
    assert r.ok and np.array_equal(out, pages)
    assert client.get_into_ptr(keys[0], page_addresses[0], np.int32(4096)) == 4096


def test_torch_cpu_tensor(client, key):
    torch = pytest.importorskip("torch")
    src = torch.arange(1024, dtype=torch.float16)
    client.put(key, src.numpy())
    dst = torch.zeros(1024, dtype=torch.float16)
    assert client.get_into(key, dst.numpy()) == 2048
    assert torch.equal(src, dst)
    dst.zero_()
    assert client.get_into_ptr(key, dst.data_ptr(), dst.numel() * dst.element_size()) == 2048
    assert torch.equal(src, dst)


def test_server_for_is_an_index(client, key):
    assert client.server_for(key) == 0


def test_stats_count_operations(client, key):
    before = client.stats()
    client.put(key, b"x" * 1000)
    assert client.get(key) == b"x" * 1000
    after = client.stats()
    assert after["ops"] - before["ops"] == 2
    assert after["bytes_sent"] - before["bytes_sent"] >= 1000
    assert after["bytes_received"] - before["bytes_received"] >= 1000
    assert after["transport"] == "tcp" and after["rdma_state"] == "off"
    assert set(after) == {
        "ops", "bytes_sent", "bytes_received", "checksum_failures", "timeouts", "connections_opened", "transport",
        "rdma_ops", "rdma_bytes", "rdma_zero_copy_ops", "tcp_ops", "tcp_bytes", "rdma_reissued", "rdma_state",
        "fallbacks", "fallback_reason", "rdma_path", "completion_errors", "put_options_dropped",
        "grace_lookups", "grace_hits", "stores_shed", "placement_changes", "fallback_reads", "fallback_writes",
        "server_problems", "lookups", "found", "fetched", "fetched_in_time", "fetched_late", "rdma_spare_puts"}
    assert isinstance(after["completion_errors"], dict)


def test_version():
    parts = memkv.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts)

"""Zero copy: gets land in the caller's own memory, puts are sent from it.

The memory checks read the process's peak RSS (VmHWM, reset through
/proc/self/clear_refs): a copy of a 256 MiB value anywhere on the way would
raise the peak by 256 MiB.
"""

import mmap
import re

import numpy as np
import pytest

MiB = 1 << 20
BIG = 256 * MiB
# Far below the 256 MiB a copy would add; room for allocator and socket noise.
RSS_SLACK = 48 * MiB


def kib(field: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+) kB", f.read()).group(1)) * 1024


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
    except OSError:
        pytest.skip("cannot reset the peak RSS (/proc/self/clear_refs)")
    assert kib("VmHWM") - kib("VmRSS") < MiB


def test_get_into_writes_the_arrays_own_memory(client, key):
    value = np.arange(1000, dtype=np.uint32)
    client.put(key, value)
    base = np.zeros(3000, dtype=np.uint32)
    window = base[1000:2000]  # a view: its memory is the middle of base's
    assert window.ctypes.data == base.ctypes.data + 4000
    assert client.get_into(key, window) == 4000
    assert window.ctypes.data == base.ctypes.data + 4000
    assert np.array_equal(base[1000:2000], value), "the bytes must land in base's own memory"
    assert not base[:1000].any() and not base[2000:].any()


def test_batch_get_into_fills_slices_of_one_array(client, key):
    pages = np.random.default_rng(1).integers(0, 1 << 16, (8, 8192), dtype=np.uint16)
    keys = [f"{key}/{i}" for i in range(8)]
    assert client.batch_put(keys, list(pages)).ok
    cache = np.zeros((8, 8192), dtype=np.uint16)
    r = client.batch_get_into(keys, [cache[i] for i in range(8)])
    assert r.ok and r.sizes == [16384] * 8
    assert np.array_equal(cache, pages)


def pattern_into(region: memoryview) -> np.ndarray:
    words = np.frombuffer(region, dtype=np.uint64)
    words[:] = np.arange(words.size, dtype=np.uint64)
    words *= np.uint64(0x9E3779B97F4A7C15)
    return words


def matches_pattern(words: np.ndarray) -> bool:
    chunk = 1 << 21  # compare in pieces: no 256 MiB temporary
    for start in range(0, words.size, chunk):
        expected = np.arange(start, min(start + chunk, words.size), dtype=np.uint64)
        expected *= np.uint64(0x9E3779B97F4A7C15)
        if not np.array_equal(words[start:start + chunk], expected):
            return False
    return True


def test_256_mib_put_and_get_into_do_not_copy(client, key):
    with mmap.mmap(-1, BIG) as mm:
        view = memoryview(mm)
        words = pattern_into(view)  # touches every page: the value's own RSS
        reset_peak_rss()
        start = kib("VmHWM")
        client.put(key, view)
        put_growth = kib("VmHWM") - start
        assert put_growth < RSS_SLACK, f"put of 256 MiB raised peak RSS by {put_growth / MiB:.1f} MiB"

        words[:] = 0
        reset_peak_rss()
        start = kib("VmHWM")
        assert client.get_into(key, view) == BIG
        get_growth = kib("VmHWM") - start
        assert get_growth < RSS_SLACK, f"get_into of 256 MiB raised peak RSS by {get_growth / MiB:.1f} MiB"
        assert matches_pattern(words)
        del words
        view.release()
    assert client.delete(key)

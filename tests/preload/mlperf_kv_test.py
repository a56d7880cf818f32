"""The storage calls of MLPerf Storage's KV-cache benchmark (kv_cache_benchmark,
its file tier) written here, run under libmemkv_preload.so against a real
server: each entry a NumPy array saved to <key>.npy through a file object
(open 'wb', np.save, flush, os.fsync, close), then os.stat, open +
posix_fadvise(DONTNEED) + close, np.load, os.unlink and glob.glob, with
entries from 1 MiB to 3 GiB, several threads at once.

Checked: every array read back has the digest of the one written; os.stat
gives the size written; glob lists what is there; the server holds each key
with the same bytes (memkv ls and memkv get, run without the shim) and none
after unlink; the shim counted no failed put or get (memkv_preload_stats).
Digests, not copies, are kept, so memory stays near twice the biggest
entry in this process (plus the server's copy).

Usage: mlperf_kv_test.py MEMKV_BINARY CACHE_DIR KEY_DIR
  CACHE_DIR  a directory under MEMKV_PRELOAD_PREFIX (the benchmark's --cache-dir)
  KEY_DIR    its key (CACHE_DIR less the prefix and its slash)
Exit 0 when every check passed, 77 when NumPy is missing.
"""
import ctypes
import glob
import hashlib
import os
import subprocess
import sys
import threading
import time

try:
    import numpy as np
except ImportError:
    print("mlperf_kv_test.py: SKIP: no NumPy (Debian: python3-numpy)", file=sys.stderr)
    sys.exit(77)

MIB = 1 << 20
# One token of KV cache for a Llama-3.1-8B-shaped model (32 layers, K and V,
# 8 KV heads of 128, float16): 128 KiB.
LAYERS, KV_HEADS, HEAD_DIM = 32, 8, 128
TOKEN_BYTES = LAYERS * 2 * KV_HEADS * HEAD_DIM * 2

memkv, cache_dir, key_dir = sys.argv[1], sys.argv[2], sys.argv[3]
plain_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
errors = []
errors_lock = threading.Lock()


def fail(message):
    with errors_lock:
        errors.append(message)
    print(f"mlperf_kv_test.py: FAIL {message}", file=sys.stderr, flush=True)


def log(message):
    print(f"mlperf_kv_test.py: {message}", flush=True)


class Stats(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in
                ("puts", "put_bytes", "put_errors", "put_errors_unreported", "gets", "get_bytes", "get_errors")]


def shim_stats():
    stats = Stats()
    fn = ctypes.CDLL(None).memkv_preload_stats
    fn.restype = ctypes.c_size_t
    fn(ctypes.byref(stats), ctypes.c_size_t(ctypes.sizeof(stats)))
    return stats


def make_entry(tokens, seed):
    """A KV-cache-shaped float16 array of tokens * 128 KiB, from a cheap
    pattern (in place: one allocation)."""
    words = np.arange(tokens * TOKEN_BYTES // 8, dtype=np.uint64)
    words *= np.uint64(0x9E3779B97F4A7C15)
    words ^= np.uint64((seed * 0x100000001B3 + 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF)
    return words.view(np.float16).reshape(LAYERS, 2, tokens, KV_HEADS, HEAD_DIM)


def digest(array):
    return hashlib.sha1(np.ascontiguousarray(array).reshape(-1).view(np.uint8)).hexdigest()


def path_of(name):
    return os.path.join(cache_dir, f"{name}.npy")


def store(name, tokens, seed):
    """The benchmark's write: returns (array digest, file size)."""
    array = make_entry(tokens, seed)
    want = digest(array)
    with open(path_of(name), "wb") as f:
        np.save(f, array, allow_pickle=False)
        del array  # the file holds it now: spare the memory
        f.flush()
        os.fsync(f.fileno())
        size = f.tell()
    return want, size


def load(name):
    """The benchmark's read: exists, open + posix_fadvise(DONTNEED) + close,
    np.load, np.array. Returns the array's digest."""
    path = path_of(name)
    if not os.path.exists(path):
        fail(f"{path} does not exist")
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    data = np.load(path, allow_pickle=False)
    data = np.array(data)
    if data.shape[3:] != (KV_HEADS, HEAD_DIM) or data.dtype != np.float16:
        fail(f"{path} loads as {data.shape} {data.dtype}")
    return digest(data)


def check_entry(name, tokens, seed):
    want, size = store(name, tokens, seed)
    st = os.stat(path_of(name))
    if st.st_size != size:
        fail(f"{name}: os.stat gives {st.st_size} bytes, {size} were written")
    got = load(name)
    if got != want:
        fail(f"{name}: read back digest {got}, written {want}")
    return want, size


def outside_keys():
    """memkv ls KEY_DIR/, run without the shim."""
    out = subprocess.run([memkv, "ls", key_dir + "/"], env=plain_env, check=True, capture_output=True, text=True)
    return sorted(k for k in out.stdout.split() if k != key_dir + "/")  # not the directory's marker


def outside_digest(name):
    """The array digest and value size of KEY_DIR/name.npy as memkv get streams
    it, without the shim: the .npy header is skipped, the rest hashed."""
    proc = subprocess.Popen([memkv, "get", f"{key_dir}/{name}.npy", "-o", "-"], env=plain_env,
                            stdout=subprocess.PIPE)
    head = proc.stdout.read(10)
    if head[:6] != b"\x93NUMPY":
        proc.kill()
        proc.wait()
        fail(f"{name}: memkv get gives no .npy header: {head!r}")
        return None, 0
    if head[6] == 1:
        header_len = int.from_bytes(head[8:10], "little")
        rest = header_len
    else:
        header_len = int.from_bytes(head[8:10] + proc.stdout.read(2), "little")
        rest = header_len
        head += b"xx"
    proc.stdout.read(rest)
    sha = hashlib.sha1()
    size = len(head) + rest
    while chunk := proc.stdout.read(16 * MIB):
        sha.update(chunk)
        size += len(chunk)
    if proc.wait() != 0:
        fail(f"{name}: memkv get exited {proc.returncode}")
    return sha.hexdigest(), size


def check_outside(entries):
    keys = outside_keys()
    want_keys = sorted(f"{key_dir}/{name}.npy" for name in entries)
    if keys != want_keys:
        fail(f"the server holds {keys}, not {want_keys}")
    for name, (want, size) in sorted(entries.items()):
        got, got_size = outside_digest(name)
        if (got, got_size) != (want, size):
            fail(f"{name}: the server's value has digest {got} and {got_size} bytes, not {want} and {size}")


def main():
    started = time.monotonic()
    os.makedirs(cache_dir, exist_ok=True)
    # The benchmark empties its directory of .npy files first.
    for entry in glob.glob(os.path.join(cache_dir, "*.npy")):
        os.unlink(entry)
    before = shim_stats()

    # 1. Four threads at once, entries of 1 to 48 MiB, and a 768 MiB one (over
    #    the 256 MiB the shim once capped values at) among them.
    small_tokens = [8, 24, 64, 128, 200, 384]  # 1, 3, 8, 16, 25, 48 MiB
    plan = {t: [(f"u{t}_turn_{i}", tokens, 100 * t + i) for i, tokens in enumerate(small_tokens)] for t in range(4)}
    plan[0].insert(1, ("u0_rag_768m", 6144, 7))
    entries = {}

    def worker(t):
        try:
            for name, tokens, seed in plan[t]:
                result = check_entry(name, tokens, seed)
                with errors_lock:
                    entries[name] = result
        except Exception as e:  # noqa: BLE001 - any failure is the test's
            fail(f"thread {t}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(cache_dir, "*.npy")))
    if names != sorted(entries):
        fail(f"glob lists {names}, not {sorted(entries)}")
    check_outside(entries)
    os.unlink(path_of("u0_rag_768m"))
    del entries["u0_rag_768m"]
    log(f"{sum(len(p) for p in plan.values())} entries of 1 MiB to 768 MiB from 4 threads: ok "
        f"({time.monotonic() - started:.0f} s)")

    # 2. One entry of 3 GiB, alone (past 2 GiB: no 32-bit size anywhere).
    big_started = time.monotonic()
    big = {"u9_long_context": check_entry("u9_long_context", 24576, 9)}
    check_outside({**entries, **big})
    os.unlink(path_of("u9_long_context"))
    if os.path.exists(path_of("u9_long_context")):
        fail("the 3 GiB entry exists after unlink")
    log(f"a 3 GiB entry: ok ({time.monotonic() - big_started:.0f} s)")

    # 3. The benchmark's clear(): unlink every .npy that glob finds.
    for entry in glob.glob(os.path.join(cache_dir, "*.npy")):
        os.unlink(entry)
    if glob.glob(os.path.join(cache_dir, "*.npy")):
        fail("glob still lists entries after they were unlinked")
    if outside_keys():
        fail(f"the server still holds {outside_keys()} after unlink")

    after = shim_stats()
    put_errors = after.put_errors - before.put_errors
    get_errors = after.get_errors - before.get_errors
    puts = after.puts - before.puts
    if put_errors or get_errors or after.put_errors_unreported:
        fail(f"the shim counted {put_errors} failed puts and {get_errors} failed gets")
    if puts < 26:
        fail(f"the shim counted {puts} puts for 26 entries")
    log(f"shim counters: {puts} puts ({(after.put_bytes - before.put_bytes) / MIB:.0f} MiB), "
        f"{after.gets - before.gets} gets ({(after.get_bytes - before.get_bytes) / MIB:.0f} MiB), 0 errors")
    if errors:
        sys.exit(1)
    log(f"ok ({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()

"""Run under libmemkv_preload.so: what MLPerf Storage's KV-cache benchmark
does per entry, in Python, with its exact calls.

Usage: mlperf_entries.py KV_DIR REAL_DIR. Leaves KV_DIR/py-keep.bin and
REAL_DIR/py-keep.bin (the same bytes) for the script to check against
MemKV and the filesystem.
"""
import errno
import os
import sys
import threading
from pathlib import Path


def fail(message):
    print(f"mlperf_entries.py: FAIL {message}", file=sys.stderr)
    sys.exit(1)


def payload(i, size):
    return bytes((j * 131 + i * 7) & 0xFF for j in range(256)) * (size // 256) + bytes(size % 256)


def write_entry(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def main():
    kv_dir, real_dir = Path(sys.argv[1]), Path(sys.argv[2])
    entries = {}
    for i in range(5):
        path = kv_dir / f"py_layer{i}.bin"
        data = payload(i, (2 << 20) + i)
        write_entry(path, data)
        entries[path] = data
    for path, data in entries.items():
        if not path.exists():
            fail(f"{path} does not exist after writing it")
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        if path.read_bytes() != data:
            fail(f"{path} read back differs")
        if os.stat(path).st_size != len(data):
            fail(f"{path} st_size {os.stat(path).st_size} != {len(data)}")
    found = sorted(p.name for p in kv_dir.glob("py_*.bin"))
    if found != sorted(p.name for p in entries):
        fail(f"glob found {found}")
    for path in entries:
        path.unlink()
        if path.exists():
            fail(f"{path} exists after unlink")
    try:
        (kv_dir / "py-missing.bin").read_bytes()
        fail("reading a missing entry succeeded")
    except FileNotFoundError:
        pass
    try:
        os.unlink(kv_dir / "py-missing.bin")
        fail("unlinking a missing entry succeeded")
    except OSError as e:
        if e.errno != errno.ENOENT:
            fail(f"unlink of a miss: {e}")

    errors = []

    def worker(t):
        for r in range(8):
            p = kv_dir / "py-threads" / f"t{t}-{r}.bin"
            d = payload(t * 10 + r, 50000 + r)
            write_entry(p, d)
            if p.read_bytes() != d:
                errors.append(str(p))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail(f"threads read back wrong bytes: {errors}")
    if len(list((kv_dir / "py-threads").glob("*.bin"))) != 48:
        fail("py-threads does not list 48 entries")

    keep = payload(77, (3 << 20) + 5)
    write_entry(kv_dir / "py-keep.bin", keep)
    write_entry(real_dir / "py-keep.bin", keep)
    print("mlperf_entries.py: ok")


if __name__ == "__main__":
    main()

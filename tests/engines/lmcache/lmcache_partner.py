"""What the LMCache partner tests share: MemKV servers on loopback (one per
test module, one a test may freeze, stop and restart), polling against a
deadline, and chunks of random KV from LMCache's allocator. Imported by the
test modules of tests/engines/lmcache (its conftest.py puts this folder on
sys.path and makes the servers its fixtures), which run on each LMCache
release the partners pin."""

import os
import signal
import time

import pytest
import torch

import memkv.testing

# Small blocks: a server of 2 MiB blocks holds only memory / 2 MiB values, and
# these tests store many small chunks (and one of 64 MiB).
SERVER_MEMORY, BLOCK_SIZE = "256 MiB", "64 KiB"


def start_server(**options):
    return memkv.testing.LocalServer(memory=SERVER_MEMORY, block_size=BLOCK_SIZE, workers=2, **options).start()


def wait_for(condition, timeout=10.0, what="the condition"):
    """The first truthy answer of condition(), polled against a deadline."""
    deadline = time.monotonic() + timeout
    while True:
        answer = condition()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not hold within {timeout} s")
        time.sleep(0.002)


@pytest.fixture(scope="module")
def shared_server():
    """One server for the tests of a module that leave it running (each in its own namespace)."""
    s = start_server()
    yield s
    assert s.stop() == 0, s.stderr()


@pytest.fixture
def own_server():
    """A server of this test alone, which the test may stop and restart on the same port:
    {"server": the running one, "restart": a function starting it again (returns it)}."""
    holder = {"server": start_server(extra_args=["--port", str(memkv.testing.restartable_port())])}

    def restart():
        old = holder["server"]
        port = old.address.rsplit(":", 1)[1]
        holder["server"] = start_server(auth_key=old.auth_key, extra_args=["--port", port])
        assert holder["server"].address == old.address
        return holder["server"]

    holder["restart"] = restart
    yield holder
    holder["server"].stop()


class frozen:
    """The server process stopped (SIGSTOP) for the block: connections stay open, nothing answers."""

    def __init__(self, server):
        self.pid = server._process.pid

    def __enter__(self):
        os.kill(self.pid, signal.SIGSTOP)
        # The signal is delivered asynchronously: wait until every thread is stopped.
        wait_for(lambda: all(self._state(t) in "Tt" for t in os.listdir(f"/proc/{self.pid}/task")),
                 what="the server's stop")
        return self

    def _state(self, tid):
        try:
            with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:  # a thread that just exited
            return "T"

    def __exit__(self, *exc):
        os.kill(self.pid, signal.SIGCONT)


def chunks(manager, count, seed, dtype=torch.bfloat16):
    """`count` full chunks of random KV, allocated by the StorageManager's
    allocator (LMCache's; the caller holds each once)."""
    gen = torch.Generator().manual_seed(seed)
    shape = manager.metadata.get_shapes()[0]
    objs = manager.batched_allocate(shape, dtype, count)
    for obj in objs:
        obj.tensor.copy_(torch.randn(tuple(shape), generator=gen).to(dtype))
    return objs

"""Fixtures: real memkv servers on loopback (memkv.testing.LocalServer).

The binary comes from MEMKV_BINARY (set by ctest), else build/memkv of this
checkout; the package from PYTHONPATH (ctest sets build/python), else this
checkout's build/python.
"""

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
try:
    import memkv.testing
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "build", "python"))
    import memkv.testing

# Room for the 256 MiB value of test_zero_copy next to the other tests' keys,
# in a server pool well under 1 GiB.
SERVER_MEMORY = "512 MiB"


def memkv_binary() -> str:
    return os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv")


def start_server(auth_key=None, memory_settings=None) -> "memkv.testing.LocalServer":
    return memkv.testing.LocalServer(memkv_binary(), memory=SERVER_MEMORY, workers=2, auth_key=auth_key,
                                     memory_settings=memory_settings).start()


@pytest.fixture(scope="session")
def server():
    """One server for the whole session."""
    s = start_server()
    yield s
    assert s.stop() == 0, s.stderr()


@pytest.fixture(scope="module")
def two_servers():
    """Two servers, for batches that fan out."""
    first = start_server()
    servers = [first, start_server(first.auth_key)]  # one client holds one key
    yield servers
    for s in servers:
        s.stop()


@pytest.fixture
def client(server):
    """A TCP client of `server`, closed after the test."""
    with server.client(timeout_ms=10000) as c:
        yield c


@pytest.fixture
def key(request):
    """A key unique to the test."""
    return "py/" + request.node.nodeid

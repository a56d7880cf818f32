"""memkv.adapters.lmcache where no LMCache is needed, against real memkv servers.

The module imports without LMCache, and MemKVL2Connector's own contract
holds when it is built from keywords directly: its settings and their
errors, every client option, its completion fd and drain_completions,
buffers it cannot use, a closed connector, and the report of a store a busy
server shed. Keys here are plain strings and buffers numpy arrays; nothing
stands in for LMCache. Everything LMCache drives (its key strings, ObjectKeys
and CacheEngineKeys, MemoryObjs, configuration, metadata, StorageManager,
plugin launcher and L2 adapter registry) is tested against LMCache's released
packages in tests/engines/lmcache (and, for the previous minor release,
tests/engines/lmcache_prev).
"""

import logging
import os
import select
import subprocess
import sys
import time

import numpy as np
import pytest

import memkv
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names
from memkv.adapters import lmcache as lm
from shedding_client import SheddingClient

MODULE = "memkv.adapters.lmcache"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def params(server, **extra):
    out = {"servers": [server.address], "auth_key": server.auth_key, "transport": "tcp", "timeout_ms": 5000}
    out.update(extra)
    return out


def wait(connector, fids, timeout_s=10.0):
    """Polls the completion fd until every future id completed; [(ok, error, bools)] in fids' order."""
    want, got = list(fids), {}
    poller = select.poll()
    poller.register(connector.event_fd(), select.POLLIN)
    deadline = time.monotonic() + timeout_s
    while any(f not in got for f in want):
        left = deadline - time.monotonic()
        assert left > 0, f"no completion for {[f for f in want if f not in got]} within {timeout_s} s"
        if not poller.poll(left * 1000):
            continue
        for fid, ok, error, bools in connector.drain_completions():
            assert isinstance(fid, int) and isinstance(ok, bool) and isinstance(error, str)
            assert fid not in got, f"future {fid} completed twice"
            got[fid] = (ok, error, bools)
    return [got[f] for f in want]


def one(connector, fid, timeout_s=10.0):
    return wait(connector, [fid], timeout_s)[0]


@pytest.fixture
def connectors():
    """Builds MemKVL2Connectors from keywords (as LMCache's native_plugin factory calls the class) and
    closes them after the test."""
    made = []

    def make(**adapter_params):
        made.append(lm.MemKVL2Connector(**adapter_params))
        return made[-1]

    yield make
    for connector in made:
        connector.close()


def test_module_imports_without_lmcache():
    """Without LMCache installed the module imports, HAVE_LMCACHE is False, nothing imports lmcache, and
    the storage plugin derives from the module's own stand-in base."""
    code = (f"import sys, {MODULE} as m; assert not m.HAVE_LMCACHE; assert 'lmcache' not in sys.modules; "
            "b = m.MemKVStorageBackend.__mro__[1]; "
            "assert b.__name__ == '_PluginBase' and b.__module__.startswith('memkv.adapters.'); print('ok')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"),
                                                                  os.path.join(REPO, "build", "python")) if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_l2_completion_fd_is_readable_only_while_completions_wait(server, connectors):
    """The connector's completion fd: not readable while nothing completed, readable once a submission
    completed, reset by drain_completions; an empty batch completes too."""
    connector = connectors(**params(server, async_threads=2, namespace="l2-fd"))
    fd = connector.event_fd()
    assert isinstance(fd, int) and fd >= 0
    assert connector.drain_completions() == []
    assert not select.select([fd], [], [], 0)[0], "nothing completed: the fd must not be readable"
    fid = connector.submit_batch_exists(["absent"])
    assert isinstance(fid, int)
    assert select.select([fd], [], [], 10)[0], "a completion makes the fd readable"
    assert one(connector, fid) == (True, "", [False])
    assert not select.select([fd], [], [], 0)[0], "drain_completions must reset the fd"
    assert one(connector, connector.submit_batch_exists([])) == (True, "", [])


def test_l2_an_unusable_buffer_fails_its_own_key_only(server, connectors):
    """A strided buffer, a read-only one for a load, and keys and buffers of different counts: the
    submission completes not ok, naming the problem, with only the keys of unusable buffers False;
    nothing raises."""
    connector = connectors(**params(server, namespace="l2-buffers"))
    values = np.full((2, 8192), 9, dtype=np.uint8)
    assert one(connector, connector.submit_batch_set(["a", "b"], list(values))) == (True, "", [True, True])
    strided = np.zeros(16384, dtype=np.uint8)[::2]
    out = np.zeros(8192, dtype=np.uint8)
    ok, error, bools = one(connector, connector.submit_batch_get(["a", "b"], [strided, out]))
    assert not ok and bools == [False, True] and "C-contiguous" in error
    assert (out == 9).all()
    ok, error, bools = one(connector, connector.submit_batch_get(["a"], [bytes(8192)]))
    assert not ok and bools == [False] and "read-only" in error
    ok, error, bools = one(connector, connector.submit_batch_set(["a", "b", "c"], [values[0]]))
    assert not ok and bools == [False] * 3 and "3 keys but 1 memoryviews" in error


def test_l2_close_is_idempotent_and_later_submits_fail_quietly(server):
    """close() twice is fine; a submission after it completes at once as a failure, without raising."""
    connector = lm.MemKVL2Connector(**params(server, namespace="l2-close"))
    connector.close()
    connector.close()
    fid = connector.submit_batch_exists(["k"])
    assert connector.drain_completions() == [(fid, False, "memkv lmcache: the connector is closed", [False])]


def test_l2_settings_come_from_the_environment(server, connectors, monkeypatch):
    """With no adapter_params, the settings come from the MEMKV_* variables."""
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_TRANSPORT", "tcp")
    monkeypatch.setenv("MEMKV_NAMESPACE", "from-env")
    connector = connectors()
    assert connector.namespace == "from-env"
    assert one(connector, connector.submit_batch_set(["e"], [np.ones(64, dtype=np.uint8)]))[0]
    assert connector.key_of("e") == b"from-env/e"


@pytest.mark.parametrize("bad, named", [
    ({"timeout_ms": "fast"}, "'timeout_ms' in adapter_params of --l2-adapter (native_plugin): 'fast' is not a non-negative integer"),
    ({"io_threads": 0}, "'io_threads' in adapter_params"),
    ({"transport": "udp"}, "'transport' in adapter_params of --l2-adapter (native_plugin): 'udp' is not a transport; allowed: auto, tcp, rdma"),
    ({"server": "x:1"}, "unknown setting(s) 'server' in adapter_params"),
    ({"auth_key": "abc"}, "'auth_key' in adapter_params of --l2-adapter (native_plugin): a key of 3 characters; allowed: exactly 64 hex"),
])
def test_l2_bad_setting_is_a_loud_config_error(server, caplog, capsys, bad, named):
    """A wrong setting is a ConfigError (a memkv.InvalidArgument and a ValueError) naming it, logged
    CRITICAL and written to stderr."""
    with caplog.at_level(logging.CRITICAL, logger="memkv.adapters"), pytest.raises(lm.ConfigError) as e:
        lm.MemKVL2Connector(**{**params(server), **bad})
    assert named in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, memkv.InvalidArgument)
    assert any(r.levelno == logging.CRITICAL and str(e.value) in r.getMessage() for r in caplog.records)
    assert str(e.value) in capsys.readouterr().err


def test_l2_without_servers_names_the_setting(monkeypatch, capsys):
    """No servers in adapter_params nor MEMKV_SERVERS: the error says where to set them."""
    monkeypatch.delenv("MEMKV_SERVERS", raising=False)
    with pytest.raises(lm.ConfigError, match="no servers: set 'servers' in adapter_params .* or MEMKV_SERVERS"):
        lm.MemKVL2Connector(auth_key="0" * 64)
    assert "no servers" in capsys.readouterr().err


def test_io_threads_is_deprecated_and_taken_as_async_threads(server, connectors, caplog):
    """io_threads (the driver threads before the adapter used the client's asynchronous queue only):
    still accepted, with a DeprecationWarning and a WARNING naming async_threads; its value becomes
    async_threads unless that is set."""
    with caplog.at_level(logging.WARNING, logger="memkv.adapters"), pytest.warns(DeprecationWarning,
                                                                                 match="'io_threads'.*async_threads"):
        connector = connectors(**params(server, io_threads=3))
    assert connector._core.client.options()["async_threads"] == "3"
    assert any("deprecated" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    with pytest.warns(DeprecationWarning, match="ignored"):
        connector = connectors(**params(server, io_threads=3, async_threads=5))
    assert connector._core.client.options()["async_threads"] == "5"
    assert one(connector, connector.submit_batch_exists(["x"])) == (True, "", [False])


def _build_l2(settings):
    connector = lm.MemKVL2Connector(**settings)
    return connector._core.client, connector.close


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(server, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in adapter_params or by its MEMKV_* variable,
    is the client's."""
    base = {"servers": [server.address], "auth_key": server.auth_key}
    check_option_reaches_client(_build_l2, base, name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(server, monkeypatch, capsys, name, source):
    """A bad value of each client option is refused, naming the option and where it came from."""
    base = {"servers": [server.address], "auth_key": server.auth_key}
    message = check_bad_option_is_named(lambda settings: lm.MemKVL2Connector(**settings), lm.ConfigError, base,
                                        name, source, monkeypatch)
    assert message.startswith("memkv lmcache adapter: ") and message in capsys.readouterr().err


def test_l2_a_set_says_how_many_keys_a_busy_server_shed(server, connectors, caplog):
    """Keys 1 and 3 of four shed by an overloaded server (Busy; a SheddingClient in place of the
    connector's client): the set completes not ok with exactly those keys False and says they were shed;
    nothing counts as an error, the log line is INFO, the stored keys load."""
    connector = connectors(**params(server, namespace="l2-busy"))
    keys = [f"busy-{i}" for i in range(4)]
    names = {connector.key_of(keys[i]) for i in (1, 3)}
    connector._core.client = SheddingClient(connector._core.client, lambda key: key in names)
    values = np.random.default_rng(1).integers(0, 256, (4, 8192), dtype=np.uint8)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memkv.adapters"):
        ok, error, bools = one(connector, connector.submit_batch_set(keys, list(values)))
    assert not ok and bools == [True, False, True, False]
    assert "2 of 4" in error and "2 shed by a busy server" in error
    stats = connector.get_stats()
    assert stats["stores_shed"] == 2 and stats["errors"] == 0 and stats["put_ok"] == 2
    assert [r.levelno for r in caplog.records if "busy" in r.getMessage()] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    out = np.zeros((2, 8192), dtype=np.uint8)
    assert one(connector, connector.submit_batch_get([keys[0], keys[2]], list(out))) == (True, "", [True, True])
    assert np.array_equal(out, values[[0, 2]])

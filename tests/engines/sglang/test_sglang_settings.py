"""The settings of memkv.adapters.sglang as SGLang hands them over (the
extra_config of its HiCacheStorageConfig, read by SGLang's
StorageBackendFactory), and the MEMKV_* environment: bad ones refused naming
the setting, required ones, the keys SGLang itself puts there, the shm
allocator, interface_v1, and every client option reaching the client."""

import pytest

from memkv.adapters._common import ConfigError

from sglang.srt.mem_cache.pool_host.common import ShmHostTensorAllocator

import memkv.adapters.sglang as sg  # noqa: E402 - after SGLang, whose HiCacheStorage it subclasses
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names

from sglang_partner import (attach, backup, detach, fill, host_indices, host_pool, load, query,
                            request, same, settings)


BAD_SETTINGS = [
    ("timeout_ms", "fast", "'timeout_ms'"),
    ("timeout_ms", 0, "'timeout_ms'"),
    ("servers", "no-port-here", "'servers'"),
    ("servers", [], "'servers'"),
    ("auth_key", "abc", "'auth_key'"),
    ("transport", "udp", "'transport'"),
    ("num_connections", -1, "'num_connections'"),
    ("namespace", "bad\nname", "'namespace'"),
    ("log_level", "loud", "'log_level'"),
    ("sever", "127.0.0.1:1", "'sever'"),
]


@pytest.mark.parametrize("setting, value, named", BAD_SETTINGS,
                         ids=[f"{s}={v!r}" for s, v, _ in BAD_SETTINGS])
def test_bad_settings_are_refused_naming_the_setting(server, setting, value, named):
    """SGLang's factory makes the backend from an extra config with one bad
    setting: the ConfigError (a ValueError) it passes on names the setting."""
    with pytest.raises(ConfigError) as e:
        attach(host_pool(pages=2), settings(server, **{setting: value}))
    assert named in str(e.value) and "sglang" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_required_settings_and_the_environment(server, monkeypatch):
    """servers and auth_key are required: from the extra config or MEMKV_*; a
    bad MEMKV_* value is refused naming the variable."""
    base = settings(server, servers=None, auth_key=None, timeout_ms=None)
    pool = host_pool(pages=4)
    with pytest.raises(ConfigError, match="no servers.*MEMKV_SERVERS"):
        attach(pool, base)
    monkeypatch.setenv("MEMKV_SERVERS", server.address)
    with pytest.raises(ConfigError, match="no auth_key.*MEMKV_AUTH_KEY"):
        attach(pool, base)
    monkeypatch.setenv("MEMKV_AUTH_KEY", server.auth_key)
    monkeypatch.setenv("MEMKV_NAMESPACE", "from-env")
    fill(pool, range(2), seed=10)
    ctl = attach(pool, base)
    assert ctl.storage_backend.namespace == "from-env"
    hashes = request(2).hashes
    assert backup(ctl, hashes, host_indices(range(2))) == 2 and ctl.storage_backend.batch_exists(hashes) == 2
    detach(ctl)
    monkeypatch.setenv("MEMKV_TIMEOUT_MS", "soon")
    with pytest.raises(ConfigError, match="MEMKV_TIMEOUT_MS"):
        attach(pool, base)


def test_keys_sglang_puts_in_the_extra_config_are_accepted(server):
    """Every key SGLang itself reads from the extra config (SGLANG_KEYS), and
    only those, is passed over by the backend's settings check."""
    extra = settings(server, prefetch_threshold=256, prefetch_timeout_base=2, prefetch_timeout_per_ki_token=0.1,
                     prefetch_timeout_max=30, hicache_storage_pass_prefix_keys=True, tp_lcm_size=4,
                     interface_v1="1", allocator="shm")
    assert set(extra) - {"servers", "auth_key", "transport", "timeout_ms"} == sg.SGLANG_KEYS
    ctl = attach(host_pool(pages=2), extra)
    assert ctl.storage_backend.zero_copy and ctl.page_set_func == ctl._page_set_zero_copy
    detach(ctl)


def test_allocator_shm_starts_and_stores(server):
    """SGLang's host pool in shared memory ("allocator": "shm", its
    ShmHostTensorAllocator), the key left in the extra config the backend
    gets: the backend starts, and pages go from one shm pool to another
    byte for byte."""
    pool, fresh = host_pool(pages=8, allocator="shm"), host_pool(pages=8, allocator="shm")
    assert isinstance(pool.allocator, ShmHostTensorAllocator)
    fill(pool, range(3), seed=11)
    writer = attach(pool, settings(server, allocator="shm"))
    req = request(3)
    assert backup(writer, req.hashes, host_indices(range(3))) == 3
    reader = attach(fresh, settings(server, allocator="shm"))
    assert query(reader, req) == 3
    assert load(reader, req.hashes, host_indices(range(4, 7))) == 3
    assert all(same(fresh, 4 + p, pool, p) for p in range(3))
    detach(writer, reader)


INTERFACE_V1 = [1, "1", True, "0", "false", 0, "", None]


@pytest.mark.parametrize("value", INTERFACE_V1, ids=[repr(v) if v is not None else "absent" for v in INTERFACE_V1])
def test_interface_v1_is_read_as_sglang_reads_it(server, value):
    """"interface_v1" as SGLang's attach_storage_backend reads it (Python
    truth of the value as given: "0" and "false" are non-empty strings, so
    zero copy): the backend's batch_exists looks up the keys of the path the
    controller then uses, so what the controller's backup stored its hit
    query finds, and its prefetch loads, byte for byte."""
    pool, fresh = host_pool(pages=8), host_pool(pages=8)
    fill(pool, range(3), seed=21)
    extra = settings(server, interface_v1=value)
    writer = attach(pool, extra)
    zero_copy = writer.page_set_func == writer._page_set_zero_copy
    assert zero_copy == bool(value) and writer.storage_backend.zero_copy == zero_copy
    req = request(3)
    assert backup(writer, req.hashes, host_indices(range(3))) == 3
    reader = attach(fresh, extra)
    assert query(reader, req) == 3
    assert load(reader, req.hashes, host_indices(range(4, 7))) == 3
    assert all(same(fresh, 4 + p, pool, p) for p in range(3))
    detach(writer, reader)


@pytest.mark.parametrize("typo", ["allocater", "Allocator", "interface_v2", "prefetch_treshold"])
def test_misspelt_sglang_keys_are_still_refused(server, typo):
    """A misspelt SGLang key is an unknown setting, refused by name."""
    with pytest.raises(ConfigError) as e:
        attach(host_pool(pages=2), settings(server, **{typo: "shm"}))
    assert f"unknown setting(s) '{typo}'" in str(e.value) and "sglang" in str(e.value)


# --------------------------------------------------------------------------- every client option

@pytest.fixture(scope="module")
def option_pool():
    return host_pool(pages=2)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(server, option_pool, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in the extra config
    SGLang's factory passes or by its MEMKV_* variable, is the client's."""
    def build(extra):
        storage = attach(option_pool, extra).storage_backend
        return storage._client, storage.close
    check_option_reaches_client(build, settings(server, transport=None, timeout_ms=None), name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(server, option_pool, monkeypatch, name, source):
    """A bad value of each client option, in the extra config or its MEMKV_*
    variable, stops SGLang's factory with a ConfigError naming where it came
    from."""
    message = check_bad_option_is_named(lambda extra: attach(option_pool, extra), ConfigError,
                                        settings(server, transport=None, timeout_ms=None), name, source, monkeypatch)
    assert message.startswith("memkv sglang adapter: ")

"""The adapters' shared cache identity and restore reporting
(memkv.adapters._common): engine fields merged with the identity_*
settings, long engine values cut, bad settings named, and the leading-run
rule of restores. The engines' own tests (tests/engines/*) check each
adapter's fields against the engine's configuration."""

import pytest

import memkv
from memkv.adapters._common import ConfigError, cache_identity, load_config, make_client, prefix_restores

pytestmark = pytest.mark.skipif(not hasattr(memkv, "CacheIdentity"), reason="this memkv has no CacheIdentity")

ENGINE_FIELDS = {"model": "org/m", "kv_dtype": "bfloat16", "layout": "NHD", "block_tokens": 16, "tp_rank": 1,
                 "tp_size": 2, "engine": "vllm", "engine_version": "0.32.0"}


def config(server, **settings):
    return load_config("vllm", {"servers": [server.address], "auth_key": server.auth_key, **settings}, "the test")


def test_settings_replace_fields_and_extend_extras(server, monkeypatch):
    monkeypatch.setenv("MEMKV_IDENTITY_REVISION", "abc")
    c = config(server, identity_kv_dtype="fp8", identity_extras="team=x,zone=b")
    ident = cache_identity(c, **ENGINE_FIELDS, extras={"zone": "a", "pp": "1"})
    assert (ident.model, ident.revision, ident.kv_dtype, ident.block_tokens, ident.tp_rank, ident.tp_size) == \
        ("org/m", "abc", "fp8", 16, 1, 2)
    assert ident.extras == {"team": "x", "zone": "b", "pp": "1"}
    assert not [k for k in c.client_options if k.startswith("identity_")], "taken out of the client options"
    with make_client(c, ident) as client:
        assert client.options()["identity_kv_dtype"] == "fp8"


def test_an_engine_that_names_nothing_is_unknown_and_long_values_are_cut(server):
    ident = cache_identity(config(server), model=None, layout="é" * 300, engine="sglang")
    assert ident.model == "unknown" and ident.engine == "sglang"
    assert len(ident.layout.encode()) <= 256 and "~" in ident.layout
    other = cache_identity(config(server), model=None, layout="é" * 299 + "x", engine="sglang")
    assert other.layout != ident.layout


@pytest.mark.parametrize("settings,named", [
    ({"identity_tp_rank": 3}, "'identity_tp_rank' in the test"),
    ({"identity_extras": ["novalue"]}, "'identity_extras' in the test"),
    ({"identity_block_tokens": "sixteen"}, "'identity_block_tokens' in the test"),
])
def test_a_bad_identity_setting_is_named(server, settings, named):
    with pytest.raises(ConfigError, match="allowed") as e:
        cache_identity(config(server, **settings), **ENGINE_FIELDS)
    assert named in str(e.value)


def test_restores_in_time_are_the_leading_run():
    assert prefix_restores([]) == (0, 0)
    assert prefix_restores([True, True, True]) == (3, 0)
    assert prefix_restores([True, False, True, True]) == (1, 2)
    assert prefix_restores([False, True]) == (0, 1)


def test_an_empty_identity_model_turns_the_identity_off(server):
    """identity_model "" is the client's "no identity": the adapter sends none
    (its keys are shared with clients that have none, as before identities)."""
    c = config(server, identity_model="", identity_kv_dtype="fp8")
    assert cache_identity(c, **ENGINE_FIELDS) is None
    assert not [k for k in c.client_options if k.startswith("identity_")]
    with make_client(c, None) as client:
        assert client.options()["identity_model"] == ""

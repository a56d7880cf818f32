"""memkv.client_options(): the client option table as Python sees it, and
every option reaching the client through memkv.Client's keywords, read back
with Client.options(). The engine adapters' walk over the same table is in
test_adapter_*.py."""

import pytest

import memkv
from client_option_samples import SAMPLES, as_keyword, bad_text, good_text, option, option_names

BASE = {"servers": ["127.0.0.1:9"], "auth_key": "a" * 64}
FIELDS = {"name": str, "env": str, "type": str, "default": str, "allowed": str, "doc": str, "is_list": bool,
          "required": bool}


def test_table_rows_are_complete_and_unique():
    rows = memkv.client_options()
    assert rows and isinstance(rows, list)
    for row in rows:
        assert {k: type(v) for k, v in row.items()} == FIELDS, row
        assert row["env"] == "MEMKV_" + row["name"].upper()
        assert row["doc"] and row["allowed"]
    names = [r["name"] for r in rows]
    assert len(set(names)) == len(names)
    assert [r["name"] for r in rows if r["required"]] == ["servers", "auth_key"]
    assert {"rdma_gid_index", "rdma_traffic_class", "rdma_service_level"} <= set(names)
    assert "client_options" in memkv.__all__


def test_every_option_has_a_sample():
    assert sorted(SAMPLES) == sorted(option_names())


def test_defaults_read_back_as_the_table_gives_them():
    with memkv.Client(**BASE) as c:
        got = c.options()
    assert list(got) == option_names()
    for row in memkv.client_options():
        if not row["required"]:
            assert got[row["name"]] == row["default"], row["name"]


@pytest.mark.parametrize("name", option_names())
def test_each_option_reaches_the_client_by_keyword(name):
    """As the keyword's type (a list, an int) and, where the keyword takes a
    str too (lists, "auto or integer"), as the text a MEMKV_* variable holds."""
    text = good_text(name)
    values = [as_keyword(name, text)]
    if option(name)["type"] != "integer" and values[0] != text:
        values.append(text)
    # The identity's fields make one identity only with a model (and a rank
    # below the world size): the others come with the samples of those two.
    identity = {} if not name.startswith("identity_") else {
        "identity_model": good_text("identity_model"), "identity_tp_size": int(good_text("identity_tp_size"))}
    for value in values:
        with memkv.Client(**{**BASE, **identity, name: value}) as c:
            assert c.options()[name] == text, (name, value)


@pytest.mark.parametrize("name", option_names())
def test_each_bad_value_is_refused_naming_the_option(name):
    value = as_keyword(name, bad_text(name))
    wrong_type = option(name)["type"] == "integer" and isinstance(value, str)  # "soon"
    with pytest.raises(TypeError if wrong_type else memkv.InvalidArgument) as e:
        memkv.Client(**{**BASE, name: value})
    assert e.value.option == name
    assert f"{name} must be an int" in str(e.value) if wrong_type else f"{name}: " in str(e.value)
    assert wrong_type or "allowed: " in str(e.value)


def test_wrong_type_names_the_option():
    with pytest.raises(TypeError) as e:
        memkv.Client(**BASE, timeout_ms="5")
    assert e.value.option == "timeout_ms"
    with pytest.raises(TypeError) as e:
        memkv.Client(**BASE, nope=1)
    assert e.value.option == "nope"


def test_options_after_close_and_from_env(monkeypatch):
    c = memkv.Client(**BASE, rdma_mtu=2048)
    c.close()
    assert c.options()["rdma_mtu"] == "2048"
    monkeypatch.setenv("MEMKV_SERVERS", "127.0.0.1:9")
    monkeypatch.setenv("MEMKV_AUTH_KEY", "a" * 64)
    with memkv.Client.from_env() as c:
        with pytest.raises(memkv.FailedPrecondition, match="from_env"):
            c.options()

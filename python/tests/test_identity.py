"""memkv.CacheIdentity and the client's identity against a real server:
the Python tag is the C++ library's, deployments that differ in one field
never hit each other's blocks, restores reported reach the server."""

import json
import urllib.request

import pytest

import memkv
import memkv.testing
from conftest import memkv_binary


def base(**overrides):
    fields = dict(model="meta-llama/Llama-3.1-8B", revision="0e9e39f", kv_dtype="bfloat16", layout="NHD",
                  block_tokens=16, tp_rank=0, tp_size=2, engine="vllm", engine_version="0.11.0")
    fields.update(overrides)
    return memkv.CacheIdentity(**fields)


def test_tag_is_the_libraries_and_every_field_changes_it(server):
    ident = base(extras={"lora": "a", "pp_rank": "0"})
    with server.client(identity=ident) as c:
        assert c.identity_tag == ident.tag  # computed by libmemkv from the identity_* options
        assert c.options()["identity_extras"] == "lora=a,pp_rank=0"
    variants = [base(model="other"), base(revision="1"), base(kv_dtype="float16"), base(layout="HND"),
                base(block_tokens=32), base(tp_rank=1), base(tp_size=4), base(engine="sglang"),
                base(engine_version="1"), base(extras={"lora": "b"})]
    assert len({v.tag for v in variants} | {base().tag}) == len(variants) + 1
    assert base(extras={"a": "1", "b": "2"}) == base(extras={"b": "2", "a": "1"})
    with pytest.raises(ValueError, match="tp_rank 2 with tp_size 2"):
        base(tp_rank=2)
    with pytest.raises(TypeError, match="identity must be a memkv.CacheIdentity"):
        server.client(identity="llama")


def test_deployments_differing_in_one_field_never_hit_each_other(server):
    deployments = {"base": base(), "fp8": base(kv_dtype="float8_e4m3fn"), "block32": base(block_tokens=32),
                   "rank1": base(tp_rank=1)}
    clients = {name: server.client(identity=ident) for name, ident in deployments.items()}
    try:
        key = "py-identity/block-0"
        clients["base"].put(key, b"base")
        for name in ("fp8", "block32", "rank1"):
            assert clients[name].get(key) is None, name
            assert not clients[name].exists(key), name
            assert clients[name].match_prefix([key]) == 0, name
        for name, c in clients.items():
            c.put(key, name.encode())
        for name, c in clients.items():
            assert c.get(key) == name.encode()
    finally:
        for c in clients.values():
            c.close()


def test_restores_reported_reach_the_server():
    port = memkv.testing.restartable_port()  # its admin endpoint is port + 1
    server = memkv.testing.LocalServer(memkv_binary(), memory="64 MiB", workers=2, extra_args=["--port", str(port)])
    server.start()
    try:
        _report_and_read_status(server, port + 1)
    finally:
        assert server.stop() == 0, server.stderr()


def _report_and_read_status(server, admin_port):
    ident = base(engine="py-report-test")
    with server.client(identity=ident) as c:
        c.put("r/0", b"x")
        assert c.get("r/0") == b"x"
        c.report_restores(3, late=1)
        stats = c.stats()
        assert (stats["lookups"], stats["found"], stats["fetched"]) == (1, 1, 1)
        assert (stats["fetched_in_time"], stats["fetched_late"]) == (3, 1)
    with urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/v1/status", timeout=10) as r:
        status = json.load(r)
    rows = [row for row in status["identities"] if row["identity"] == ident.tag]
    assert len(rows) == 1, status["identities"]
    row = rows[0]
    assert row["engine"] == "py-report-test"
    assert (row["lookups"], row["found"], row["fetched"]) == (1, 1, 1)
    assert (row["fetched_in_time"], row["fetched_late"]) == (3, 1)

"""A good non-default value and a bad value for every client option
(memkv.client_options()), as src/config/client_option_samples.h has them for
the C++ integrations, so the Python tests walk the whole table: the
memkv.Client keywords (test_client_options.py) and each engine adapter's
settings (test_adapter_*.py). A new option without a sample here fails
test_every_option_has_a_sample.

Each good value, given as text or as the type the keyword takes, reads back
from Client.options() as `expected_text`.
"""

import socket
from typing import Any, Dict, List, Tuple

import memkv

# name -> (good text, bad text). Good values never make Client creation
# contact a server or a NIC; prometheus_bind gets a free port at run time.
SAMPLES: Dict[str, Tuple[str, str]] = {
    "servers": ("10.0.0.1:9900,10.0.0.2:9901", "nohost"),
    "auth_key": ("b" * 64, "abc"),
    "transport": ("tcp", "udp"),
    "num_connections": ("8", "0"),
    "timeout_ms": ("250", "soon"),
    "connect_timeout_ms": ("100", "0"),
    "discovery_interval_ms": ("500", "3600001"),
    "dns_server": ("127.0.0.1:5353", "dns.example:53"),
    "resolve_timeout_ms": ("500", "0"),
    "rebalance_grace_ms": ("60000", "soon"),
    "async_threads": ("2", "65"),
    "store_shed_latency_ms": ("250", "3600001"),
    "store_shed_inflight": ("8", "65537"),
    "rdma_devices": ("mlx5_0,mlx5_1", "mlx5_0,mlx5_0"),
    "rdma_mtu": ("1024", "1000"),
    "rdma_retry_count": ("3", "8"),
    "rdma_timeout": ("20", "32"),
    "rdma_qps": ("4", "17"),
    "rdma_gid_index": ("3", "256"),
    "rdma_traffic_class": ("104", "30"),
    "rdma_service_level": ("3", "16"),
    "prometheus_bind": ("127.0.0.1:{port}", "nohost"),
    "log_level": ("debug", "loud"),
    "access_log_path": ("/dev/null", "relative/access.jsonl"),
    "access_log_sample": ("0.5", "1.5"),
    "access_log_max_lines_per_sec": ("50", "0"),
    "identity_model": ("meta-llama/Llama-3.1-8B", "m" * 257),
    "identity_revision": ("0e9e39f", "r" * 257),
    "identity_kv_dtype": ("bfloat16", "d" * 257),
    "identity_layout": ("NHD", "l" * 257),
    "identity_block_tokens": ("16", "sixteen"),
    "identity_tp_rank": ("1", "65536"),
    "identity_tp_size": ("4", "0"),
    "identity_engine": ("vllm", "e" * 257),
    "identity_engine_version": ("0.11.0", "v" * 257),
    "identity_extras": ("lora=a,pp_rank=0", "novalue"),
}


def option_names() -> List[str]:
    return [o["name"] for o in memkv.client_options()]


def option(name: str) -> Dict[str, Any]:
    return next(o for o in memkv.client_options() if o["name"] == name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def good_text(name: str) -> str:
    """The good sample as text (what a MEMKV_* variable holds)."""
    text = SAMPLES[name][0]
    return text.format(port=_free_port()) if "{port}" in text else text


def as_keyword(name: str, text: str) -> Any:
    """`text` as the type memkv.Client's keyword takes: a list for list
    options, an int for integer options, else the str."""
    info = option(name)
    if info["is_list"]:
        return [item.strip() for item in text.split(",")]
    if info["type"] in ("integer", "auto or integer") and text.isdigit():
        return int(text)
    if info["type"] == "number":
        return float(text)
    return text


def bad_text(name: str) -> str:
    return SAMPLES[name][1]


# ---- The engine adapters' walk over the table ----

SOURCES = ("config", "environment")

# Settings an adapter needs beside an option for its sample to make sense:
# an adapter's cache identity takes the TP size from the engine (1 in these
# tests), and a TP rank is only valid below it.
COMPANIONS: Dict[str, Dict[str, str]] = {"identity_tp_rank": {"identity_tp_size": "4"}}


def _given(base: Dict[str, Any], name: str, text: str, source: str, monkeypatch: Any) -> Dict[str, Any]:
    """`base` (the adapter's settings) with option `name` given `text`: as
    its keyword's type under `name` ("config"), or in its MEMKV_* variable
    with `name` left out ("environment")."""
    settings = {k: v for k, v in base.items() if k != name}
    for companion, companion_text in COMPANIONS.get(name, {}).items():
        settings[companion] = as_keyword(companion, companion_text)
    if source == "config":
        settings[name] = as_keyword(name, text)
    else:
        monkeypatch.setenv(option(name)["env"], text)
    return settings


def check_option_reaches_client(build: Any, base: Dict[str, Any], name: str, source: str, monkeypatch: Any) -> None:
    """build(settings) makes an adapter and returns (its memkv.Client, a
    closer); the client must hold the good sample of `name`."""
    text = good_text(name)
    client, close = build(_given(base, name, text, source, monkeypatch))
    try:
        assert client.options()[name] == text, (name, source)
    finally:
        close()


def check_bad_option_is_named(build: Any, error: Any, base: Dict[str, Any], name: str, source: str,
                              monkeypatch: Any) -> str:
    """build(settings) with the bad sample of `name` must raise `error`
    naming the engine config key or the variable, and what is allowed.
    Returns the message."""
    import pytest
    with pytest.raises(error) as e:
        build(_given(base, name, bad_text(name), source, monkeypatch))
    message = str(e.value)
    where = f"'{name}' in " if source == "config" else f"{option(name)['env']} (environment)"
    assert where in message and "allowed: " in message, message
    return message

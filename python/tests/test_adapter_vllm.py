"""memkv.adapters.vllm where vLLM is not installed: the module imports and
the tier runs on its local stand-ins for vLLM's classes, the package
declares the entry point vLLM loads, and every client option reaches the
tier's client (settings parsing needs no vLLM).

Everything that drives the tier (vLLM's TieringOffloadingSpec and
SecondaryTierFactory building it, its TieringOffloadingManager cascading,
scanning and promoting, its plugin loading, real memkv servers) runs against
vLLM's released packages in tests/engines/vllm/test_vllm_tier.py (ctest:
engine_vllm_test, and engine_vllm_prev_test for the previous release).
"""

import importlib.metadata
import os
import subprocess
import sys

import numpy as np
import pytest

import memkv.adapters.vllm as adapter
from client_option_samples import SOURCES, check_bad_option_is_named, check_option_reaches_client, option_names


def test_module_imports_and_runs_without_vllm(server):
    """Without vLLM the module imports on its local stand-ins, register()
    does nothing, and a tier built directly answers its first lookup RETRY
    (a probe queued) without warning about PYTHONHASHSEED (no vLLM block
    hashes to warn about)."""
    code = ("import logging, sys, numpy as np\n"
            "sys.modules['vllm'] = None  # as if vLLM were not installed\n"
            "records = []\n"
            "handler = logging.Handler(); handler.emit = records.append\n"
            "logging.getLogger('memkv.adapters').addHandler(handler)\n"
            "import memkv.adapters.vllm as a\n"
            "assert a.LookupResult is a._LocalLookupResult and a._VLLM_PROBLEM is None\n"
            "a.register()\n"
            "view = memoryview(np.zeros((2, 64), dtype=np.uint8))\n"
            f"t = a.MemKVTierManager(primary_kv_view=view, servers={server.address!r}, auth_key={server.auth_key!r})\n"
            "assert t.lookup(b'k' * 36) is a.LookupResult.RETRY\n"
            "t.shutdown()\n"
            "assert not [r for r in records if 'PYTHONHASHSEED' in r.getMessage()], records\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_the_package_declares_the_vllm_general_plugins_entry_point():
    """The memkv distribution's dist-info (build tree and python3-memkv
    alike) declares the vllm.general_plugins entry point that vLLM's
    load_general_plugins runs: memkv = memkv.adapters.vllm:register."""
    found = [ep for ep in importlib.metadata.entry_points(group="vllm.general_plugins") if ep.name == "memkv"]
    assert len(found) == 1, found
    assert found[0].value == "memkv.adapters.vllm:register"
    assert found[0].load() is adapter.register


# ------------------------------------------------------------------- every client option

def _tier_builder():
    view = memoryview(np.zeros((2, 64), dtype=np.uint8))
    return lambda settings: adapter.MemKVTierManager(primary_kv_view=view, tier_type="memkv", **settings)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_reaches_the_client(server, monkeypatch, name, source):
    """Each option of memkv.client_options(), by its name in the tier's config
    or by its MEMKV_* variable, is the client's."""
    make = _tier_builder()

    def build(settings):
        tier = make(settings)
        return tier._client, tier.shutdown
    base = {"servers": [server.address], "auth_key": server.auth_key}
    check_option_reaches_client(build, base, name, source, monkeypatch)


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name", option_names())
def test_every_client_option_refused_names_where_it_came_from(server, monkeypatch, name, source):
    """A bad value of each client option, in the tier's config or its
    MEMKV_* variable, is a ConfigError naming where it came from."""
    base = {"servers": [server.address], "auth_key": server.auth_key}
    message = check_bad_option_is_named(_tier_builder(), adapter.ConfigError, base, name, source, monkeypatch)
    assert message.startswith("memkv vllm adapter: ")

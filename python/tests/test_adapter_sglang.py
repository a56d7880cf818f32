"""memkv.adapters.sglang where SGLang is not installed: the module imports on
its local base class, and the helpers that make its keys are plain functions.

Everything that drives the backend (SGLang's storage backend factory, its
host KV pools, its cache controller's backup, query and prefetch paths, real
memkv servers) runs against SGLang's released package in
tests/engines/sglang/test_sglang_hicache.py (ctest: engine_sglang_test).
"""

import os
import subprocess
import sys

import memkv
import memkv.adapters.sglang as sg


def test_module_imports_without_sglang():
    """Without SGLang the module still imports, on a local base class."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(memkv.__file__)))
    code = ("import sys; sys.modules['sglang'] = None\n"
            "import memkv.adapters.sglang as m\n"
            "assert not m.SGLANG_AVAILABLE\n"
            "assert m.MemKVHiCacheStorage.__mro__[1].__module__ == 'memkv.adapters.sglang'\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=package_root)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_request_namespace_part_frames_its_fields():
    """The key part of a request namespace (extra key, cache salt) is a digest
    of the two as a JSON list, not of their concatenation; a call with
    neither (empty counts as absent) has none."""
    ns = sg.namespace_part
    assert ns({"extra_key": "a", "cache_salt": "bc"}) != ns({"extra_key": "ab", "cache_salt": "c"})
    assert ns({"extra_key": "t", "cache_salt": None}) != ns({"extra_key": None, "cache_salt": "t"})
    assert ns({"extra_key": "", "cache_salt": None}) == b"" and ns(None) == b"" and ns({}) == b""
    part = ns({"cache_salt": "tenant-a"})
    assert part.startswith(b"ns-") and part.endswith(b"/") and len(part) == 3 + 32 + 1
    assert sg.request_namespace({"cache_salt": "tenant-a", "other": 1}) == (None, "tenant-a")


def test_model_tag_and_page_hash_value():
    """A model name becomes one key part ('/' to '-', other characters outside
    [A-Za-z0-9._-] to '_', cut to 120 bytes with a hash of the whole name);
    a hex page hash is carried as the bytes it spells, any other as UTF-8."""
    assert sg.model_tag("org/model-a") == "org-model-a" and sg.model_tag(None) == "unknown-model"
    assert sg.model_tag("org/model a+b") == "org-model_a_b"
    long_a, long_b = sg.model_tag("m" * 300), sg.model_tag("m" * 299)
    assert len(long_a) == len(long_b) == 120 and long_a != long_b
    assert sg.page_hash_value("0a" * 32) == bytes.fromhex("0a" * 32)
    assert sg.page_hash_value("not-hex") == b"not-hex" and sg.page_hash_value(b"\x01") == b"\x01"

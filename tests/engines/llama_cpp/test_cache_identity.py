"""memkv.llama_cpp.cache_identity: the memkv.CacheIdentity of a Llama and
its PromptCache, made from llama-cpp-python's own objects (the model file
and its SHA-256, the context's KV types, size and batch, the block size),
and the restores a PromptCache reports (in time: llama.cpp loaded the
state; late: it refused it). One short prompt on SmolLM2-135M, against a
real memkv server."""

import os
import sys

import pytest

import memkv
import memkv.llama_cpp
import memkv.testing
from memkv.llama_cpp import _state

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(memkv, "CacheIdentity"), reason="this memkv has no CacheIdentity")

BLOCK = 512
PROMPT_TOKENS = 600  # one block, then the rest computed


@pytest.fixture(scope="module")
def server():
    s = memkv.testing.LocalServer(os.environ.get("MEMKV_BINARY") or os.path.join(engine.REPO, "build", "memkv"),
                                  memory="256 MiB", workers=2).start()
    yield s
    assert s.stop() == 0, s.stderr()


def test_identity_from_llama_cpp_keeps_kv_types_apart_and_restores_are_reported(server):
    import llama_cpp

    f16 = engine.make_llm(n_ctx=1024)
    f32 = engine.make_llm(n_ctx=1024, type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32)
    ident = memkv.llama_cpp.cache_identity(f16, BLOCK)
    assert ident.model == os.path.basename(engine.model_path())
    assert ident.revision == "sha256:" + memkv.llama_cpp.file_digest(engine.model_path())
    assert (ident.kv_dtype, ident.layout, ident.block_tokens, ident.tp_rank, ident.tp_size) == \
        ("f16", "n_ctx1024-n_batch512", BLOCK, 0, 1)
    assert ident.engine == "llama.cpp" and ident.engine_version == llama_cpp.__version__
    other = memkv.llama_cpp.cache_identity(f32, BLOCK)
    assert other.kv_dtype == "f32" and other.tag != ident.tag
    assert memkv.llama_cpp.cache_identity(f16, 2 * BLOCK).tag != ident.tag
    assert memkv.llama_cpp.cache_identity(f16, BLOCK, extras={"team": "x"}).extras["team"] == "x"

    common = {"servers": [server.address], "auth_key": server.auth_key, "timeout_ms": 20000}
    prompt = engine.prompt_tokens(f16, PROMPT_TOKENS)
    with memkv.Client(**common, identity=ident) as mine, memkv.Client(**common, identity=other) as theirs:
        cache = memkv.llama_cpp.PromptCache(mine, f16, block_tokens=BLOCK)
        assert cache.cache_identity == ident
        f16.set_cache(cache)
        first = engine.complete(f16, prompt, max_tokens=4)["tokens"]
        assert cache.stats()["saves"] == 1, cache.stats()
        f16.reset()
        assert engine.complete(f16, prompt, max_tokens=4)["tokens"] == first
        stats = cache.stats()
        assert stats["hits"] == 1 and (stats["restored_in_time"], stats["restored_late"]) == (1, 0), stats

        # The server keeps the identities apart, whatever the keys: a client
        # of the f32 context's identity does not find the f16 cache's block key.
        block_key = _state.block_key(cache.namespace, _state.chain(cache.identity_digest, prompt, BLOCK)[0])
        assert mine.exists(block_key) and not theirs.exists(block_key)
        theirs_cache = memkv.llama_cpp.PromptCache(theirs, f32, block_tokens=BLOCK)
        f32.set_cache(theirs_cache)
        engine.complete(f32, prompt, max_tokens=4)
        assert theirs_cache.stats()["hits"] == 0 and theirs_cache.stats()["misses"] == 1, theirs_cache.stats()

"""MemKV as llama-cpp-python's prompt cache: prefixes shared by every process
and host that uses the same servers (docs/engines/llama-cpp.md).

    import memkv, memkv.llama_cpp
    from llama_cpp import Llama

    llm = Llama(model_path="model.gguf", n_ctx=8192)
    client = memkv.Client(servers=[...], auth_key=KEY, identity=memkv.llama_cpp.cache_identity(llm))
    llm.set_cache(memkv.llama_cpp.PromptCache(client, llm))

`python -m memkv.llama_cpp.server` is llama-cpp-python's OpenAI-compatible
server with this cache in place of its RAM or disk cache.
"""

from ._cache import PromptCache, cache_identity
from ._state import RecordError, file_digest, identity_digest, identity_of

__all__ = ["PromptCache", "cache_identity", "RecordError", "file_digest", "identity_digest", "identity_of"]

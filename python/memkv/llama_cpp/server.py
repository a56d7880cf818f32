"""llama-cpp-python's OpenAI-compatible server with MemKV as its prompt cache.

    MEMKV_SERVERS=10.0.0.5:9900 MEMKV_AUTH_KEY=... \\
        python -m memkv.llama_cpp.server --model model.gguf --n_ctx 8192 --port 8000

Every option of `python -m llama_cpp.server` is taken as it is; the MemKV
client is configured from the environment (MEMKV_SERVERS, MEMKV_AUTH_KEY,
...; or MEMKV_CONFIG: memkv.Client.from_env). Each model the server loads
gets a memkv.llama_cpp.PromptCache in place of llama-cpp-python's RAM or disk
cache, and a client of its own made with the model's cache identity
(memkv.llama_cpp.cache_identity; MEMKV_IDENTITY_* replace its fields, except
with MEMKV_CONFIG, whose file then says the identity), so any number of these
servers, on any hosts, share prompt prefixes.
Unlike `python -m llama_cpp.server`, models load with `--logits_all false`
unless the command line says otherwise: with logits kept for every token a
stored state also carries them (4 bytes x vocabulary per token, about 200 KB
per token for a 49k vocabulary, where the KV cells of a small model take
20-30 KB), so restores move ten times the bytes. Pass `--logits_all true`
for requests that ask for logprobs.

Options of this launcher:

  --memkv-block-tokens N   tokens per cache block, a multiple of --n_batch (default: n_batch)
  --memkv-namespace NS     key prefix (default: one per model and context identity)

GET /memkv/stats answers the caches' counters as JSON.
"""

import argparse
import os
import sys
from typing import Any, Dict, List, Optional, Sequence

import memkv

from ..adapters._common import cache_identity as adapter_identity, load_config, make_client
from . import _state
from ._cache import PromptCache

def _own_arguments(argv: Sequence[str]):
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--memkv-block-tokens", type=int, default=None)
    parser.add_argument("--memkv-namespace", default=None)
    return parser.parse_known_args(list(argv))


def _client_for(llm: Any, block_tokens: Optional[int]) -> "memkv.Client":
    """A client of the environment's settings with the model's cache identity."""
    if os.environ.get("MEMKV_CONFIG") or not hasattr(memkv, "CacheIdentity"):
        return memkv.Client.from_env()
    config = load_config("llama.cpp", {}, "the environment")
    fields = _state.cache_identity_fields(llm, _state.identity_of(llm), block_tokens or int(llm.context_params.n_batch))
    return make_client(config, adapter_identity(config, **fields))


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if "-h" in args or "--help" in args:
        print(__doc__)
    ours, rest = _own_arguments(args)
    try:
        from llama_cpp.server import app as server_app
        from llama_cpp.server import model as server_model
        from llama_cpp.server.__main__ import main as llama_main
    except ImportError as e:
        sys.exit(f"memkv.llama_cpp.server: llama-cpp-python's server is not installed here ({e}); "
                 f"pip install 'llama-cpp-python[server]'")
    caches: List[PromptCache] = []
    load = server_model.LlamaProxy.load_llama_from_model_settings

    def load_with_memkv(settings: Any) -> Any:
        llm = load(settings)
        client = _client_for(llm, ours.memkv_block_tokens)
        cache = PromptCache(client, llm, block_tokens=ours.memkv_block_tokens, namespace=ours.memkv_namespace)
        llm.set_cache(cache)
        caches.append(cache)
        print(f"memkv.llama_cpp.server: prompt cache on {', '.join(s['name'] for s in client.servers())}, "
              f"namespace {cache.namespace}, {cache.block_tokens}-token blocks", file=sys.stderr, flush=True)
        return llm

    server_model.LlamaProxy.load_llama_from_model_settings = staticmethod(load_with_memkv)
    make_app = server_app.create_app

    def create_app(*a: Any, **kw: Any) -> Any:
        app = make_app(*a, **kw)

        @app.get("/memkv/stats")
        def memkv_stats() -> Dict[str, Any]:
            return {"caches": [{"namespace": c.namespace, **c.stats()} for c in caches]}

        return app

    sys.modules["llama_cpp.server.__main__"].create_app = create_app
    if not any(a == "--logits_all" or a.startswith("--logits_all=") for a in rest):
        rest += ["--logits_all", "false"]
    sys.argv = [sys.argv[0]] + rest
    llama_main()


if __name__ == "__main__":
    main()

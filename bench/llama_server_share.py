#!/usr/bin/env python3
"""Two OpenAI-compatible llama.cpp servers sharing prompts through one MemKV.

    PY=$(bash scripts/engine-venv.sh llama_cpp)/bin/python
    PYTHONPATH=build/python $PY bench/llama_server_share.py [--tokens 4096] [--rounds 3]

Starts a memkv server (memory mode) and two `python -m memkv.llama_cpp.server`
processes on it (SmolLM2-135M, the model of bench/engine_ttft.py). Each round
sends a new prompt of --tokens tokens (/v1/completions, one token, greedy)
to one server, which computes it and stores its state, then the same prompt
to the other, which has never seen it and restores it from MemKV; the
servers swap roles every round. Prints each request's time, the medians and
whether both answered the same text.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "engines", "llama_cpp"))
import engine  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=3500, help="prompt tokens (the servers' n_ctx is 4096)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-batch", type=int, default=64)
    parser.add_argument("--binary", default=os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv"))
    args = parser.parse_args()
    import memkv.testing

    llm = engine.make_llm(vocab_only=True)  # a tokenizer for the prompts
    work = tempfile.mkdtemp(prefix="memkv-share-")
    servers = []
    with memkv.testing.LocalServer(args.binary, memory="2 GiB", workers=2) as store:
        try:
            for i in range(2):
                port = memkv.testing.restartable_port()
                servers.append((engine.start_llama_server(store, port, os.path.join(work, f"server{i}.log"),
                                                          args.n_batch), port))
            computed, restored, same = [], [], True
            for r in range(args.rounds):
                tokens = engine.prompt_tokens(llm, args.tokens, offset_chars=r * 40000)
                text = llm.detokenize(tokens[1:]).decode(errors="ignore")  # the server adds BOS itself
                order = servers if r % 2 == 0 else servers[::-1]
                answers = []
                for i, (_, port) in enumerate(order):
                    started = time.perf_counter()
                    answer = engine.http("POST", f"http://127.0.0.1:{port}/v1/completions",
                                         {"prompt": text, "max_tokens": 1, "temperature": 0.0})
                    elapsed = time.perf_counter() - started
                    (computed if i == 0 else restored).append(elapsed)
                    answers.append(answer["choices"][0]["text"])
                    print(f"round {r + 1}: port {port} {'computed' if i == 0 else 'restored'} "
                          f"{args.tokens} tokens in {elapsed * 1000:.0f} ms", flush=True)
                same = same and answers[0] == answers[1]
            stats = [engine.http("GET", f"http://127.0.0.1:{port}/memkv/stats")["caches"][0] for _, port in servers]
        finally:
            for process, _ in servers:
                process.terminate()
                process.wait(30)
    c, rs = statistics.median(computed), statistics.median(restored)
    print(f"median: computed {c * 1000:.0f} ms, restored by the other server {rs * 1000:.0f} ms "
          f"({c / rs:.1f}x faster); same answers: {'yes' if same else 'NO'}")
    print(f"hits per server: {[s['hits'] for s in stats]}, misses: {[s['misses'] for s in stats]}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

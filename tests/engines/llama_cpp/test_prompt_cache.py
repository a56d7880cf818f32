"""memkv.llama_cpp.PromptCache with a real model (SmolLM2-135M on
llama-cpp-python, built from PyPI) and real memkv servers.

Every completion is greedy and compared token for token with the same prompt
computed from scratch. The references are computed once, by a context whose
cache lookups all missed (counted), and the states they leave are what the
other tests restore, so that the model computes each long prompt once.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import memkv
import memkv.llama_cpp
import memkv.testing
from memkv.llama_cpp import _state

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import engine  # noqa: E402

BLOCK = 512  # the context's n_batch
LONG_TOKENS = (2100, 2300, 2500)  # three prompts of 2,000+ tokens, from three places in the docs
SHORT_TOKENS = 700  # for the fault tests, each of which recomputes its prompt
SERVER_MEMORY = "1 GiB"  # a 2,500-token state is about 60 MB


def binary() -> str:
    return os.environ.get("MEMKV_BINARY") or os.path.join(engine.REPO, "build", "memkv")


def start_server(**kwargs) -> memkv.testing.LocalServer:
    return memkv.testing.LocalServer(binary(), memory=SERVER_MEMORY, workers=2, **kwargs).start()


def attach(llm, server, client=None, **kwargs):
    """A new cache on llm, its context emptied, as a process that just started has it."""
    llm.reset()
    cache = memkv.llama_cpp.PromptCache(client or server.client(timeout_ms=20000), llm, block_tokens=BLOCK,
                                        **kwargs)
    llm.set_cache(cache)
    return cache


@pytest.fixture(scope="module")
def server():
    """The server every reference state is stored on."""
    s = start_server()
    yield s
    assert s.stop() == 0, s.stderr()


@pytest.fixture(scope="module")
def llm():
    return engine.make_llm()


@pytest.fixture(scope="module")
def prompts(llm):
    """Three long prompts, then a short one."""
    out = [engine.prompt_tokens(llm, n, offset_chars=i * 40000) for i, n in enumerate(LONG_TOKENS)]
    return out + [engine.prompt_tokens(llm, SHORT_TOKENS, offset_chars=120000)]


@pytest.fixture(scope="module")
def reference(llm, prompts, server):
    """Each prompt computed from scratch (every lookup a miss), its state stored on `server`."""
    cache = attach(llm, server)
    out = []
    for i, p in enumerate(prompts):
        llm.reset()
        out.append(engine.complete(llm, p)["tokens"])
        stats = cache.stats()
        assert stats["hits"] == 0 and stats["misses"] == i + 1 and stats["saves"] == i + 1, stats
    return out


def seed(llm, server, prompts, i, target):
    """Stores prompt i's state on `target`: restored from `server`, handed to a
    cache on target as the Llama hands it after a completion."""
    attach(llm, server)
    engine.complete(llm, prompts[i])
    cache = memkv.llama_cpp.PromptCache(target.client(timeout_ms=20000), llm, block_tokens=BLOCK)
    cache[llm.input_ids[: llm.n_tokens].tolist()] = llm.save_state()
    assert cache.stats()["saves"] == 1, cache.stats()


def test_a_second_process_restores_each_long_prompt_token_for_token(prompts, reference, server, tmp_path):
    prompts_file = tmp_path / "prompts.json"
    prompts_file.write_text(json.dumps(prompts[:3]))
    out = subprocess.run([sys.executable, engine.__file__, "--prompts", str(prompts_file), "--servers",
                          server.address, "--auth-key", server.auth_key, "--block-tokens", str(BLOCK)],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    results, stats = lines[:-1], lines[-1]["stats"]
    assert [r["tokens"] for r in results] == reference[:3]
    assert stats["hits"] == 3 and stats["exact_hits"] == 3 and stats["misses"] == 0, stats
    assert stats["restore_failed"] == 0, stats
    for r, p in zip(results, prompts):
        # Each prompt was stored whole, with its last logits: nothing was computed,
        # in a process whose context had computed nothing before.
        assert r["restore"]["tokens"] == len(p) and r["restore"]["exact"], r["restore"]
        assert r["restore"]["state_tokens"] >= len(p), r["restore"]


class CountEvals:
    """Counts the tokens the Llama computes (its eval, wrapped once more)."""

    def __init__(self, llm):
        self.llm, self.original, self.tokens = llm, llm.eval, 0

    def __enter__(self):
        def counting(tokens):
            self.tokens += len(tokens)
            return self.original(tokens)

        self.llm.eval = counting
        return self

    def __exit__(self, *exc):
        self.llm.eval = self.original


def test_a_prompt_seen_before_restores_whole_and_computes_only_the_generated_tokens(llm, prompts, reference, server):
    cache = attach(llm, server)
    with CountEvals(llm) as evals:
        assert engine.complete(llm, prompts[3])["tokens"] == reference[3]
    # 24 tokens generated: each but the last computed once, no prompt token.
    assert evals.tokens == engine.MAX_TOKENS - 1, evals.tokens
    assert cache.stats()["exact_hits"] == 1 and cache.last_restore["tokens"] == len(prompts[3]), cache.stats()


def test_without_its_prompt_key_a_prompt_restores_its_blocks_and_computes_the_rest(llm, prompts, reference, server):
    cache = attach(llm, server)
    key = _state.prompt_key(cache.namespace, _state.prompt_hash(cache.identity_digest, prompts[3]))
    pointer = cache.client.get(key)
    assert pointer is not None and cache.client.delete(key)
    try:
        with CountEvals(llm) as evals:
            assert engine.complete(llm, prompts[3])["tokens"] == reference[3]
        tail = len(prompts[3]) - BLOCK
        assert evals.tokens == tail + engine.MAX_TOKENS - 1, evals.tokens
        stats = cache.stats()
        assert stats["hits"] == 1 and stats["exact_hits"] == 0 and stats["restore_failed"] == 0, stats
        assert cache.last_restore["tokens"] == BLOCK and not cache.last_restore["exact"], cache.last_restore
    finally:
        cache.client.put(key, pointer)


def test_a_whole_prompt_llama_cpp_takes_no_logits_for_restores_its_blocks(llm, prompts, reference, server,
                                                                          monkeypatch):
    """Where llama.cpp's sampler would not read the logits handed to it (a
    fault no release shows: a fake behind the one seam), the restore falls
    back to the prompt's blocks and computes the rest."""
    from memkv.llama_cpp import _cache

    monkeypatch.setattr(_cache, "_hand_logits", lambda llm, logits: False)
    cache = attach(llm, server)
    with CountEvals(llm) as evals:
        assert engine.complete(llm, prompts[3])["tokens"] == reference[3]
    assert evals.tokens == len(prompts[3]) - BLOCK + engine.MAX_TOKENS - 1, evals.tokens
    stats = cache.stats()
    assert stats["hits"] == 1 and stats["exact_hits"] == 0 and stats["hit_tokens"] == BLOCK, stats


def test_a_shared_system_prompt_restores_only_the_shared_blocks(llm, prompts, reference, server):
    system = prompts[0][:1700]
    first = system + llm.tokenize(b"\n\nQuestion: what does MemKV store?\nAnswer:", add_bos=False)
    second = system + llm.tokenize(b"\n\nQuestion: which protocol do clients use when RDMA fails?\nAnswer:",
                                   add_bos=False)
    llm.set_cache(None)
    llm.reset()
    want_first = engine.complete(llm, first)["tokens"]
    llm.reset()
    want_second = engine.complete(llm, second)["tokens"]

    cache = attach(llm, server)
    assert engine.complete(llm, first)["tokens"] == want_first
    llm.reset()
    assert engine.complete(llm, second)["tokens"] == want_second
    shared_blocks = 1700 // BLOCK
    for_each = [shared_blocks, shared_blocks]
    assert cache.stats()["hits"] == 2 and cache.stats()["hit_tokens"] == sum(for_each) * BLOCK, cache.stats()
    assert cache.last_restore["blocks"] == shared_blocks, cache.last_restore


def test_a_continued_chat_stores_no_generated_token_in_a_block(llm, server):
    """A follow-up whose prompt holds the first answer: the Llama reuses its
    context, whose generated tokens were computed one at a time. Only the
    rows a computation from scratch would give are stored as blocks, so a
    second context restoring the follow-up completes it token for token."""
    first = engine.prompt_tokens(llm, 1000, offset_chars=160000)
    cache = attach(llm, server)
    engine.complete(llm, first)  # 1,000 prompt tokens, then 24 generated ones at 1,000..1,023
    follow_up = llm.input_ids[: llm.n_tokens].tolist() + llm.tokenize(b"\n\nQuestion: and then?\nAnswer:",
                                                                      add_bos=False)
    engine.complete(llm, follow_up)
    assert cache.stats()["saves"] == 2, cache.stats()
    # The second block would hold the generated tokens: it was not stored.
    chain = _state.chain(cache.identity_digest, follow_up, BLOCK)
    assert len(chain) == 2
    assert cache.client.match_prefix([_state.block_key(cache.namespace, h) for h in chain]) == 1

    llm.set_cache(None)
    llm.reset()
    want = engine.complete(llm, follow_up)["tokens"]
    again = attach(llm, server)
    assert engine.complete(llm, follow_up)["tokens"] == want
    assert again.last_restore["tokens"] == BLOCK, again.last_restore


def test_file_mode_keeps_states_across_a_server_restart(llm, prompts, reference, server, tmp_path):
    port = memkv.testing.restartable_port()
    kwargs = dict(drive_size="1 GiB", directory=str(tmp_path / "server"), extra_args=["--port", str(port)])
    first = start_server(**kwargs)
    seed(llm, server, prompts, 1, first)
    assert first.stop() == 0, first.stderr()

    again = start_server(auth_key=first.auth_key, **kwargs)
    try:
        cache = attach(llm, again)
        assert engine.complete(llm, prompts[1])["tokens"] == reference[1]
        assert cache.stats()["hits"] == 1 and cache.stats()["restore_failed"] == 0, cache.stats()
    finally:
        again.stop()


class KillBeforeTransfer:
    """The cache's client, passed through, but the server is killed (SIGKILL)
    just before the state itself is read: the restore has matched its blocks
    and read their pointer, and the transfer meets a dead server."""

    def __init__(self, client, server):
        self._client, self._server = client, server

    def __getattr__(self, name):
        return getattr(self._client, name)

    def get_into(self, key, buffer):
        self._server.kill()
        return self._client.get_into(key, buffer)


def test_a_server_killed_mid_restore_means_recompute_with_the_error_counted(llm, prompts, reference, server):
    victim = start_server()
    try:
        seed(llm, server, prompts, 2, victim)
        cache = attach(llm, victim, client=KillBeforeTransfer(victim.client(timeout_ms=5000), victim))
        assert engine.complete(llm, prompts[2])["tokens"] == reference[2]
        stats = cache.stats()
        assert stats["hits"] == 0 and stats["misses"] == 1 and stats["errors"] >= 1, stats
    finally:
        victim.stop()


def test_a_server_that_is_down_means_recompute_with_the_error_counted(llm, prompts, reference):
    gone = start_server()
    client = gone.client(timeout_ms=2000)
    gone.kill()
    cache = attach(llm, gone, client=client)
    assert engine.complete(llm, prompts[3])["tokens"] == reference[3]
    stats = cache.stats()
    assert stats["hits"] == 0 and stats["misses"] == 1 and stats["errors"] >= 1, stats


def stored_state_key(cache, tokens):
    chain = _state.chain(cache.identity_digest, tokens, BLOCK)
    pointer = _state.Pointer.decode(cache.client.get(_state.block_key(cache.namespace, chain[0])))
    return _state.state_key(cache.namespace, pointer.state_hash)


def damaged(record: bytes, damage: str) -> bytes:
    if damage == "truncated":
        return record[: len(record) // 2]
    if damage == "flipped":
        out = bytearray(record)
        out[len(out) // 2] ^= 0x40
        return bytes(out)
    # A record whose header and CRC are right but whose llama.cpp state is
    # not one: llama.cpp itself refuses it, and the Llama recomputes.
    header = _state._HEADER
    _, _, _, identity, n_tokens, rows, n_vocab, seed_value, state_bytes, prompt, _ = header.unpack_from(record)
    ids = np.frombuffer(record[header.size:header.size + n_tokens * 4], dtype="<i4")
    at = header.size + (n_tokens + rows * n_vocab) * 4
    logits = np.frombuffer(record[at:at + n_vocab * 4], dtype="<f4") if prompt else None
    return bytes(_state.encode_record(identity, ids, None, n_vocab, seed_value, b"\x07" * state_bytes, prompt,
                                      logits))


@pytest.mark.parametrize("damage", ["truncated", "flipped", "not_a_llama_state"])
def test_a_damaged_state_is_a_miss_that_recomputes(llm, prompts, reference, server, damage):
    cache = attach(llm, server)
    key = stored_state_key(cache, prompts[3])
    good = cache.client.get(key)
    cache.client.put(key, damaged(good, damage))
    try:
        assert engine.complete(llm, prompts[3])["tokens"] == reference[3]
        stats = cache.stats()
        assert stats["restore_failed"] == 1 and stats["hits"] + stats["misses"] == 1, stats
    finally:
        cache.client.put(key, good)


def test_two_kv_cache_types_never_load_each_others_states(llm, prompts, reference, server):
    import llama_cpp

    mine = attach(llm, server)
    other = engine.make_llm(type_k=llama_cpp.GGML_TYPE_F32, type_v=llama_cpp.GGML_TYPE_F32)
    theirs = attach(other, server)
    assert theirs.identity_digest != mine.identity_digest and theirs.namespace != mine.namespace
    # The server holds this prompt's state of the f16 context: a miss for the f32 one.
    assert mine.client.exists(stored_state_key(mine, prompts[3]))
    first = engine.complete(other, prompts[3])["tokens"]
    assert theirs.stats()["hits"] == 0 and theirs.stats()["misses"] == 1, theirs.stats()
    # Its own state is a hit for itself, and the same tokens.
    other.reset()
    assert engine.complete(other, prompts[3])["tokens"] == first
    assert theirs.stats()["hits"] == 1, theirs.stats()


def test_another_model_file_has_another_identity_and_refuses_these_states(llm, prompts, reference, server,
                                                                         tmp_path):
    cache = attach(llm, server)
    # The same weights, one metadata byte apart: another model file.
    copy = tmp_path / "other.gguf"
    data = bytearray(open(engine.model_path(), "rb").read())
    data[data.find(b"SmolLM2")] = ord("Z")
    copy.write_bytes(bytes(data))
    other = dict(cache.identity, model_sha256=memkv.llama_cpp.file_digest(str(copy), remember=False))
    other_digest = memkv.llama_cpp.identity_digest(other)
    assert other_digest != cache.identity_digest
    record = cache.client.get(stored_state_key(cache, prompts[3]))
    with pytest.raises(memkv.llama_cpp.RecordError, match="identity"):
        _state.decode_record(record, other_digest)


def test_short_prompts_are_neither_saved_nor_fetched(llm, server):
    cache = attach(llm, server)
    tokens = llm.tokenize(b"Hello there, how are you?")
    engine.complete(llm, tokens)
    llm.reset()
    engine.complete(llm, tokens)
    stats = cache.stats()
    assert stats["saves"] == 0 and stats["saves_short"] == 2 and stats["hits"] == 0, stats


def test_two_openai_servers_share_prompts_through_one_memkv(llm, prompts, reference, server, tmp_path):
    text = llm.detokenize(prompts[0][1:]).decode(errors="ignore")  # the server adds the BOS itself
    servers = []
    try:
        for _ in range(2):
            port = memkv.testing.restartable_port()
            servers.append((engine.start_llama_server(server, port, tmp_path / f"server-{port}.log", BLOCK), port))
        answers, stats = [], []
        for _, port in servers:
            answers.append(engine.http("POST", f"http://127.0.0.1:{port}/v1/completions",
                                {"prompt": text, "max_tokens": 16, "temperature": 0.0}))
            stats.append(engine.http("GET", f"http://127.0.0.1:{port}/memkv/stats")["caches"][0])
        assert answers[0]["choices"][0]["text"] == answers[1]["choices"][0]["text"]
        # The first server computes the prompt and stores it (or restores it,
        # if the text tokenizes to a prompt stored before); the second restores it.
        assert stats[1]["hits"] == 1 and stats[1]["hit_tokens"] >= 2048, stats
        assert stats[0]["namespace"] == stats[1]["namespace"]
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait(30)

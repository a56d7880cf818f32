"""PromptCache: llama-cpp-python's prompt cache, kept in MemKV.

One instance serves one llama_cpp.Llama (the cache identity is that model's
and context's) and may be shared by any number of processes and hosts that
point at the same servers. Calls come from the thread that runs the Llama;
stats() may be read from any thread.
"""

import functools
import sys
import time
from typing import Any, Dict, Optional, Sequence

import numpy as np

import memkv

from ..adapters._common import MAX_MATCH_KEYS, RateLimitedLog
from . import _state

try:  # the base class when llama-cpp-python is installed; the contract is the same without it
    from llama_cpp.llama_cache import BaseLlamaCache as _Base
except ImportError:  # pragma: no cover - exercised only without llama-cpp-python
    _Base = object

_COUNTERS = ("lookups", "hits", "exact_hits", "misses", "local_hits", "hit_tokens", "restored_bytes", "restore_failed",
             "saves", "saved_bytes", "saves_short", "saves_failed", "saves_shed", "errors", "restored_in_time",
             "restored_late")


class _MemKVState:
    """Marks a LlamaState this cache made, so that the Llama's load_state
    wrapper turns its failure into a recompute."""


@functools.lru_cache(maxsize=None)
def _state_class() -> type:
    import llama_cpp.llama

    class MemKVLlamaState(llama_cpp.llama.LlamaState, _MemKVState):
        pass

    return MemKVLlamaState


def cache_identity(llm: Any, block_tokens: Optional[int] = None, model_digest: Optional[str] = None,
                   extras: Optional[Dict[str, Any]] = None) -> "memkv.CacheIdentity":
    """The memkv.CacheIdentity of a PromptCache of `llm` with `block_tokens`
    blocks (default: the context's n_batch): the client the cache uses
    should be made with it (memkv.Client(..., identity=...)), so that the
    server keeps its blocks apart from every other model's, context's and
    block size's. `extras` are added to its extras (docs/engines/llama-cpp.md)."""
    identity = _state.identity_of(llm, model_digest)
    fields = _state.cache_identity_fields(llm, identity, block_tokens or int(llm.context_params.n_batch))
    fields["extras"] = {**fields["extras"], **{str(k): str(v) for k, v in (extras or {}).items()}}
    return memkv.CacheIdentity(**fields)


class PromptCache(_Base):  # type: ignore[misc, valid-type]
    """A llama-cpp-python prompt cache (BaseLlamaCache) whose states live in MemKV.

        client = memkv.Client.from_env()
        llm.set_cache(memkv.llama_cpp.PromptCache(client, llm))

    After each completion the Llama hands the cache its context state; the
    cache stores it once, under the hash of the longest run of whole
    `block_tokens` blocks of the prompt it holds, and points every block
    boundary of that run at it. A new prompt is cut into the same blocks; one
    match_prefix call finds the longest stored run, the state behind it is
    restored, cut to those blocks, and llama.cpp computes only the rest.

    A prompt seen before restores whole, computing nothing: the state is
    stored with the logits of the prompt's last token (as computing the
    prompt gave them) and pointed at by the hash of the whole prompt; the
    Llama samples the first token from them at once.

    Restored or recomputed, a completion is the same token for token: blocks
    are whole multiples of the context's n_batch, so every restored token was
    computed in a batch of the same size and place as in a computation from
    scratch, and the rest is computed in the batches that computation would
    use (a batch's results depend, in their last bits, on its size). Tokens a
    completion generated (computed one at a time) are stored with the state
    but never restored.

    A state that cannot be used (missing, cut short, corrupt, another format
    or identity, refused by llama.cpp) is a miss: the prompt is computed from
    scratch and the reason counted and logged (rate-limited). A server that is
    down or slow is the same. Nothing on the cache's path raises into the
    Llama.

    Restores are reported to the client (Client.report_restores): a state
    llama.cpp loads is in time (the Llama waits for the fetch, and computes
    only the rest), one it refuses is late (fetched, then recomputed).

    Arguments:
      client: a memkv.Client (its timeout_ms bounds every transfer), best
        made with identity=memkv.llama_cpp.cache_identity(llm, block_tokens).
      llm: the llama_cpp.Llama this cache serves; its model file is hashed
        once (the digest is remembered under ~/.cache/memkv) unless
        model_digest is given.
      block_tokens: tokens per block, a multiple of the context's n_batch
        (512 unless the Llama was made with another); default n_batch. A
        prompt shorter than one block is neither saved nor restored.
      namespace: the key prefix; default "llama.cpp/<identity digest>".
      ttl_ms, retention: passed with every put (memkv.PutOptions).
      min_save_tokens: states holding fewer tokens are not saved.
    """

    def __init__(self, client: "memkv.Client", llm: Any, *, block_tokens: Optional[int] = None,
                 namespace: Optional[str] = None, model_digest: Optional[str] = None, ttl_ms: int = 0,
                 retention: str = "normal", min_save_tokens: int = 0) -> None:
        n_batch = int(llm.context_params.n_batch)
        if block_tokens is None:
            block_tokens = n_batch
        if (isinstance(block_tokens, bool) or not isinstance(block_tokens, int) or not 1 <= block_tokens <= 1 << 20
                or block_tokens % n_batch):
            raise memkv.InvalidArgument(
                f"memkv.llama_cpp.PromptCache: block_tokens {block_tokens!r} must be a multiple of the context's "
                f"n_batch ({n_batch}), at most 1048576, so that a restored prefix holds exactly what a computation "
                f"from scratch would (pass a multiple of {n_batch}, or make the Llama with a smaller n_batch)")
        if _Base is not object:
            super().__init__(capacity_bytes=0)
        self.client = client
        self.block_tokens = block_tokens
        self.identity = _state.identity_of(llm, model_digest)
        self.identity_digest = _state.identity_digest(self.identity)
        # What the client should be made with (cache_identity); None for a memkv without CacheIdentity.
        self.cache_identity = (memkv.CacheIdentity(**_state.cache_identity_fields(llm, self.identity, block_tokens))
                               if hasattr(memkv, "CacheIdentity") else None)
        self.namespace = namespace or f"llama.cpp/{self.identity_digest.hex()[:32]}"
        self.min_save_tokens = max(min_save_tokens, block_tokens)
        self._put_options = memkv.PutOptions(ttl_ms=ttl_ms, retention=retention)
        self._llm = llm
        self._warn = RateLimitedLog()
        self._counters: Dict[str, int] = dict.fromkeys(_COUNTERS, 0)
        self._state_type = _state_class()
        _ExactRows.watch(llm)
        # The size of the last state record stored, and what the last lookup restored (blocks, tokens, bytes).
        self.last_save_bytes = 0
        self.last_restore: Dict[str, Any] = {}
        self._spare: Optional[np.ndarray] = None  # _receive_buffer

    # -- BaseLlamaCache -------------------------------------------------

    @property
    def cache_size(self) -> int:
        """Bytes this cache has stored (the servers' own figures are in /v1/status)."""
        return self._counters["saved_bytes"]

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._match(list(key))[0] > 0

    def __getitem__(self, key: Sequence[int]) -> Any:
        """The stored state that shares the longest block-aligned prefix with
        key; KeyError on a miss (the Llama then computes the prompt)."""
        tokens = list(key)
        self._count(lookups=1)
        started = time.perf_counter()
        self.last_restore = {}
        blocks, chain = self._match(tokens)
        if blocks == 0:
            self._count(misses=1)
            raise KeyError("memkv: no stored prefix")
        restore = blocks * self.block_tokens
        if self._local_prefix(tokens) >= restore:
            # The Llama's own context already holds at least as much: nothing to fetch.
            self._count(local_hits=1)
            raise KeyError("memkv: the context already holds this prefix")
        # The whole prompt, stored with its last logits, before its blocks.
        exact, tried = self._fetch_prompt(tokens)
        if exact is not None:
            return self._restored(exact, tokens, len(tokens), blocks, started)
        record = self._fetch(chain[blocks - 1], tokens, blocks, skip=tried)
        if record is None:
            self._count(misses=1)
            raise KeyError("memkv: the stored prefix could not be restored")
        return self._restored(record, tokens, restore, blocks, started)

    def _restored(self, record: _state.Record, tokens: Sequence[int], restore: int, blocks: int,
                  started: float) -> Any:
        """The LlamaState that makes the Llama hold the first `restore` tokens
        of record; for a whole prompt (restore == len(tokens)), with the
        logits its first token is sampled from."""
        whole = restore == len(tokens)
        # The state holds more tokens than the blocks; the Llama, told it holds
        # just the blocks' tokens, drops the other cells before it computes.
        # input_ids is the Llama's whole n_ctx buffer (load_state adopts it);
        # -1 past the blocks matches no token.
        input_ids = np.full(max(len(self._llm.input_ids), restore), -1, dtype=np.intc)
        input_ids[:restore] = record.input_ids[:restore]
        state = self._state_type(
            input_ids=input_ids,
            scores=(record.scores[:restore] if record.scores is not None
                    else np.zeros((1, record.n_vocab), dtype=np.single)),
            n_tokens=restore,
            llama_state=record.llama_state,
            llama_state_size=len(record.llama_state),
            seed=record.seed)
        state.memkv_cache = self  # counts a refusal by llama.cpp (the load_state wrapper)
        state.memkv_hit_tokens = restore
        state.memkv_blocks = blocks
        # For a whole prompt: its logits, and the blocks to fall back to where
        # llama.cpp gives no buffer to hand them over in.
        state.memkv_logits = record.logits if whole else None
        state.memkv_fallback_tokens = blocks * self.block_tokens
        self._count(hits=1, exact_hits=int(whole), hit_tokens=restore, restored_bytes=record.size)
        self.last_restore = {"blocks": blocks, "tokens": restore, "state_tokens": len(record.input_ids),
                             "bytes": record.size, "exact": whole, "fetch_s": time.perf_counter() - started}
        return state

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        """Stores the Llama's state (value) after a completion; never raises."""
        try:
            self._save(value)
        except memkv.Error as e:
            self._failed("save", e)

    # -- stats ----------------------------------------------------------

    def stats(self) -> Dict[str, Any]:
        """Counters since this cache was made: lookups, hits, exact_hits
        (a whole prompt restored, nothing computed), misses, local_hits (the
        context already held the prefix), hit_tokens,
        restored_bytes, restore_failed (a state found but unusable), saves,
        saved_bytes, saves_short (too few tokens), saves_failed, saves_shed
        (a busy server shed the put), errors (server unreachable, timeouts),
        restored_in_time and restored_late (blocks of states llama.cpp
        loaded, and refused)."""
        return dict(self._counters)

    # -- internals ------------------------------------------------------

    def _count(self, **deltas: int) -> None:
        for k, v in deltas.items():
            self._counters[k] += v

    def _report_restores(self, in_time: int, late: int) -> None:
        """Client.report_restores (blocks), never raising (the Llama's path goes on)."""
        self._count(restored_in_time=in_time, restored_late=late)
        report = getattr(self.client, "report_restores", None)
        if report is None:
            return
        try:
            report(in_time, late)
        except Exception as e:  # noqa: BLE001 - closed, or an older client
            self._warn.warn(f"report:{type(e).__name__}", f"memkv llama.cpp cache: reporting a restore failed: {e}")

    def _failed(self, op: str, e: Exception) -> None:
        if op == "save" and isinstance(e, memkv.Busy):
            self._count(saves_shed=1)  # shed, not failed
            return
        self._count(errors=1)
        if op == "save":
            self._count(saves_failed=1)
        self._warn.warn(f"{op}:{type(e).__name__}", f"memkv llama.cpp cache: {op} failed, "
                        f"{'recomputing' if op != 'save' else 'state not stored'}: {e}")

    def _local_prefix(self, tokens: Sequence[int]) -> int:
        held = self._llm.input_ids[: self._llm.n_tokens]
        n = min(len(held), len(tokens))
        if n == 0:
            return 0
        diff = np.flatnonzero(held[:n] != np.asarray(tokens[:n], dtype=held.dtype))
        return int(diff[0]) if diff.size else n

    def _match(self, tokens: Sequence[int]):
        # The last token is always computed again (its logits start the
        # completion), so only blocks before it count.
        chain = _state.chain(self.identity_digest, tokens[:-1], self.block_tokens)
        if not chain:
            return 0, chain
        keys = [_state.block_key(self.namespace, h) for h in chain]
        try:
            found = 0
            for i in range(0, len(keys), MAX_MATCH_KEYS):
                part = keys[i:i + MAX_MATCH_KEYS]
                n = self.client.match_prefix(part)
                found += n
                if n < len(part):
                    break
            return found, chain
        except memkv.Error as e:
            self._failed("lookup", e)
            return 0, chain

    def _unusable(self, why: str) -> None:
        self._count(restore_failed=1)
        self._warn.warn(f"restore:{why.split(':')[0]}", f"memkv llama.cpp cache: a stored state was not used, "
                                                        f"recomputing: {why}")

    def _fetch_prompt(self, tokens: Sequence[int]):
        """The record of this whole prompt with its last logits, or None; and
        the name of a state found but not usable (not fetched again)."""
        if len(tokens) < self.block_tokens:
            return None, None
        try:
            raw = self.client.get(_state.prompt_key(self.namespace, _state.prompt_hash(self.identity_digest, tokens)))
        except memkv.Error as e:
            self._failed("lookup", e)
            return None, None
        pointer = _state.Pointer.decode(raw) if raw is not None else None
        if pointer is None:
            if raw is not None:
                self._unusable("format: a prompt key holds no valid pointer")
            return None, None
        record = self._fetch_state(pointer, tokens, len(tokens))
        if record is None:
            return None, pointer.state_hash
        if record.prompt_tokens != len(tokens):
            return None, None  # the state was stored again for another prompt: the blocks still serve
        return record, None

    def _fetch(self, block_hash: bytes, tokens: Sequence[int], blocks: int,
               skip: Optional[bytes] = None) -> Optional[_state.Record]:
        try:
            raw = self.client.get(_state.block_key(self.namespace, block_hash))
        except memkv.Error as e:
            self._failed("restore", e)
            return None
        if raw is None:
            self._unusable("missing: a matched block's pointer is gone (evicted or deleted)")
            return None
        pointer = _state.Pointer.decode(raw)
        if pointer is None:
            self._unusable("format: a block key holds no valid pointer")
            return None
        if pointer.state_hash == skip:
            return None  # the whole prompt's lookup found this state unusable and counted it
        return self._fetch_state(pointer, tokens, blocks * self.block_tokens)

    def _receive_buffer(self, n: int) -> np.ndarray:
        """n bytes to read a record into: the buffer of the last restore again
        when nothing made from it is alive any more (the Llama loads a state
        and drops it), so that its pages need not be mapped again."""
        spare = self._spare
        if spare is None or len(spare) < n or sys.getrefcount(spare) > 3:  # self._spare, spare, the argument
            spare = self._spare = None  # the old buffer goes before a new one is mapped
            spare = self._spare = np.empty(n, dtype=np.uint8)
        return spare[:n]

    def _fetch_state(self, pointer: _state.Pointer, tokens: Sequence[int], want: int) -> Optional[_state.Record]:
        """The record pointer names, checked to start with tokens[:want]."""
        try:
            buffer = self._receive_buffer(pointer.record_bytes)
            size = self.client.get_into(_state.state_key(self.namespace, pointer.state_hash), buffer)
        except memkv.TooLarge:
            self._unusable("truncated: the state changed size since its pointer was written")
            return None
        except memkv.Error as e:
            self._failed("restore", e)
            return None
        if size is None:
            self._unusable("missing: the state a block points at is gone (evicted or deleted)")
            return None
        try:
            record = _state.decode_record(buffer[:size], self.identity_digest)
        except _state.RecordError as e:
            self._unusable(str(e))
            return None
        if len(record.input_ids) < want or not np.array_equal(record.input_ids[:want],
                                                              np.asarray(tokens[:want], dtype=np.intc)):
            self._unusable("tokens: the state does not start with the prompt's matched tokens")
            return None
        return record

    def _save(self, state: Any) -> None:
        n_tokens = int(state.n_tokens)
        if n_tokens < self.min_save_tokens:
            self._count(saves_short=1)
            return
        input_ids = np.asarray(state.input_ids)[:n_tokens]
        # Blocks cover only the rows computed as a computation from scratch
        # computes them (_ExactRows), never generated tokens.
        covered = min(n_tokens, _ExactRows.of(self._llm))
        chain = _state.chain(self.identity_digest, input_ids[:covered], self.block_tokens)
        if not chain:
            self._count(saves_short=1)
            return
        scores = None
        if self.identity["logits_all"]:
            scores = np.asarray(state.scores)[:n_tokens]
        # The prompt whose last logits the context still holds (_ExactRows):
        # stored with them, the state restores that whole prompt.
        prompt, logits = _ExactRows.prompt(self._llm, n_tokens)
        if prompt < self.block_tokens:
            prompt, logits = 0, None
        name = _state.prompt_hash(self.identity_digest, input_ids[:prompt]) if prompt else chain[-1]
        record = _state.encode_record(self.identity_digest, input_ids, scores, self.identity["n_vocab"],
                                      int(state.seed), state.llama_state, prompt, logits)
        # The state first, then the pointers to it: a pointer never names a
        # state that was not stored (though either may be evicted later).
        self.client.put(_state.state_key(self.namespace, name), record, ttl_ms=self._put_options.ttl_ms,
                        retention=self._put_options.retention)
        pointer = _state.Pointer(n_tokens, len(record), name).encode()
        keys = [_state.block_key(self.namespace, h) for h in chain]
        if prompt:
            keys.append(_state.prompt_key(self.namespace, name))
        result = self.client.batch_put(keys, [pointer] * len(keys), options=[self._put_options] * len(keys))
        if not result.ok:
            first = next(i for i, s in enumerate(result.statuses) if s != 0)
            raise result.error(first)
        self.last_save_bytes = len(record)
        self._count(saves=1, saved_bytes=len(record) + len(pointer) * len(keys))



class _ExactRows:
    """How many leading rows (tokens) of a Llama's context hold exactly the
    keys and values a computation of them from scratch gives.

    llama-cpp-python computes tokens in batches of n_batch from the context's
    current length, and a row's values differ in their last bits with the
    size of the batch it was computed in. So a row is exact when it was
    computed in a whole batch that starts at a multiple of n_batch, after
    exact rows only (or came from a restore of such rows). The rows of a
    final partial batch, and tokens generated one at a time, are not: a longer
    prompt holding them computes them in a fuller batch.

    The logits of an eval that starts on exact rows at a multiple of
    n_batch are, for its last token, what computing the tokens up to it from
    scratch gives: the first such eval after the context was emptied or cut
    (a prompt's, not a generated token's) is kept as the prompt's, until the
    rows before its end change.

    Kept by wrapping the Llama's eval and load_state (once per Llama). The
    load_state wrapper also makes a PromptCache state that llama.cpp refuses a
    recompute: the Llama's own load_state raises then, and the completion
    that asked for it would fail; and it hands a whole prompt's logits to
    llama.cpp, from which the Llama samples without computing anything."""

    @staticmethod
    def of(llm: Any) -> int:
        return min(getattr(llm, "_memkv_exact_rows", 0), int(llm.n_tokens))

    @staticmethod
    def prompt(llm: Any, n_tokens: int):
        """(tokens, logits) of the prompt the context holds with its last
        logits as a computation from scratch gives them; (0, None) if none."""
        kept = getattr(llm, "_memkv_prompt", None)
        if kept is None or kept[0] > min(n_tokens, int(llm.n_tokens)):
            return 0, None
        return kept

    @staticmethod
    def watch(llm: Any) -> None:
        if getattr(llm, "_memkv_watched", False):
            return
        original_eval, original_load = llm.eval, llm.load_state
        n_batch = int(llm.n_batch)

        def eval(tokens: Sequence[int]) -> None:
            start = int(llm.n_tokens)
            exact = _ExactRows.of(llm)
            llm._memkv_exact_rows = exact  # rows past the context's length are gone
            kept = getattr(llm, "_memkv_prompt", None)
            if kept is not None and kept[0] > start:
                kept = llm._memkv_prompt = None  # the prompt's rows are computed again
            original_eval(tokens)
            if exact == start and start % n_batch == 0:
                llm._memkv_exact_rows = start + len(tokens) // n_batch * n_batch
                last = _logits(llm) if kept is None and len(tokens) else None
                if last is not None:
                    llm._memkv_prompt = (start + len(tokens), last.copy())

        def load_state(state: Any) -> None:
            llm._memkv_exact_rows = 0  # another cache's state: its history is unknown
            llm._memkv_prompt = None
            if not isinstance(state, _MemKVState):
                return original_load(state)
            logits = state.memkv_logits
            try:
                if logits is not None and _logits(llm) is None:
                    # A context that has computed nothing has no logits buffer
                    # yet: one token makes it (the load replaces its row).
                    llm.n_tokens = 0
                    original_eval([int(state.input_ids[0])])
                _load_in_place(llm, state)
            except Exception as e:  # llama.cpp refused the state: start from an empty context
                _reset_context(llm)
                cache = state.memkv_cache
                cache._count(restore_failed=1, hits=-1, exact_hits=-int(logits is not None), misses=1,
                             hit_tokens=-state.memkv_hit_tokens)
                cache._warn.warn("restore:load", f"memkv llama.cpp cache: llama.cpp refused a stored state, "
                                                 f"recomputing: {e}")
                cache._report_restores(0, state.memkv_blocks)  # fetched, then recomputed
                return
            if logits is None:
                llm._memkv_exact_rows = int(state.n_tokens)  # whole blocks of exact rows
            elif _hand_logits(llm, logits):
                llm._requires_eval = False  # the Llama samples from these logits at once
                llm._memkv_exact_rows = int(state.n_tokens) // n_batch * n_batch
                # A copy: the logits are a view into the receive buffer, which the
                # next restore reuses only once nothing refers to it.
                llm._memkv_prompt = (int(state.n_tokens), np.array(logits))
            else:  # no buffer to hand them over in: the blocks, and the rest computed
                cache = state.memkv_cache
                cache._count(exact_hits=-1, hit_tokens=state.memkv_fallback_tokens - state.memkv_hit_tokens)
                cache._warn.warn("restore:logits", "memkv llama.cpp cache: llama.cpp gave no logits buffer to "
                                                   "restore a whole prompt into; computing the tokens after its "
                                                   "last whole block")
                llm.n_tokens = llm._memkv_exact_rows = state.memkv_fallback_tokens
            state.memkv_cache._report_restores(state.memkv_blocks, 0)

        llm.eval, llm.load_state = eval, load_state
        llm._memkv_watched = True


def _load_in_place(llm: Any, state: Any) -> None:
    """What Llama.load_state does (llama-cpp-python 0.3), but llama.cpp reads
    the state from the buffer the record was received into, where
    load_state would copy it first (94 MB for 4,096 tokens of SmolLM2)."""
    import ctypes

    import llama_cpp

    n = int(state.n_tokens)
    llm.scores[:n, :] = state.scores
    rest = llm.scores[n:, :]
    rest[rest > 0] = 0.0
    llm.input_ids = state.input_ids.copy()
    llm.n_tokens = n
    llm._requires_eval = True
    llm._seed = state.seed
    size = int(state.llama_state_size)
    source = (ctypes.c_uint8 * size).from_buffer(state.llama_state)
    if llama_cpp.llama_state_set_data(llm.ctx, source, size) != size:
        raise RuntimeError("llama_state_set_data did not read the whole state")


def _logits(llm: Any) -> Optional[np.ndarray]:
    """llama.cpp's logits of the context's last output, as an array over its
    own buffer (what the Llama's sampler reads); None before any output."""
    import llama_cpp

    pointer = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    if not pointer:
        return None
    return np.ctypeslib.as_array(pointer, shape=(int(llm.n_vocab()),))


def _hand_logits(llm: Any, logits: np.ndarray) -> bool:
    """Writes logits into llama.cpp's buffer of the last output; whether
    llama_get_logits_ith, which the Llama's sampler reads through, now
    returns them."""
    target = _logits(llm)
    if target is None or target.shape != logits.shape:
        return False
    target[:] = logits
    again = _logits(llm)
    return again is not None and np.array_equal(again, logits)


def _reset_context(llm: Any) -> None:
    """An empty context: no tokens, no KV cells."""
    import llama_cpp

    llm.n_tokens = 0
    llm._requires_eval = True
    memory = llama_cpp.llama_get_memory(llm.ctx)
    if memory is not None:
        llama_cpp.llama_memory_clear(memory, True)

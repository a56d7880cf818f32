"""The llama.cpp prompt cache's formats without a model (memkv.llama_cpp._state):
the key chain, the pointer, the state record and every way a record is refused.
The cache itself, with a real model, is tested in tests/engines/llama_cpp."""

import hashlib
import os

import numpy as np
import pytest

from memkv.llama_cpp import _state

IDENTITY = hashlib.sha256(b"model and context").digest()


def record(n_tokens=600, state=b"kv cells " * 1000, scores=None, identity=IDENTITY):
    ids = np.arange(n_tokens, dtype=np.intc) * 7
    return _state.encode_record(identity, ids, scores, 49152, 1234, state)


def test_the_chain_names_whole_prefixes_and_changes_with_any_earlier_token():
    tokens = list(range(1100))
    chain = _state.chain(IDENTITY, tokens, 512)
    assert len(chain) == 2  # whole blocks only
    assert _state.chain(IDENTITY, tokens[:1024], 512) == chain
    changed = list(tokens)
    changed[3] += 1
    other = _state.chain(IDENTITY, changed, 512)
    assert other[0] != chain[0] and other[1] != chain[1]  # a key names the whole prefix
    assert _state.chain(hashlib.sha256(b"other").digest(), tokens, 512)[0] != chain[0]  # and the identity


def test_a_pointer_round_trips_and_anything_else_is_no_pointer():
    p = _state.Pointer(2100, 123456789, b"h" * 16)
    assert _state.Pointer.decode(p.encode()) == p
    assert _state.Pointer.decode(p.encode()[:-1]) is None
    assert _state.Pointer.decode(b"X" + p.encode()[1:]) is None


def test_a_record_round_trips_without_a_copy_of_its_state():
    data = record()
    got = _state.decode_record(data, IDENTITY)
    assert got.size == len(data)
    assert np.array_equal(got.input_ids, np.arange(600) * 7)
    assert bytes(got.llama_state) == b"kv cells " * 1000
    assert got.scores is None and got.n_vocab == 49152 and got.seed == 1234
    assert got.llama_state.obj is not None  # a view into the buffer read


def test_a_record_with_scores_keeps_them():
    scores = np.random.default_rng(1).random((4, 49152), dtype=np.float32)
    got = _state.decode_record(record(n_tokens=4, scores=scores), IDENTITY)
    assert np.array_equal(got.scores, scores)


def test_a_record_with_a_prompts_logits_keeps_them_and_its_length():
    logits = np.random.default_rng(2).random(49152, dtype=np.float32)
    ids = np.arange(600, dtype=np.intc)
    data = _state.encode_record(IDENTITY, ids, None, 49152, 1, b"state", prompt_tokens=576, logits=logits)
    assert len(data) == _state.record_size(600, 0, 49152, 5, prompt_logits=True)
    got = _state.decode_record(data, IDENTITY)
    assert got.prompt_tokens == 576 and np.array_equal(got.logits, logits) and bytes(got.llama_state) == b"state"
    plain = _state.decode_record(record(), IDENTITY)
    assert plain.prompt_tokens == 0 and plain.logits is None


@pytest.mark.parametrize("prompt_tokens, logits", [(601, np.zeros(49152, np.float32)), (5, np.zeros(7, np.float32))])
def test_a_prompts_logits_must_fit_the_record(prompt_tokens, logits):
    with pytest.raises(ValueError, match="49152 floats"):
        _state.encode_record(IDENTITY, np.arange(600, dtype=np.intc), None, 49152, 1, b"s", prompt_tokens, logits)


def test_a_prompt_hash_names_the_whole_prompt_and_no_block():
    tokens = list(range(1024))
    h = _state.prompt_hash(IDENTITY, tokens)
    assert len(h) == 16 and h == _state.prompt_hash(IDENTITY, np.array(tokens))
    assert h != _state.prompt_hash(IDENTITY, tokens[:-1]) and h != _state.prompt_hash(IDENTITY, tokens + [0])
    assert h != _state.prompt_hash(hashlib.sha256(b"other").digest(), tokens)
    assert h not in _state.chain(IDENTITY, tokens, 512)  # a block's key never names a whole prompt
    assert _state.prompt_key("ns", h) == b"ns/p/" + h.hex().encode()


def prompt_count(b, n):
    """A record whose header claims a prompt of n tokens (CRC intact: the header is outside it)."""
    header = bytearray(b)
    fields = list(_state._HEADER.unpack_from(header))
    fields[-2] = n
    _state._HEADER.pack_into(header, 0, *fields)
    return bytes(header)


@pytest.mark.parametrize("damage, word", [
    (lambda b: prompt_count(b, 601), "format"),
    (lambda b: prompt_count(b, 5), "truncated"),
    (lambda b: b[:20], "truncated"),
    (lambda b: b[:-1], "truncated"),
    (lambda b: b + b"x", "truncated"),
    (lambda b: b"NOTMEMKV" + b[8:], "format"),
    (lambda b: b[:8] + (99).to_bytes(4, "little") + b[12:], "format"),
    (lambda b: b[:-10] + bytes([b[-10] ^ 1]) + b[-9:], "corrupt"),
])
def test_a_damaged_record_is_refused_naming_why(damage, word):
    with pytest.raises(_state.RecordError, match=f"^{word}"):
        _state.decode_record(damage(bytes(record())), IDENTITY)


def test_a_record_of_another_identity_is_refused():
    with pytest.raises(_state.RecordError, match="^identity"):
        _state.decode_record(record(), hashlib.sha256(b"another model").digest())


def test_an_identity_digest_changes_with_every_field():
    base = {"model_sha256": "a" * 64, "context": {"type_k": 1, "n_ctx": 4096}, "llama_cpp_python": "0.3.36"}
    digest = _state.identity_digest(base)
    assert _state.identity_digest(dict(base)) == digest
    assert _state.identity_digest({**base, "context": {"type_k": 0, "n_ctx": 4096}}) != digest
    assert _state.identity_digest({**base, "llama_cpp_python": "0.3.37"}) != digest


def test_a_model_digest_is_remembered_until_the_file_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = tmp_path / "model.gguf"
    model.write_bytes(b"weights" * 1000)
    first = _state.file_digest(str(model))
    assert first == hashlib.sha256(b"weights" * 1000).hexdigest()
    assert (tmp_path / "cache" / "memkv" / "model-digests.json").exists()
    model.write_bytes(b"other weights" * 1000)
    os.utime(model, ns=(1, 1))  # even with an older mtime: size and inode stamp it too
    assert _state.file_digest(str(model)) == hashlib.sha256(b"other weights" * 1000).hexdigest()

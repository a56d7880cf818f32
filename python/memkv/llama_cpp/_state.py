"""What a stored llama.cpp state is: the cache identity, the key chain and
the two value formats (a state record and the small pointer each block key
holds).

Nothing here talks to a server or imports llama_cpp at module level, so the
formats are tested without a model.

Layout of the keys, under the namespace (by default `llama.cpp/<identity>`):

    <ns>/b/<H_j>   pointer: the state that holds blocks 1..j (and maybe more)
    <ns>/p/<P>     pointer: the state that holds this whole prompt and the
                   logits of its last token
    <ns>/s/<name>  state record: a llama.cpp context state of m*B+ tokens,
                   named H_m, or P when it holds a prompt's logits

H_0 is the identity digest; H_j = BLAKE2b-128(H_{j-1} || tokens of block j as
little-endian int32). A key therefore names a whole prefix, never one block
on its own, and two caches with different identities share no key. P is
BLAKE2b-128 keyed by the identity digest over all of a prompt's tokens.
"""

import hashlib
import json
import os
import struct
import threading
import zlib
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

# The context parameters that change what a saved state means: its KV layout
# and types, positions and RoPE, how many sequences it holds, whether logits
# or embeddings come out. Thread counts, batch sizes and callbacks do not.
IDENTITY_CONTEXT_FIELDS = (
    "n_ctx", "n_seq_max", "n_rs_seq", "ctx_type", "rope_scaling_type", "pooling_type", "attention_type",
    "flash_attn_type", "rope_freq_base", "rope_freq_scale", "yarn_ext_factor", "yarn_attn_factor", "yarn_beta_fast",
    "yarn_beta_slow", "yarn_orig_ctx", "type_k", "type_v", "embeddings", "swa_full", "kv_unified")

_DIGEST_CACHE_NAME = "model-digests.json"
_digest_lock = threading.Lock()


def _cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "memkv")


def file_digest(path: str, remember: bool = True) -> str:
    """SHA-256 of a model file, hex. Hashing a large GGUF takes seconds per
    GiB, so the digest is remembered in ~/.cache/memkv/model-digests.json
    under the file's real path, size, mtime and inode: a file replaced or
    rewritten in place is hashed again."""
    real = os.path.realpath(path)
    st = os.stat(real)
    stamp = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}"
    memo = os.path.join(_cache_dir(), _DIGEST_CACHE_NAME)
    if remember:
        with _digest_lock:
            try:
                with open(memo) as f:
                    known = json.load(f)
                entry = known.get(real)
                if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
                    return entry["sha256"]
            except (OSError, ValueError):
                pass
    h = hashlib.sha256()
    with open(real, "rb") as f:
        while True:
            chunk = f.read(8 << 20)
            if not chunk:
                break
            h.update(chunk)
    digest = h.hexdigest()
    if remember:
        with _digest_lock:
            try:
                os.makedirs(os.path.dirname(memo), exist_ok=True)
                try:
                    with open(memo) as f:
                        known = json.load(f)
                    if not isinstance(known, dict):
                        known = {}
                except (OSError, ValueError):
                    known = {}
                known[real] = {"stamp": stamp, "sha256": digest}
                tmp = f"{memo}.{os.getpid()}.tmp"
                with open(tmp, "w") as f:
                    json.dump(known, f)
                os.replace(tmp, memo)
            except OSError:
                pass  # a read-only home only costs the next start the hashing
    return digest


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return struct.unpack("<f", struct.pack("<f", value))[0]  # the float the C struct holds
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    return str(value)


def identity_of(llm: Any, model_digest: Optional[str] = None) -> Dict[str, Any]:
    """The cache identity of a llama_cpp.Llama: everything that must match for
    a state saved by one context to mean the same in another."""
    import llama_cpp  # the engine's package: imported only when a model is at hand

    params = llm.context_params
    names = {f[0] for f in type(params)._fields_}
    context = {name: _plain(getattr(params, name)) for name in IDENTITY_CONTEXT_FIELDS if name in names}
    lora = getattr(llm, "lora_path", None)
    low = getattr(llama_cpp, "llama_cpp", None)
    return {
        "model_sha256": model_digest or file_digest(llm.model_path),
        "lora_sha256": file_digest(lora) if lora else None,
        "lora_scale": _plain(float(getattr(llm, "lora_scale", 1.0))) if lora else None,
        "n_vocab": int(llm.n_vocab()),
        "logits_all": bool(getattr(llm, "_logits_all", False)),
        "context": context,
        "llama_cpp_python": getattr(llama_cpp, "__version__", "unknown"),
        "session_version": getattr(low, "LLAMA_SESSION_VERSION", None),
        "state_seq_version": getattr(low, "LLAMA_STATE_SEQ_VERSION", None),
        "record_format": RECORD_VERSION,
    }


def _ggml_type(value: Any) -> str:
    """A ggml type number (llama_context_params.type_k / type_v) by its name: 1 -> "f16"."""
    import llama_cpp  # the engine's package: imported only when a model is at hand

    low = getattr(llama_cpp, "llama_cpp", llama_cpp)
    for name in dir(low):
        if name.startswith("GGML_TYPE_") and getattr(low, name) == value and name != "GGML_TYPE_COUNT":
            return name[len("GGML_TYPE_"):].lower()
    return str(value)


def cache_identity_fields(llm: Any, identity: Dict[str, Any], block_tokens: int) -> Dict[str, Any]:
    """The memkv.CacheIdentity fields of a Llama whose identity_of() is
    `identity`: the model file's name and SHA-256 (revision "sha256:..."),
    the KV cache types (type_k/type_v), the context's size and batch as the
    layout, the block size, llama-cpp-python's version, and the digest of
    the whole identity_of() as the extra "state" (everything else a state
    depends on: LoRA, RoPE and attention settings, state format)."""
    context = identity.get("context", {})
    kv = (_ggml_type(context["type_k"]) if "type_k" in context else "?",
          _ggml_type(context["type_v"]) if "type_v" in context else "?")
    params = llm.context_params
    return {
        "model": os.path.basename(str(getattr(llm, "model_path", "") or "")) or "unknown",
        "revision": f"sha256:{identity['model_sha256']}",
        "kv_dtype": kv[0] if kv[0] == kv[1] else f"k:{kv[0]},v:{kv[1]}",
        "layout": f"n_ctx{int(params.n_ctx)}-n_batch{int(params.n_batch)}",
        "block_tokens": block_tokens,
        "tp_rank": 0,
        "tp_size": 1,
        "engine": "llama.cpp",
        "engine_version": str(identity.get("llama_cpp_python") or ""),
        "extras": {"state": identity_digest(identity).hex()[:32]},
    }


def identity_digest(identity: Dict[str, Any]) -> bytes:
    """32 bytes naming an identity: SHA-256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True, separators=(",", ":")).encode()).digest()


def chain(root: bytes, tokens: Sequence[int], block_tokens: int) -> List[bytes]:
    """H_1..H_m for the m full blocks of tokens (see the module's docstring)."""
    ids = np.asarray(tokens, dtype="<i4")
    out: List[bytes] = []
    prev = root
    for start in range(0, (len(ids) // block_tokens) * block_tokens, block_tokens):
        h = hashlib.blake2b(prev, digest_size=16)
        h.update(ids[start:start + block_tokens].tobytes())
        prev = h.digest()
        out.append(prev)
    return out


def prompt_hash(root: bytes, tokens: Sequence[int]) -> bytes:
    """P for a whole prompt (see the module's docstring)."""
    h = hashlib.blake2b(np.asarray(tokens, dtype="<i4").tobytes(), digest_size=16, key=root, person=b"memkv-prompt")
    return h.digest()


def prompt_key(namespace: str, h: bytes) -> bytes:
    return f"{namespace}/p/{h.hex()}".encode()


def block_key(namespace: str, h: bytes) -> bytes:
    return f"{namespace}/b/{h.hex()}".encode()


def state_key(namespace: str, h: bytes) -> bytes:
    return f"{namespace}/s/{h.hex()}".encode()


# A pointer: magic, version, tokens the state holds, the record's size, the
# hash naming the record (H_m of the state's last full block).
_POINTER = struct.Struct("<8sHxxIQ16s")
_POINTER_MAGIC = b"MKVLLPTR"
POINTER_VERSION = 1


@dataclass(frozen=True)
class Pointer:
    n_tokens: int
    record_bytes: int
    state_hash: bytes

    def encode(self) -> bytes:
        return _POINTER.pack(_POINTER_MAGIC, POINTER_VERSION, self.n_tokens, self.record_bytes, self.state_hash)

    @staticmethod
    def decode(data: bytes) -> Optional["Pointer"]:
        if data is None or len(data) != _POINTER.size:
            return None
        magic, version, n_tokens, size, h = _POINTER.unpack(data)
        if magic != _POINTER_MAGIC or version != POINTER_VERSION:
            return None
        return Pointer(n_tokens, size, h)


# A state record: this header, then the token ids (int32), the score rows
# (float32, only for a model that keeps logits for every token), the logits
# of the prompt's last token (float32, n_vocab of them, only when the header's
# prompt length is not 0) and the llama.cpp context state as
# llama_state_get_data wrote it. The CRC covers everything after the header,
# so a record cut short or written by another version reads as what it is.
_HEADER = struct.Struct("<8sII32sIIIQQII")
_RECORD_MAGIC = b"MKVLLSTA"
RECORD_VERSION = 2


class RecordError(ValueError):
    """A state record that cannot be used; the message says why (one word first: truncated, format, identity,
    corrupt, tokens)."""


@dataclass
class Record:
    """A decoded state record; its arrays are views into the buffer it was read into."""
    identity: bytes
    input_ids: np.ndarray
    scores: Optional[np.ndarray]
    n_vocab: int
    seed: int
    llama_state: memoryview
    size: int  # the whole record's bytes
    prompt_tokens: int = 0  # the prompt whose last logits the record holds; 0: none
    logits: Optional[np.ndarray] = None  # those logits (n_vocab float32)


def encode_record(identity: bytes, input_ids: np.ndarray, scores: Optional[np.ndarray], n_vocab: int, seed: int,
                  llama_state: Any, prompt_tokens: int = 0, logits: Optional[np.ndarray] = None) -> bytearray:
    """The record as one buffer (the value is sent from it without another
    copy). With prompt_tokens, logits are the n_vocab logits of token
    prompt_tokens - 1 as a computation of input_ids[:prompt_tokens] from
    scratch gives them."""
    ids = np.ascontiguousarray(input_ids, dtype="<i4")
    sc = None if scores is None else np.ascontiguousarray(scores, dtype="<f4")
    rows = 0 if sc is None else sc.shape[0]
    last = None
    if prompt_tokens:
        last = np.ascontiguousarray(logits, dtype="<f4")
        if last.shape != (n_vocab,) or not 0 < prompt_tokens <= len(ids):
            raise ValueError(f"a prompt's logits are {n_vocab} floats for 1 to {len(ids)} prompt tokens; got "
                             f"{last.shape} for {prompt_tokens}")
    state = memoryview(llama_state).cast("B")
    out = bytearray(record_size(len(ids), rows, n_vocab, len(state), bool(prompt_tokens)))
    view = memoryview(out)
    at = _HEADER.size
    for part in (ids, sc, last, state):
        if part is None:
            continue
        raw = memoryview(part).cast("B")
        view[at:at + raw.nbytes] = raw
        at += raw.nbytes
    crc = zlib.crc32(view[_HEADER.size:])
    _HEADER.pack_into(out, 0, _RECORD_MAGIC, RECORD_VERSION, _HEADER.size, identity, len(ids), rows, n_vocab,
                      seed & 0xFFFFFFFFFFFFFFFF, len(state), prompt_tokens, crc)
    return out


def record_size(n_tokens: int, score_rows: int, n_vocab: int, state_bytes: int, prompt_logits: bool = False) -> int:
    return _HEADER.size + n_tokens * 4 + (score_rows + int(prompt_logits)) * n_vocab * 4 + state_bytes


def decode_record(buffer: Any, identity: bytes) -> Record:
    """The record in buffer (bytes-like), checked: RecordError if it is cut
    short, of another format or identity, or its CRC fails."""
    view = memoryview(buffer).cast("B")
    if len(view) < _HEADER.size:
        raise RecordError(f"truncated: {len(view)} bytes, shorter than the {_HEADER.size}-byte header")
    (magic, version, header_len, ident, n_tokens, rows, n_vocab, seed, state_bytes, prompt_tokens,
     crc) = _HEADER.unpack_from(view)
    if magic != _RECORD_MAGIC:
        raise RecordError(f"format: not a MemKV llama.cpp state record (magic {magic!r})")
    if version != RECORD_VERSION or header_len != _HEADER.size:
        raise RecordError(f"format: record version {version}, this memkv reads {RECORD_VERSION}")
    if ident != identity:
        raise RecordError("identity: the record was saved by another model or context configuration")
    if prompt_tokens > n_tokens:
        raise RecordError(f"format: the record names a prompt of {prompt_tokens} tokens and holds {n_tokens}")
    want = record_size(n_tokens, rows, n_vocab, state_bytes, bool(prompt_tokens))
    if len(view) != want:
        raise RecordError(f"truncated: {len(view)} bytes where the header promises {want}")
    body = view[_HEADER.size:]
    if zlib.crc32(body) != crc:
        raise RecordError("corrupt: the record's CRC does not match")
    at = n_tokens * 4
    input_ids = np.frombuffer(body[:at], dtype="<i4").astype(np.intc, copy=False)
    scores = None
    if rows:
        scores = np.frombuffer(body[at:at + rows * n_vocab * 4], dtype="<f4").reshape(rows, n_vocab)
        at += rows * n_vocab * 4
    logits = None
    if prompt_tokens:
        logits = np.frombuffer(body[at:at + n_vocab * 4], dtype="<f4")
        at += n_vocab * 4
    return Record(ident, input_ids, scores, n_vocab, seed, body[at:at + state_bytes], len(view), prompt_tokens, logits)

"""CacheIdentity: what a KV block was computed by (docs/client-library.md,
"Cache identity").

    ident = memkv.CacheIdentity(model="meta-llama/Llama-3.1-8B", kv_dtype="bfloat16",
                                block_tokens=16, tp_rank=0, tp_size=2, engine="vllm")
    client = memkv.Client(servers=[...], auth_key=KEY, identity=ident)

The client sends it on each connection and the server keeps its keys apart
from every other identity's. The tag (16 hex digits of the canonical text's
SHA-256) is the same as the C++ client's CacheIdentity::Tag().
"""

from __future__ import annotations

import hashlib
from typing import Dict, Mapping, Tuple

_HEADER = "memkv-identity 1"
_TEXT_HEAD = ("model", "revision", "kv_dtype", "layout")
_NUMBERS = ("block_tokens", "tp_rank", "tp_size")
_TEXT_TAIL = ("engine", "engine_version")


class CacheIdentity:
    """model, revision, kv_dtype, layout, block_tokens, tp_rank, tp_size,
    engine, engine_version and free-form extras (name -> value). Immutable;
    equal identities have equal tags."""

    __slots__ = ("model", "revision", "kv_dtype", "layout", "block_tokens", "tp_rank", "tp_size", "engine",
                 "engine_version", "_extras")

    def __init__(self, model: str, revision: str = "", kv_dtype: str = "", layout: str = "",
                 block_tokens: int = 0, tp_rank: int = 0, tp_size: int = 1, engine: str = "",
                 engine_version: str = "", extras: Mapping[str, object] | None = None) -> None:
        for name, value in (("model", model), ("revision", revision), ("kv_dtype", kv_dtype), ("layout", layout),
                            ("engine", engine), ("engine_version", engine_version)):
            if not isinstance(value, str):
                raise TypeError(f"CacheIdentity: {name} must be a str, not {type(value).__name__}")
            object.__setattr__(self, name, value)
        for name, value in (("block_tokens", block_tokens), ("tp_rank", tp_rank), ("tp_size", tp_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"CacheIdentity: {name} must be a non-negative int, not {value!r}")
            object.__setattr__(self, name, value)
        if not model:
            raise ValueError("CacheIdentity: model is empty; allowed: the model's name")
        if tp_size < 1 or tp_rank >= tp_size:
            raise ValueError(f"CacheIdentity: tp_rank {tp_rank} with tp_size {tp_size}; "
                             "allowed: tp_size >= 1 and 0 <= tp_rank < tp_size")
        object.__setattr__(self, "_extras", tuple(sorted((str(k), str(v)) for k, v in (extras or {}).items())))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CacheIdentity is immutable")

    @property
    def extras(self) -> Dict[str, str]:
        return dict(self._extras)

    def _key(self) -> Tuple[object, ...]:
        return tuple(getattr(self, n) for n in _TEXT_HEAD + _NUMBERS + _TEXT_TAIL) + (self._extras,)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheIdentity) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in _TEXT_HEAD + _NUMBERS + _TEXT_TAIL)
        return f"CacheIdentity({fields}, extras={self.extras!r}) tag={self.tag}"

    def canonical(self) -> str:
        """The canonical text, as the C++ CacheIdentity::Canonical() writes it."""
        lines = [_HEADER]
        lines += [f"{n}={getattr(self, n)}" for n in _TEXT_HEAD + _NUMBERS + _TEXT_TAIL]
        lines += [f"extra.{k}={v}" for k, v in self._extras]
        return "".join(line + "\n" for line in lines)

    @property
    def tag(self) -> str:
        """16 hex digits: how the server, /metrics and the access log name it."""
        return hashlib.sha256(self.canonical().encode("utf-8")).hexdigest()[:16]

    def options(self) -> Dict[str, object]:
        """The identity as client options (identity_model=..., ...)."""
        out: Dict[str, object] = {f"identity_{n}": getattr(self, n) for n in _TEXT_HEAD + _NUMBERS + _TEXT_TAIL}
        out["identity_extras"] = [f"{k}={v}" for k, v in self._extras]
        return out

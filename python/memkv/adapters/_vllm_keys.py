"""The vLLM adapter's key layout (namespace, layout part, block hash) and
the primary view's rows, read from vLLM's offloading spec and view."""

from __future__ import annotations

import hashlib
from typing import Any, Dict, Tuple


def _attr(obj: Any, *path: str) -> Any:
    for name in path:
        if obj is None:
            return None
        obj = getattr(obj, name, None)
    return obj


def _first(obj: Any, *paths: str) -> Any:
    for path in paths:
        value = _attr(obj, *path.split("."))
        if value is not None:
            return value
    return None


def _token(value: Any) -> str:
    """One printable, slash-free key part."""
    text = str(value)
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in text) or "_"


def default_namespace(offloading_spec: Any) -> str:
    """'vllm/<model>': the model the spec describes (OffloadingConfig.model.name,
    or vllm_config.model_config.model on older specs), '/' turned into '-' and
    anything outside [A-Za-z0-9._-] into '_', cut to 120 bytes with a hash of
    the full name; 'vllm' when the spec names no model."""
    model = _first(offloading_spec, "config.model.name", "vllm_config.model_config.model",
                   "vllm_config.model_config.served_model_name")
    if model is None:
        return "vllm"
    text = str(model)
    name = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "-" if c == "/" else "_" for c in text)
    if len(name) > 120:
        name = f"{name[:100]}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    return f"vllm/{name}"


# Where the parallel sizes sit in vLLM's config objects, newest first.
_TP_PATHS = (("tp", ("config.parallel.tp_size", "vllm_config.parallel_config.tensor_parallel_size")),)
_OTHER_PARALLEL_PATHS = (
    ("pp", ("config.parallel.pp_size", "vllm_config.parallel_config.pipeline_parallel_size")),
    ("pcp", ("config.parallel.pcp_size", "vllm_config.parallel_config.prefill_context_parallel_size")),
    ("dcp", ("config.parallel.dcp_size", "vllm_config.parallel_config.decode_context_parallel_size")),
)


def layout_part(offloading_spec: Any, row_bytes: int) -> str:
    """The parts that make one model's chunk bytes differ from another layout's:
    parallelism, KV dtype, tokens per chunk and the primary row size."""
    parts = []
    for label, paths in _TP_PATHS + _OTHER_PARALLEL_PATHS:
        value = _first(offloading_spec, *paths)
        if value is not None:
            parts.append(f"{label}{_token(value)}")
    dtype = _first(offloading_spec, "config.model.dtype", "vllm_config.cache_config.cache_dtype",
                   "vllm_config.model_config.dtype")
    if dtype is not None:
        parts.append(_token(dtype))
    tokens = _first(offloading_spec, "config.cache.tokens_per_hash", "offloaded_block_size", "block_size")
    per_chunk = _first(offloading_spec, "config.cache.blocks_per_chunk")
    if tokens is not None:
        parts.append(f"t{_token(tokens)}" + (f"x{_token(per_chunk)}" if per_chunk is not None else ""))
    parts.append(f"r{row_bytes}")
    return "-".join(parts)


def block_hash_of(key: bytes) -> bytes:
    """The block hash of an OffloadKey (the hash, then the KV cache group
    index as 4 bytes): what a store's put carries, and its events publish."""
    return key[:-4] if len(key) > 4 else key

def _describe_view(view: Any) -> Tuple[int, int, int, int]:
    """(rows, address of row 0, row stride, row bytes) of the primary view.

    The address is read through a transient numpy view that is dropped at
    once: the adapter holds no export of the memoryview, so vLLM can
    release() it at shutdown."""
    try:
        mv = view if isinstance(view, memoryview) else memoryview(view)
    except TypeError:
        raise TypeError(f"memkv vllm adapter: primary_kv_view must have the buffer protocol "
                        f"(a memoryview of the CPU chunks), not {type(view).__name__}") from None
    if mv.ndim < 2 or mv.shape[0] == 0:
        raise ValueError(f"memkv vllm adapter: primary_kv_view must be 2-D (num_chunks, row_bytes) with at least "
                         f"one row, not of shape {mv.shape}")
    if mv.readonly:
        raise ValueError("memkv vllm adapter: primary_kv_view is read-only; loads write into it")
    import numpy as np  # vLLM's own dependency; not needed to register the tier
    arr = np.asarray(mv)
    try:
        row = arr[0]
        if not row.flags.c_contiguous or row.nbytes == 0:
            raise ValueError(f"memkv vllm adapter: the rows of primary_kv_view must be contiguous and non-empty "
                             f"(shape {mv.shape}, strides {mv.strides})")
        rows, base, stride, row_bytes = int(arr.shape[0]), int(arr.ctypes.data), int(arr.strides[0]), int(row.nbytes)
    finally:
        del arr
    return rows, base, stride, row_bytes


def _current_vllm_config() -> Any:
    """vLLM's current VllmConfig while vLLM builds its engine, else None."""
    try:
        from vllm.config import get_current_vllm_config_or_none
    except Exception:  # noqa: BLE001 - no vLLM, or a release without it
        return None
    try:
        return get_current_vllm_config_or_none()
    except Exception:  # noqa: BLE001
        return None


def identity_fields(offloading_spec: Any, row_bytes: int) -> Dict[str, Any]:
    """The cache identity's fields (memkv.adapters._common.cache_identity)
    from vLLM's offloading spec: the model and its KV dtype
    (OffloadingConfig.model), the revision (the model config vLLM builds
    the engine with, when it is at hand), the tokens of one stored chunk
    (tokens per block hash x blocks per chunk), the parallel rank and
    tensor-parallel size (OffloadingConfig.parallel: the tier runs beside
    the scheduler, rank 0, and a chunk row holds every worker's part), and
    the layout: vLLM's KV cache layout (canonical or not), the other
    parallel sizes and the bytes of a row."""
    model_config = _first(offloading_spec, "vllm_config.model_config") or _attr(_current_vllm_config(),
                                                                               "model_config")
    tokens = _first(offloading_spec, "config.cache.tokens_per_hash", "offloaded_block_size", "block_size")
    per_chunk = _first(offloading_spec, "config.cache.blocks_per_chunk")
    block_tokens = int(tokens) * int(per_chunk or 1) if isinstance(tokens, int) else None
    layout = [str(_first(offloading_spec, "config.kv_cache_layout") or "default")]
    if _first(offloading_spec, "config.canonical_layout"):
        layout.append("canonical")
    for label, paths in _OTHER_PARALLEL_PATHS:
        value = _first(offloading_spec, *paths)
        if value is not None:
            layout.append(f"{label}{_token(value)}")
    layout.append(f"r{row_bytes}")
    tp_size = int(_first(offloading_spec, "config.parallel.tp_size",
                         "vllm_config.parallel_config.tensor_parallel_size") or 1)
    return {
        "model": _first(offloading_spec, "config.model.name", "vllm_config.model_config.model") or
        _attr(model_config, "model"),
        "revision": _attr(model_config, "revision") or _attr(model_config, "tokenizer_revision"),
        "kv_dtype": _first(offloading_spec, "config.model.dtype", "vllm_config.cache_config.cache_dtype",
                           "vllm_config.model_config.dtype"),
        "layout": "-".join(layout),
        "block_tokens": block_tokens,
        "tp_rank": int(_first(offloading_spec, "config.parallel.rank") or 0) % tp_size,
        "tp_size": tp_size,
    }

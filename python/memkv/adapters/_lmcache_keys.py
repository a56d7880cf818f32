"""How the LMCache adapter names chunks and finds their bytes: the text of a
key (CacheEngineKey with its tags, or an L2 key string), its chunk hash, and
the (address, length) of the buffers and MemoryObjs it moves, taken without
copying."""

import ctypes
from typing import Any, List, Mapping, Optional, Tuple, Union

try:
    import numpy as _np
except ImportError:  # numpy is only needed for read-only buffers
    _np = None

Span = Tuple[int, int]


def buffer_span(buffer: Any, writable: bool) -> Span:
    """(address, length) of a C-contiguous buffer, taken without copying.
    ValueError naming what is wrong with the buffer otherwise."""
    view = buffer if isinstance(buffer, memoryview) else memoryview(buffer)
    if not view.c_contiguous:
        raise ValueError("the buffer is not C-contiguous")
    length = view.nbytes
    if length == 0:
        raise ValueError("the buffer is empty")
    if not view.readonly:
        return ctypes.addressof(ctypes.c_char.from_buffer(view)), length
    if writable:
        raise ValueError("the buffer is read-only; a load needs a writable one")
    if _np is None:
        raise ValueError("the buffer is read-only and numpy, needed to take its address, is not installed")
    return int(_np.frombuffer(view, dtype=_np.uint8).ctypes.data), length


def object_span(obj: Any) -> Span:
    """(address, length) of an LMCache MemoryObj's bytes, without copying."""
    length = int(obj.get_size())
    pointer = getattr(obj, "data_ptr", None)
    if callable(pointer):
        pointer = pointer()
    if isinstance(pointer, int) and not isinstance(pointer, bool) and pointer:
        return pointer, length
    tensor = getattr(obj, "tensor", None)
    if tensor is not None and callable(getattr(tensor, "data_ptr", None)):
        return int(tensor.data_ptr()), length
    address, size = buffer_span(obj.byte_array, writable=False)
    return address, min(size, length)


def chunk_hash_of(key: Any) -> Optional[Union[int, bytes]]:
    """LMCache's chunk hash of a key, as a put carries it (and its events
    publish): a CacheEngineKey's chunk_hash (an int from LMCache's token
    database, or bytes, which CacheEngineKey also takes and writes as hex),
    or the hash field of an L2 adapter's key string
    (model@kv_rank@group@hash[@salt]), the bytes its hex spells; None when
    there is none."""
    if isinstance(key, str):  # an L2 key string (str and bytes have no chunk_hash)
        text: Any = key
    elif isinstance(key, bytes):
        text = key.decode(errors="replace")
    else:
        value = getattr(key, "chunk_hash", None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, bytes):
            return value or None
        text = key
    fields = text.split("@") if isinstance(text, str) else []
    if len(fields) >= 4:
        try:
            return bytes.fromhex(fields[3])
        except ValueError:
            return None
    return None


def key_text(key: Any) -> Union[str, bytes]:
    """The string LMCache names a chunk by: CacheEngineKey.to_string(), or the
    L2 adapter's key string as it is.

    A CacheEngineKey's identity (its __eq__ and __hash__) includes its tags:
    the ``lmcache.tag.*`` entries of its request_configs, among them
    ``lmcache.tag.cache_salt``, the request's cache salt. LMCache's
    to_string() writes them after the dtype (``@name%value`` each); a tag it
    did not write (a to_string() that leaves them out) is appended the same
    way, so that two requests LMCache keeps apart never share a MemKV key."""
    if isinstance(key, (str, bytes)):
        return key
    to_string = getattr(key, "to_string", None)
    text = to_string() if callable(to_string) else str(key)
    missing = [f"{name}%{value}" for name, value in _tags(key) if f"@{name}%{value}" not in text]
    return text + "".join("@" + tag for tag in missing) if missing and isinstance(text, str) else text


def _tags(key: Any) -> List[Tuple[str, Any]]:
    """The (name, value) tags of a CacheEngineKey: its ``tags``, else the
    ``lmcache.tag.*`` entries of its request_configs (names without the
    prefix); none for a key with neither."""
    tags = getattr(key, "tags", None)
    if isinstance(tags, (tuple, list)):
        return [(str(t[0]), t[1]) for t in tags if isinstance(t, (tuple, list)) and len(t) == 2]
    configs = getattr(key, "request_configs", None)
    if isinstance(configs, Mapping):
        return [(k[len("lmcache.tag."):], v) for k, v in configs.items()
                if isinstance(k, str) and k.startswith("lmcache.tag.")]
    return []

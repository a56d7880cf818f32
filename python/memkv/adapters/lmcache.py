"""MemKV for LMCache: two entry points over one core (docs/engines/lmcache.md).

MemKVL2Connector
    The connector object of the multi-process LMCache server's
    ``native_plugin`` L2 adapter::

        --l2-adapter '{"type": "native_plugin",
                       "module_path": "memkv.adapters.lmcache",
                       "class_name": "MemKVL2Connector",
                       "adapter_params": {"servers": ["10.0.0.5:9900"], "namespace": "llama3"}}'

    LMCache builds it as ``MemKVL2Connector(**adapter_params)`` and wraps it
    in its NativeConnectorL2Adapter: ``submit_batch_get/set/exists/delete``
    return a future id at once and submit the batch to the client
    (``Client.submit_*``), whose driver threads run it; ``event_fd()`` is the
    client's completion fd, and ``drain_completions()`` turns the client's
    completions into ``(future_id, ok, error, per_key_bools)`` tuples.

MemKVStorageBackend
    An in-process ``StoragePluginInterface`` backend, loaded by LMCache's
    storage plugin launcher::

        storage_plugins: memkv
        extra_config:
          storage_plugin.memkv.module_path: memkv.adapters.lmcache
          storage_plugin.memkv.class_name: MemKVStorageBackend
          storage_plugin.memkv.servers: 10.0.0.5:9900

Both move bytes with the shared adapter core (memkv.adapters._common.PageIO):
zero copy between LMCache's memory (the memoryviews of the L2 adapter, the
MemoryObjs of LocalCPUBackend) and MemKV, one MemKV batch per engine batch
(split at MemKV's 1024 keys per call). A server that is down, slow or
restarted gives misses and failed stores, never an exception out of a data
path method; a value whose size is not the buffer's, or whose checksum
fails, is a miss. A store an overloaded server sheds (Busy) is skipped: its
keys are reported not stored (False; no store callback), counted in
get_stats()'s stores_shed, and logged at INFO at most once per interval.

LMCache is imported only to subclass its StoragePluginInterface; without it
the module still imports (HAVE_LMCACHE is then False) and the backend
derives from a minimal local stand-in.
"""

import collections
import concurrent.futures
import ctypes
import hashlib
import math
import os
import re
import sys
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import memkv

from ._common import (ConfigError, PageIO, load_config, log, make_client, namespaced, positive_int, put_options)

try:
    import numpy as _np
except ImportError:  # numpy is only needed for read-only buffers
    _np = None

try:
    from lmcache.v1.storage_backend.abstract_backend import StoragePluginInterface as _PluginBase
    HAVE_LMCACHE = True
except ImportError:
    HAVE_LMCACHE = False

    class _PluginBase:  # type: ignore[no-redef]
        """Stands in for LMCache's StoragePluginInterface when lmcache is not
        installed: the same constructor, keeping the same attributes."""

        def __init__(self, dst_device: str = "cpu", config: Any = None, metadata: Any = None,
                     local_cpu_backend: Any = None, loop: Any = None) -> None:
            self.dst_device = dst_device
            self.config = config
            self.metadata = metadata
            self.local_cpu_backend = local_cpu_backend
            self.loop = loop

__all__ = ["HAVE_LMCACHE", "MemKVL2Connector", "MemKVStorageBackend", "ConfigError", "chunk_hash_of"]

ENGINE = "lmcache"
MAX_KEY_BYTES = 1024      # MemKV's key limit
MAX_BATCH_KEYS = 1024     # MemKV's keys per batch call
MAX_ASYNC_THREADS = 64    # the client option async_threads' limit
DEFAULT_IO_THREADS = 4
# Settings of this adapter beyond the shared ones (docs/engines/README.md).
EXTRA_SETTINGS = {"io_threads": (positive_int, DEFAULT_IO_THREADS)}
L2_NAMESPACE = "lmcache-l2"
PLUGIN_NAMESPACE = "lmcache-plugin"
# Put batches the storage plugin queues before it drops new ones (per I/O thread).
PUT_BATCHES_PER_THREAD = 8

Span = Tuple[int, int]


def _loud(error: BaseException) -> None:
    """Reports a construction failure where an operator sees it even if the
    engine swallows the exception: CRITICAL on the memkv.adapters logger, and
    the full message on stderr."""
    text = str(error) or type(error).__name__
    log.critical("%s", text)
    try:
        sys.stderr.write(f"CRITICAL {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _buffer_span(buffer: Any, writable: bool) -> Span:
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


def _object_span(obj: Any) -> Span:
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
    address, size = _buffer_span(obj.byte_array, writable=False)
    return address, min(size, length)


def chunk_hash_of(key: Any) -> Optional[Union[int, bytes]]:
    """LMCache's chunk hash of a key, as a put carries it (and its events
    publish): a CacheEngineKey's chunk_hash (an int from LMCache's token
    database, or bytes, which CacheEngineKey also takes and writes as hex),
    or the hash field of an L2 adapter's key string
    (model@kv_rank@group@hash[@salt]), the bytes its hex spells; None when
    there is none."""
    value = getattr(key, "chunk_hash", None)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, bytes):
        return value or None
    text = key.decode(errors="replace") if isinstance(key, bytes) else key
    fields = text.split("@") if isinstance(text, str) else []
    if len(fields) >= 4:
        try:
            return bytes.fromhex(fields[3])
        except ValueError:
            return None
    return None


def _key_text(key: Any) -> Union[str, bytes]:
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


class _Core:
    """What both entry points share: checked settings, the client, PageIO,
    the key layout, and batches split to MemKV's limits; with `threads`, the
    I/O threads of the storage plugin (the L2 connector uses the client's
    own driver threads, io_threads of them unless async_threads is set)."""

    def __init__(self, settings: Optional[Mapping[str, Any]], where: str, default_namespace: str,
                 threads: bool = True) -> None:
        self.config = load_config(ENGINE, settings, where, extra=EXTRA_SETTINGS)
        self.namespace = self.config.namespace or default_namespace
        self.io_threads: int = self.config.extra["io_threads"]
        if not threads:
            self.config.client_options.setdefault("async_threads", min(self.io_threads, MAX_ASYNC_THREADS))
        self.client = make_client(self.config)
        self.io = PageIO(self.client, ENGINE)
        self.pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        if threads:
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=self.io_threads,
                                                              thread_name_prefix="memkv-lmcache")

    def key(self, name: Union[str, bytes]) -> bytes:
        """namespace/name; a name that would make the key longer than MemKV's
        1024 bytes becomes namespace/sha256/<hex of its SHA-256>."""
        out = namespaced(self.namespace, name)
        if len(out) <= MAX_KEY_BYTES:
            return out
        raw = name if isinstance(name, bytes) else name.encode()
        return namespaced(self.namespace, "sha256", hashlib.sha256(raw).hexdigest())

    def get(self, keys: Sequence[bytes], addresses: Sequence[int], lengths: Sequence[int]) -> List[bool]:
        out: List[bool] = []
        for i in range(0, len(keys), MAX_BATCH_KEYS):
            j = i + MAX_BATCH_KEYS
            out += self.io.get(keys[i:j], addresses[i:j], lengths[i:j])
        return out

    def put(self, keys: Sequence[bytes], addresses: Sequence[int], lengths: Sequence[int],
            options: Optional[Sequence[Any]] = None) -> List[bool]:
        out: List[bool] = []
        for i in range(0, len(keys), MAX_BATCH_KEYS):
            j = i + MAX_BATCH_KEYS
            out += self.io.put(keys[i:j], addresses[i:j], lengths[i:j], None if options is None else options[i:j])
        return out

    def exists(self, keys: Sequence[bytes]) -> List[bool]:
        out: List[bool] = []
        for i in range(0, len(keys), MAX_BATCH_KEYS):
            out += self.io.exists(keys[i:i + MAX_BATCH_KEYS])
        return out

    def exists_prefix(self, keys: Sequence[bytes]) -> int:
        """How many keys from keys[0] are present without a gap (PageIO's
        match_prefix, which asks no further than the first slice with a gap)."""
        return self.io.exists_prefix(keys)

    def delete(self, keys: Sequence[bytes]) -> List[bool]:
        return self.io.delete(keys)

    def failed(self, op: str, error: BaseException) -> None:
        """Logs (rate-limited) a failure that PageIO did not see."""
        self.io.errors.warn(f"{op}:{type(error).__name__}", f"memkv {ENGINE}: {op} failed: {error}")

    def close(self, cancel_queued: bool) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=cancel_queued)
        try:
            self.client.close()
        except memkv.Error:
            pass


Completion = Tuple[int, bool, str, Optional[List[bool]]]


class _Submitted:
    """One batch on the client's queue: what its completion is turned into.
    `index[j]` is the position in the caller's keys of submitted key j (keys
    with an unusable buffer are not submitted); the views are kept alive."""

    def __init__(self, fid: int, kind: str, count: int, names: List[bytes], index: List[int],
                 addresses: List[int], lengths: List[int], views: Optional[List[Any]], first_bad: str,
                 options: Optional[List[Any]] = None) -> None:
        self.fid, self.kind, self.count = fid, kind, count
        self.names, self.index, self.addresses, self.lengths = names, index, addresses, lengths
        self.views, self.first_bad, self.options = views, first_bad, options


class MemKVL2Connector:
    """The native connector of LMCache's ``native_plugin`` L2 adapter.

    Keys are LMCache's key strings
    (``model@kv_rank%08x@group%x@hashhex[@salt]``), stored as
    ``<namespace>/<key string>`` (namespace default ``lmcache-l2``). Every
    submit returns a new future id at once and never raises; the batch is
    submitted to the client and runs on its driver threads (``io_threads``
    of them, unless ``async_threads`` is set), zero copy from or into the
    memoryviews' own memory, which the caller keeps alive until the
    completion. ``event_fd()`` is the client's completion fd, readable while
    completions wait; ``drain_completions()`` hands them back:

    - get:    (id, all loaded, error, [loaded per key]); a miss, a value of
              another size than the buffer, or a failure is False
    - set:    (id, all stored, error, [stored per key])
    - exists: (id, True, "", [present per key]); unreachable servers answer False
    - delete: (id, all deleted, error, [deleted or already absent per key])
    """

    def __init__(self, **adapter_params: Any) -> None:
        """Takes the settings of docs/engines/README.md (and io_threads) as
        keywords, the ``adapter_params`` of the --l2-adapter JSON; a setting
        missing there comes from its MEMKV_* variable. A bad one raises
        ConfigError naming it, logged CRITICAL and written to stderr."""
        try:
            self._core = _Core(adapter_params, "adapter_params of --l2-adapter (native_plugin)", L2_NAMESPACE,
                               threads=False)
        except Exception as e:
            _loud(e)
            raise
        self._fd = self._core.client.completion_fd()
        self._lock = threading.Lock()
        self._next_id = 1
        # Guarded by _lock: submissions on the client's queue by its id (None:
        # a wake-up for a completion decided here), and those decided here
        # (a closed connector, arguments that are not sequences).
        self._submitted: Dict[int, Optional[_Submitted]] = {}
        self._local: collections.deque = collections.deque()
        self._closed = False

    @property
    def namespace(self) -> str:
        return self._core.namespace

    def key_of(self, key: Union[str, bytes]) -> bytes:
        """The MemKV key an LMCache key string is stored under."""
        return self._core.key(key)

    def event_fd(self) -> int:
        """The client's completion fd: readable while completions wait."""
        return self._fd

    def submit_batch_get(self, keys: Sequence[str], memoryviews: Sequence[Any]) -> int:
        """Loads keys[i] into memoryviews[i] (exactly its size). Returns the future id."""
        return self._submit("get", keys, memoryviews)

    def submit_batch_set(self, keys: Sequence[str], memoryviews: Sequence[Any]) -> int:
        """Stores the bytes of memoryviews[i] under keys[i]. Returns the future id."""
        return self._submit("set", keys, memoryviews)

    def submit_batch_exists(self, keys: Sequence[str]) -> int:
        """Asks which keys are present. Returns the future id."""
        return self._submit("exists", keys, None)

    def submit_batch_delete(self, keys: Sequence[str]) -> int:
        """Deletes the keys. Returns the future id."""
        return self._submit("delete", keys, None)

    def drain_completions(self) -> List[Completion]:
        """Every completion since the last call, as (future_id, ok, error,
        per_key_bools); takes them off the client's queue, which resets the fd."""
        done = []
        with self._lock:
            closed = self._closed
        if not closed:
            try:
                done = self._core.client.poll_completions()
            except memkv.Error:  # closed meanwhile
                done = []
        with self._lock:
            out: List[Completion] = list(self._local)
            self._local.clear()
            finished = [(c, self._submitted.pop(c.id, None)) for c in done]
        for completion, submitted in finished:
            if submitted is not None:
                out.append(self._finish(submitted, completion.result))
        return out

    def get_stats(self) -> Dict[str, Any]:
        """PageIO's counters and the client's statistics."""
        return self._core.io.stats()

    def close(self) -> None:
        """Lets the running batches finish (each bounded by timeout_ms), drops
        the queued ones, closes the client (and with it the fd). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._core.close(cancel_queued=True)
        with self._lock:
            self._submitted.clear()
            self._fd = -1

    # --- internals -------------------------------------------------------

    def _submit(self, kind: str, keys: Sequence[Any], views: Optional[Sequence[Any]]) -> int:
        with self._lock:
            fid = self._next_id
            self._next_id += 1
            closed = self._closed
        try:
            keys = list(keys)
            views = None if views is None else list(views)
            if closed:
                raise RuntimeError("the connector is closed")
            submitted = self._prepare(fid, kind, keys, views)
            client = self._core.client
            with self._lock:  # recorded before drain_completions can see its completion
                if kind == "get":
                    sid = client.submit_get_into_ptr(submitted.names, submitted.addresses, submitted.lengths)
                elif kind == "set":
                    sid = client.submit_put_ptr(submitted.names, submitted.addresses, submitted.lengths,
                                                options=submitted.options)
                elif kind == "exists":
                    sid = client.submit_exists(submitted.names)
                else:
                    sid = client.submit_delete(submitted.names)
                self._submitted[sid] = submitted
        except Exception as e:  # closed, keys that are not a sequence: a failed batch
            if isinstance(e, memkv.Error):
                self._core.io.failed_submission(kind, e, len(keys) if isinstance(keys, list) else 0)
            n = len(keys) if isinstance(keys, list) else 0
            self._complete_here((fid, False, f"memkv {ENGINE}: {e}", [False] * n))
        return fid

    def _prepare(self, fid: int, kind: str, keys: List[Any], views: Optional[List[Any]]) -> _Submitted:
        """The MemKV keys (and, for get and set, the buffers) of a batch."""
        if views is None:
            names = [self._core.key(_key_text(k)) for k in keys]
            return _Submitted(fid, kind, len(keys), names, list(range(len(keys))), [], [], None, "")
        if len(keys) != len(views):
            raise ValueError(f"{len(keys)} keys but {len(views)} memoryviews")
        index, names, addresses, lengths = [], [], [], []
        # A store carries each chunk's hash; no parent: a batch's keys are
        # not said to be one chain, in order.
        options: Optional[List[Any]] = [] if kind == "set" else None
        first_bad = ""
        for i, (k, v) in enumerate(zip(keys, views)):
            try:
                address, length = _buffer_span(v, kind == "get")
            except (ValueError, TypeError) as e:
                first_bad = first_bad or f"key {k!r}: {e}"
                continue
            index.append(i)
            text = _key_text(k)
            names.append(self._core.key(text))
            addresses.append(address)
            lengths.append(length)
            if options is not None:
                options.append(put_options(block_hash=chunk_hash_of(text)))
        what = "loaded" if kind == "get" else "stored"
        if first_bad:
            self._core.io.errors.warn(f"{what}:buffer", f"memkv {ENGINE}: {what}: unusable buffer, {first_bad}")
        return _Submitted(fid, kind, len(keys), names, index, addresses, lengths, views, first_bad, options)

    def _complete_here(self, completion: Completion) -> None:
        """A completion decided without the client; an empty submission makes
        the client's fd readable for it (when the client is still open)."""
        with self._lock:
            self._local.append(completion)
            if self._closed:
                return
            try:
                self._submitted[self._core.client.submit_exists([])] = None
            except memkv.Error:
                pass

    def _finish(self, s: _Submitted, result: "memkv.BatchResult") -> Completion:
        io = self._core.io
        if s.kind == "exists":
            return s.fid, True, "", io.exists_result(result)
        if s.kind == "delete":
            bools = io.delete_result(result)
            if all(bools):
                return s.fid, True, "", bools
            return (s.fid, False, f"memkv {ENGINE}: delete: {len(bools) - sum(bools)} of {len(bools)} key(s) failed",
                    bools)
        bools = [False] * s.count
        if s.names:
            done = (io.get_result(s.names, s.lengths, result) if s.kind == "get"
                    else io.put_result(s.names, s.lengths, result))
            for i, ok in zip(s.index, done):
                bools[i] = ok
        hits = sum(bools)
        if hits == len(bools):
            return s.fid, True, "", bools
        what = "loaded" if s.kind == "get" else "stored"
        reason = f"; first unusable buffer: {s.first_bad}" if s.first_bad else ""
        if s.kind == "set":
            shed = sum(1 for code in result.statuses if code == memkv.StatusCode.BUSY)
            reason += f"; {shed} shed by a busy server (skipped, not a failure)" if shed else ""
        error = f"memkv {ENGINE}: {what}: {len(bools) - hits} of {len(bools)} key(s) not {what}{reason}"
        return s.fid, False, error, bools


# --- the in-process storage plugin -----------------------------------------

def _itemsize(dtype: Any) -> int:
    size = getattr(dtype, "itemsize", None)
    if isinstance(size, int) and size > 0:
        return size
    import torch  # an older torch.dtype without .itemsize
    return torch.empty((), dtype=dtype).element_size()


class _Layout:
    """The bytes of one full chunk: what a load allocates and what a store must be."""

    def __init__(self, shapes: List[Tuple[int, ...]], dtypes: List[Any], fmt: Any) -> None:
        if len(dtypes) == 1 and len(shapes) > 1:
            dtypes = dtypes * len(shapes)
        if not shapes or len(shapes) != len(dtypes):
            raise ValueError(f"{len(shapes)} shapes but {len(dtypes)} dtypes")
        self.shapes = shapes
        self.dtypes = dtypes
        self.fmt = fmt
        self.nbytes = sum(math.prod(s) * _itemsize(d) for s, d in zip(shapes, dtypes))

    def allocate(self, backend: Any) -> Any:
        one = len(self.shapes) == 1
        # LMCache tells one shape from a list of them by type: a torch.Size is
        # one shape, any other sequence a list (0.5 reads a plain tuple of
        # four dimensions as four shapes).
        shapes = _torch_size(self.shapes[0]) if one else [_torch_size(s) for s in self.shapes]
        dtypes = self.dtypes[0] if one else self.dtypes
        kwargs: Dict[str, Any] = {"eviction": True, "busy_loop": False}
        if self.fmt is not None:
            kwargs["fmt"] = self.fmt
        return backend.allocate(shapes, dtypes, **kwargs)

    def __repr__(self) -> str:
        return f"{self.nbytes} bytes ({' + '.join(str(tuple(s)) for s in self.shapes)}, {self.dtypes}, {self.fmt})"


def _torch_size(shape: Tuple[int, ...]) -> Any:
    """`shape` as a torch.Size where torch imports (LMCache needs it), else as it is."""
    try:
        import torch
    except ImportError:
        return shape
    return torch.Size(shape)


def _chunk_format(use_mla: bool) -> Any:
    try:
        from lmcache.v1.memory_management import MemoryFormat
    except ImportError:
        return None
    return MemoryFormat.KV_MLA_FMT if use_mla else MemoryFormat.KV_2LTD


def _layout_of(metadata: Any) -> Optional[_Layout]:
    """A full chunk's layout from LMCache's metadata: get_shapes()/get_dtypes()
    where it has them, else kv_shape (num_layers, 2 or 1, chunk_size,
    num_heads, head_size) and kv_dtype."""
    if metadata is None:
        return None
    fmt = _chunk_format(bool(getattr(metadata, "use_mla", False)))
    try:
        if callable(getattr(metadata, "get_shapes", None)) and callable(getattr(metadata, "get_dtypes", None)):
            return _Layout([tuple(s) for s in metadata.get_shapes()], list(metadata.get_dtypes()), fmt)
        kv = tuple(metadata.kv_shape)
        return _Layout([(kv[1], kv[0], kv[2], kv[3] * kv[4])], [metadata.kv_dtype], fmt)
    except Exception as e:  # metadata of another shape: learn the layout from the first store
        log.warning("memkv %s: no chunk layout in LMCache's metadata (%s); it is taken from the first store",
                    ENGINE, e)
        return None


def _layout_from_object(obj: Any) -> _Layout:
    meta = getattr(obj, "metadata", None) or getattr(obj, "meta", None)
    fmt = getattr(meta, "fmt", None)
    return _Layout([tuple(obj.get_shape())], [obj.get_dtype()], fmt)


def _plugin_settings(config: Any, module: str, class_name: str) -> Tuple[str, Dict[str, Any]]:
    """(plugin name, settings): the entry of extra_config whose
    storage_plugin.<name>.module_path/class_name load this class, and its
    other storage_plugin.<name>.* keys."""
    extra = getattr(config, "extra_config", None) or {}
    if not isinstance(extra, Mapping):
        raise ConfigError(f"memkv {ENGINE} adapter: extra_config must be a mapping, not {type(extra).__name__}")
    enabled = getattr(config, "storage_plugins", None)
    if isinstance(enabled, str):
        enabled = [s.strip() for s in enabled.split(",")]
    names = []
    for k, v in extra.items():
        m = re.fullmatch(r"storage_plugin\.(.+)\.class_name", str(k))
        if m and v == class_name and extra.get(f"storage_plugin.{m.group(1)}.module_path") == module:
            if not enabled or m.group(1) in enabled:
                names.append(m.group(1))
    if len(names) > 1:
        raise ConfigError(f"memkv {ENGINE} adapter: storage_plugins {', '.join(sorted(names))} all load "
                          f"{module}.{class_name}; list it once (one MemKV backend per LMCache engine)")
    name = names[0] if names else "memkv"
    prefix = f"storage_plugin.{name}."
    settings = {str(k)[len(prefix):]: v for k, v in extra.items()
                if str(k).startswith(prefix) and str(k)[len(prefix):] not in ("module_path", "class_name")}
    return name, settings


class MemKVStorageBackend(_PluginBase):
    """LMCache StoragePluginInterface backend: full KV chunks in MemKV.

    A chunk is stored under ``<namespace>/<CacheEngineKey.to_string()>``
    (namespace default ``lmcache-plugin``) as its raw bytes, straight from the
    LocalCPUBackend MemoryObj (zero copy); a load allocates the chunk's
    MemoryObj from LocalCPUBackend and reads straight into it. Stores run on
    the backend's own threads; lookups and blocking loads on the caller's.
    Only chunks of the full chunk size are stored (the layout comes from
    LMCache's metadata): a value of any other size is never written, and
    would be a miss on load.
    """

    def __init__(self, dst_device: str = "cpu", config: Any = None, metadata: Any = None,
                 local_cpu_backend: Any = None, loop: Any = None) -> None:
        """Called by LMCache with keywords config, dst_device, metadata,
        local_cpu_backend and loop. Settings: extra_config
        storage_plugin.<name>.<setting>, else MEMKV_*. A misconfiguration
        raises ConfigError after logging it CRITICAL and writing it to
        stderr (LMCache itself only logs a plugin's failure and goes on)."""
        try:
            super().__init__(dst_device=dst_device, config=config, metadata=metadata,
                             local_cpu_backend=local_cpu_backend, loop=loop)
            self.plugin_name, settings = _plugin_settings(config, __name__, type(self).__name__)
            where = f"extra_config (storage_plugin.{self.plugin_name}.*)"
            if local_cpu_backend is None and getattr(metadata, "role", None) != "scheduler":
                raise ConfigError(f"memkv {ENGINE} adapter: the storage plugin '{self.plugin_name}' stages loads "
                                  "in LMCache's LocalCPUBackend, and there is none: set max_local_cpu_size > 0")
            self._core = _Core(settings, where, PLUGIN_NAMESPACE)
        except Exception as e:
            _loud(e)
            raise
        self._layout = _layout_of(metadata)
        self._lock = threading.Lock()
        self._in_flight: Dict[bytes, int] = {}
        self._queued_puts = 0
        self._max_queued_puts = self._core.io_threads * PUT_BATCHES_PER_THREAD
        self._closed = False
        log.info("memkv %s: storage plugin '%s' on %s, namespace '%s', chunk %s", ENGINE, self.plugin_name,
                 ",".join(self._core.config.servers), self._core.namespace, self._layout)

    def __str__(self) -> str:
        return type(self).__name__

    @property
    def namespace(self) -> str:
        return self._core.namespace

    def key_of(self, key: Any) -> bytes:
        """The MemKV key a CacheEngineKey is stored under."""
        return self._core.key(_key_text(key))

    # --- lookups -----------------------------------------------------------

    def contains(self, key: Any, pin: bool = False) -> bool:
        """Whether the chunk is in MemKV (False when it cannot be asked). Not pinned."""
        try:
            return self._core.exists([self.key_of(key)])[0]
        except Exception as e:
            self._core.failed("exists", e)
            return False

    def batched_contains(self, keys: List[Any], pin: bool = False) -> int:
        """How many chunks, from keys[0], are in MemKV without a gap."""
        try:
            return self._core.exists_prefix([self.key_of(k) for k in keys])
        except Exception as e:
            self._core.failed("exists", e)
            return 0

    async def batched_async_contains(self, lookup_id: str, keys: List[Any], pin: bool = False) -> int:
        """batched_contains on an I/O thread, for LMCache's event loop."""
        import asyncio
        try:
            return await asyncio.wrap_future(self._core.pool.submit(self.batched_contains, keys, pin))
        except Exception as e:
            self._core.failed("exists", e)
            return 0

    def exists_in_put_tasks(self, key: Any) -> bool:
        """Whether a store of the key is queued or running."""
        with self._lock:
            return self.key_of(key) in self._in_flight

    # --- stores ------------------------------------------------------------

    def batched_submit_put_task(self, keys: Sequence[Any], objs: List[Any], transfer_spec: Any = None,
                                on_complete_callback: Optional[Callable[[Any], None]] = None
                                ) -> Optional[List[concurrent.futures.Future]]:
        """Queues the store of each full-size chunk not already being stored
        and returns [its future] (result: stored per queued key), or None
        when nothing was queued. The MemoryObjs are held (ref_count_up) until
        their store is done; on_complete_callback(key) runs for each key
        stored."""
        try:
            return self._submit_put(list(keys), list(objs), on_complete_callback)
        except Exception as e:
            self._core.failed("put", e)
            return None

    def _submit_put(self, keys: List[Any], objs: List[Any],
                    callback: Optional[Callable[[Any], None]]) -> Optional[List[concurrent.futures.Future]]:
        if len(keys) != len(objs):
            raise ValueError(f"{len(keys)} keys but {len(objs)} memory objects")
        if self._layout is None and objs:
            self._layout = _layout_from_object(objs[0])
            log.info("memkv %s: chunk layout taken from the first store: %s", ENGINE, self._layout)
        want = self._layout.nbytes if self._layout is not None else None
        batch: List[Tuple[Any, bytes, Any]] = []
        options: List[Any] = []
        names = set()
        parent: Optional[Tuple[bytes, Optional[Union[int, bytes]]]] = None  # the previous chunk of the chain
        with self._lock:
            if self._closed:
                return None
            if self._queued_puts >= self._max_queued_puts:
                self._core.io.errors.warn("put:backlog", f"memkv {ENGINE}: {self._queued_puts} store batches "
                                                         "already queued (the servers are slow or down); "
                                                         f"{len(keys)} chunk(s) not stored")
                return None
            for key, obj in zip(keys, objs):
                name = self.key_of(key)
                # LMCache hands one request's chunks in token order: each
                # chunk's parent is the one before it, stored or not here.
                chunk_hash = chunk_hash_of(key)
                previous, parent = parent, (name, chunk_hash)
                size = obj.get_size()
                if size != want:
                    self._core.io.errors.warn("put:size", f"memkv {ENGINE}: a chunk of {size} bytes is not the "
                                                          f"full chunk's {want} (a partial last chunk, or a "
                                                          "layout this backend does not store): not stored")
                    continue
                if name in self._in_flight or name in names:
                    continue
                names.add(name)
                batch.append((key, name, obj))
                options.append(put_options(block_hash=chunk_hash, parent_key=previous[0] if previous else None,
                                           parent_hash=previous[1] if previous else None))
            if not batch:
                return None
            for _, name, obj in batch:
                obj.ref_count_up()
                self._in_flight[name] = self._in_flight.get(name, 0) + 1
            self._queued_puts += 1
        try:
            return [self._core.pool.submit(self._put_job, batch, callback, options)]
        except Exception:
            self._put_done(batch)
            raise

    def _put_job(self, batch: List[Tuple[Any, bytes, Any]], callback: Optional[Callable[[Any], None]],
                 options: Optional[List[Any]] = None) -> List[bool]:
        stored = [False] * len(batch)
        try:
            spans = [_object_span(obj) for _, _, obj in batch]
            stored = self._core.put([name for _, name, _ in batch], [a for a, _ in spans], [n for _, n in spans],
                                    options)
        except Exception as e:
            self._core.failed("put", e)
        finally:
            self._put_done(batch)
        if callback is not None:
            for (key, _, _), ok in zip(batch, stored):
                if ok:
                    try:
                        callback(key)
                    except Exception as e:
                        log.warning("memkv %s: LMCache's store callback failed for %s: %s", ENGINE, key, e)
        return stored

    def _put_done(self, batch: List[Tuple[Any, bytes, Any]]) -> None:
        with self._lock:
            self._queued_puts -= 1
            for _, name, _ in batch:
                left = self._in_flight.get(name, 1) - 1
                if left > 0:
                    self._in_flight[name] = left
                else:
                    self._in_flight.pop(name, None)
        for _, _, obj in batch:
            obj.ref_count_down()

    # --- loads -------------------------------------------------------------

    def _load(self, keys: List[Any]) -> List[Optional[Any]]:
        """One MemoryObj per key (allocated from LocalCPUBackend, owned by the
        caller), or None: a miss, a value of another size, a failure, or no
        memory to allocate."""
        out: List[Optional[Any]] = [None] * len(keys)
        layout, backend = self._layout, self.local_cpu_backend
        if not keys or layout is None or backend is None:
            return out
        objs: List[Tuple[int, Any]] = []
        try:
            for i in range(len(keys)):
                obj = layout.allocate(backend)
                if obj is None:
                    self._core.io.errors.warn("get:allocate", f"memkv {ENGINE}: LocalCPUBackend has no room for "
                                                              f"{len(keys) - i} chunk(s) of {layout.nbytes} "
                                                              "bytes; they are misses")
                    break
                objs.append((i, obj))
            spans = [_object_span(obj) for _, obj in objs]
            loaded = self._core.get([self.key_of(keys[i]) for i, _ in objs], [a for a, _ in spans],
                                    [layout.nbytes] * len(objs))
        except Exception as e:
            self._core.failed("get", e)
            loaded = [False] * len(objs)
        for (i, obj), ok in zip(objs, loaded):
            if ok:
                out[i] = obj
            else:
                obj.ref_count_down()
        return out

    def get_blocking(self, key: Any) -> Optional[Any]:
        """The chunk as a new MemoryObj, or None."""
        return self._load([key])[0]

    def batched_get_blocking(self, keys: List[Any]) -> List[Optional[Any]]:
        """One MemoryObj or None per key, in one MemKV batch."""
        return self._load(list(keys))

    def get_non_blocking(self, key: Any, location: Optional[str] = None) -> Optional[concurrent.futures.Future]:
        """A Future of get_blocking(key), run on an I/O thread."""
        try:
            return self._core.pool.submit(self.get_blocking, key)
        except Exception as e:
            self._core.failed("get", e)
            return None

    async def batched_get_non_blocking(self, lookup_id: str, keys: List[Any], transfer_spec: Any = None
                                       ) -> List[Any]:
        """The loaded prefix: MemoryObjs of keys[0..n) up to the first key
        that did not load (later ones are released)."""
        import asyncio
        try:
            objs = await asyncio.wrap_future(self._core.pool.submit(self._load, list(keys)))
        except Exception as e:
            self._core.failed("get", e)
            return []
        prefix: List[Any] = []
        for obj in objs:
            if obj is None:
                break
            prefix.append(obj)
        for obj in objs[len(prefix):]:
            if obj is not None:
                obj.ref_count_down()
        return prefix

    def submit_prefetch_task(self, key: Any) -> bool:
        """No prefetching: loads are done on request."""
        return False

    # --- the rest of the interface ------------------------------------------

    def pin(self, key: Any) -> bool:
        """MemKV evicts by its own policy; nothing is pinned."""
        return False

    def unpin(self, key: Any) -> bool:
        """Nothing is pinned."""
        return False

    def remove(self, key: Any, force: bool = True) -> bool:
        """Deletes the chunk: True when it is gone (or was absent)."""
        try:
            return self._core.delete([self.key_of(key)])[0]
        except Exception as e:
            self._core.failed("delete", e)
            return False

    def batched_remove(self, keys: List[Any], force: bool = True) -> int:
        try:
            return sum(self._core.delete([self.key_of(k) for k in keys]))
        except Exception as e:
            self._core.failed("delete", e)
            return 0

    def get_allocator_backend(self) -> Any:
        """LocalCPUBackend: stores take its MemoryObjs as they are."""
        return self.local_cpu_backend

    def touch_cache(self) -> None:
        """No local eviction policy to update."""

    def get_stats(self) -> Dict[str, Any]:
        return self._core.io.stats()

    def close(self) -> None:
        """Finishes the queued stores (each bounded by timeout_ms), then
        closes the client. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._core.close(cancel_queued=False)

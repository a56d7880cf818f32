"""MemKVStorageBackend: LMCache's in-process StoragePluginInterface backend
(docs/engines/lmcache.md), and the chunk layout it stores.

Blocking calls (contains, batched_contains, get_blocking,
batched_get_blocking, remove) run their MemKV batch on the caller's thread.
Stores, non-blocking loads and async lookups are submitted to the client's
asynchronous queue (its driver threads run them) and handed back as
concurrent.futures.Futures, which the backend's CompletionFutures completes
from the client's completions (awaited through asyncio.wrap_future on
LMCache's event loop).

LMCache is imported only to subclass its StoragePluginInterface; without it
the backend derives from a minimal local stand-in (HAVE_LMCACHE False).
"""

import asyncio
import concurrent.futures
import math
import re
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import memkv

from ._common import ConfigError, dtype_name, log, prefix_restores, put_options
from ._completions import CompletionFutures
from ._lmcache_core import ENGINE, MODULE, PLUGIN_NAMESPACE, Core, loud
from ._lmcache_keys import chunk_hash_of, key_text, object_span

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

# Put batches the backend keeps queued or running before it drops new ones,
# per driver thread of the client (async_threads).
PUT_BATCHES_PER_THREAD = 8

Loaded = List[Optional[Any]]


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
    MemoryObj from LocalCPUBackend and reads straight into it. Stores,
    non-blocking loads and async lookups are submissions to the client
    (its driver threads run them); blocking lookups and loads run on the
    caller's thread.
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
            self.plugin_name, settings = _plugin_settings(config, MODULE, type(self).__name__)
            where = f"extra_config (storage_plugin.{self.plugin_name}.*)"
            if local_cpu_backend is None and getattr(metadata, "role", None) != "scheduler":
                raise ConfigError(f"memkv {ENGINE} adapter: the storage plugin '{self.plugin_name}' stages loads "
                                  "in LMCache's LocalCPUBackend, and there is none: set max_local_cpu_size > 0")
            self._core = Core(settings, where, PLUGIN_NAMESPACE, identity_fields(metadata))
        except Exception as e:
            loud(e)
            raise
        self._layout = _layout_of(metadata)
        self._lock = threading.Lock()
        self._in_flight: Dict[bytes, int] = {}
        self._queued_puts = 0
        self._max_queued_puts = self._core.async_threads * PUT_BATCHES_PER_THREAD
        # Submissions go through the PageIO's client (the one its counters
        # and logs are of).
        self._futures = CompletionFutures(lambda: self._core.io.client, f"{ENGINE} plugin '{self.plugin_name}'")
        self._closed = False
        log.info("memkv %s: storage plugin '%s' on %s, namespace '%s', chunk %s, identity %r", ENGINE,
                 self.plugin_name, ",".join(self._core.config.servers), self._core.namespace, self._layout,
                 self._core.identity)

    def __str__(self) -> str:
        return type(self).__name__

    @property
    def namespace(self) -> str:
        return self._core.namespace

    def key_of(self, key: Any) -> bytes:
        """The MemKV key a CacheEngineKey is stored under."""
        return self._core.key(key_text(key))

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
        """How many chunks, from keys[0], are in MemKV without a gap: one
        exists batch submitted to the client and awaited on LMCache's loop."""
        try:
            names = [self.key_of(k) for k in keys]
            if not names:
                return 0
            future = self._futures.submit(lambda client: client.submit_exists(names), self._present_prefix)
            return await asyncio.wrap_future(future)
        except Exception as e:
            self._core.failed("exists", e)
            return 0

    def _present_prefix(self, result: Optional["memkv.BatchResult"]) -> int:
        if result is None:
            return 0
        present = self._core.io.exists_result(result)
        return present.index(False) if False in present else len(present)

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
            spans = [object_span(obj) for _, _, obj in batch]
            mkeys = [name for _, name, _ in batch]
            addresses, lengths = [a for a, _ in spans], [n for _, n in spans]
            return [self._futures.submit(
                lambda client: client.submit_put_ptr(mkeys, addresses, lengths, options=options),
                lambda result: self._stored(batch, lengths, callback, result))]
        except Exception as e:
            self._put_done(batch)
            if isinstance(e, memkv.Error):  # refused by the client (closed): counted as PageIO counts failures
                self._core.io.failed_submission("put", e, len(batch))
                return None
            raise

    def _stored(self, batch: List[Tuple[Any, bytes, Any]], lengths: List[int],
                callback: Optional[Callable[[Any], None]], result: Optional["memkv.BatchResult"]) -> List[bool]:
        """A store's completion: stored per key; the objects released, then
        LMCache's callback for each key stored."""
        stored = [False] * len(batch)
        try:
            if result is None:
                self._core.failed("put", memkv.FailedPrecondition("the client was closed first"))
            else:
                stored = self._core.io.put_result([name for _, name, _ in batch], lengths, result)
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

    def _allocate(self, keys: List[Any]) -> List[Tuple[int, Any]]:
        """(index, MemoryObj) for keys[0..n) from LocalCPUBackend, n up to where
        it has no room (those keys are misses); none without a layout or a
        LocalCPUBackend."""
        layout, backend = self._layout, self.local_cpu_backend
        objs: List[Tuple[int, Any]] = []
        if not keys or layout is None or backend is None:
            return objs
        try:
            for i in range(len(keys)):
                obj = layout.allocate(backend)
                if obj is None:
                    self._core.io.errors.warn("get:allocate", f"memkv {ENGINE}: LocalCPUBackend has no room for "
                                                              f"{len(keys) - i} chunk(s) of {layout.nbytes} "
                                                              "bytes; they are misses")
                    break
                objs.append((i, obj))
        except Exception as e:
            self._core.failed("get", e)
            for _, obj in objs:
                obj.ref_count_down()
            return []
        return objs

    def _targets(self, keys: List[Any], objs: List[Tuple[int, Any]]) -> Tuple[List[bytes], List[int]]:
        """The MemKV keys of the allocated objects and their addresses."""
        return [self.key_of(keys[i]) for i, _ in objs], [object_span(obj)[0] for _, obj in objs]

    @staticmethod
    def _kept(count: int, objs: List[Tuple[int, Any]], loaded: Sequence[bool]) -> Loaded:
        """The caller's objects: those loaded, by key; the others released."""
        out: Loaded = [None] * count
        for (i, obj), ok in zip(objs, loaded):
            if ok:
                out[i] = obj
            else:
                obj.ref_count_down()
        return out

    def _load(self, keys: List[Any]) -> Loaded:
        """One MemoryObj per key (allocated from LocalCPUBackend, owned by the
        caller), or None: a miss, a value of another size, a failure, or no
        memory to allocate. On the caller's thread."""
        objs = self._allocate(keys)
        try:
            names, addresses = self._targets(keys, objs)
            loaded = self._core.get(names, addresses, [self._layout.nbytes] * len(objs)) if objs else []
        except Exception as e:
            self._core.failed("get", e)
            loaded = [False] * len(objs)
        self._report(len(keys), objs, loaded)
        return self._kept(len(keys), objs, loaded)

    def _report(self, count: int, objs: List[Tuple[int, Any]], loaded: Sequence[bool]) -> None:
        """A load's chunks in time or late (PageIO.report_restores): LMCache
        uses the leading run of chunks a load brings and recomputes from the
        first one missing, so the chunks of that run are in time and any
        loaded after a gap late."""
        by_key = [False] * count
        for (i, _), ok in zip(objs, loaded):
            by_key[i] = bool(ok)
        self._core.io.report_restores(*prefix_restores(by_key))

    def _load_async(self, keys: List[Any], pick: Callable[[Loaded], Any] = lambda objs: objs,
                    report: bool = True) -> concurrent.futures.Future:
        """_load as one batch submitted to the client: a Future of pick(its
        result). Raises when the batch cannot be submitted (its objects
        released). report=False: the caller reports the restore itself."""
        objs = self._allocate(keys)
        if not objs:
            done: concurrent.futures.Future = concurrent.futures.Future()
            done.set_result(pick([None] * len(keys)))
            return done
        nbytes = self._layout.nbytes

        def settle(result: Optional["memkv.BatchResult"]) -> Any:
            loaded = [False] * len(objs)
            try:
                if result is not None:
                    loaded = self._core.io.get_result(names, nbytes, result)
            except Exception as e:
                self._core.failed("get", e)
            if report:
                self._report(len(keys), objs, loaded)
            return pick(self._kept(len(keys), objs, loaded))

        try:
            names, addresses = self._targets(keys, objs)
            return self._futures.submit(lambda client: client.submit_get_into_ptr(names, addresses, nbytes), settle)
        except Exception:
            self._kept(0, objs, [False] * len(objs))
            raise

    def get_blocking(self, key: Any) -> Optional[Any]:
        """The chunk as a new MemoryObj, or None."""
        return self._load([key])[0]

    def batched_get_blocking(self, keys: List[Any]) -> List[Optional[Any]]:
        """One MemoryObj or None per key, in one MemKV batch."""
        return self._load(list(keys))

    def get_non_blocking(self, key: Any, location: Optional[str] = None) -> Optional[concurrent.futures.Future]:
        """A Future of get_blocking(key): the load is submitted to the client
        and the Future completed from its completion."""
        try:
            return self._load_async([key], lambda objs: objs[0])
        except Exception as e:
            self._core.failed("get", e)
            return None

    async def batched_get_non_blocking(self, lookup_id: str, keys: List[Any], transfer_spec: Any = None
                                       ) -> List[Any]:
        """The loaded prefix: MemoryObjs of keys[0..n) up to the first key
        that did not load (later ones are released). One batch submitted to
        the client, awaited on the caller's loop; cancelled, the objects
        are released when the batch completes."""
        try:
            loading = self._load_async(list(keys), report=False)
        except Exception as e:
            self._core.failed("get", e)
            return []
        try:
            objs = await asyncio.wrap_future(loading)
        except asyncio.CancelledError:
            # LMCache stopped waiting: whatever the batch loads came late.
            loading.add_done_callback(lambda f: self._late(f.result()) if f.exception() is None else None)
            raise
        except Exception as e:
            self._core.failed("get", e)
            return []
        prefix: List[Any] = []
        for obj in objs:
            if obj is None:
                break
            prefix.append(obj)
        self._core.io.report_restores(*prefix_restores([obj is not None for obj in objs]))
        _release(objs[len(prefix):])
        return prefix

    def _late(self, objs: Sequence[Optional[Any]]) -> None:
        """The objects of a load LMCache stopped waiting for: reported late, released."""
        self._core.io.report_restores(0, sum(1 for obj in objs if obj is not None))
        _release(objs)

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
        """Finishes the queued stores and loads (each bounded by timeout_ms),
        then closes the client. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._futures.close()
        self._core.close()


def identity_fields(metadata: Any) -> Dict[str, Any]:
    """The cache identity's fields from LMCache's engine metadata: model_name,
    kv_dtype, chunk_size (the tokens of a chunk), worker_id and world_size
    (as LMCache keys chunks: one worker's part each), and the layout (the
    memory format, kv_shape, MLA or not). Empty without metadata."""
    if metadata is None:
        return {}
    shape = getattr(metadata, "kv_shape", None)
    use_mla = bool(getattr(metadata, "use_mla", False))
    fmt = getattr(metadata, "fmt", None) or _chunk_format(use_mla)
    layout = [getattr(fmt, "name", None) or str(fmt or ("mla" if use_mla else "kv"))]
    if shape is not None:
        layout.append("x".join(str(d) for d in tuple(shape)))
    world = getattr(metadata, "world_size", None)
    return {"model": getattr(metadata, "model_name", None), "kv_dtype": dtype_name(getattr(metadata, "kv_dtype", None)),
            "layout": "/".join(layout), "block_tokens": getattr(metadata, "chunk_size", None),
            "tp_rank": getattr(metadata, "worker_id", None) if world else None, "tp_size": world}


def _release(objs: Sequence[Optional[Any]]) -> None:
    for obj in objs:
        if obj is not None:
            obj.ref_count_down()

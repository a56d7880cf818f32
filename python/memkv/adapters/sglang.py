"""SGLang HiCache storage backend on MemKV (docs/engines/sglang.md).

SGLang loads it as a "dynamic" L3 storage backend:

    python -m sglang.launch_server ... --enable-hierarchical-cache \\
        --hicache-storage-backend dynamic \\
        --hicache-storage-backend-extra-config '{"backend_name": "memkv",
            "module_path": "memkv.adapters.sglang", "class_name": "MemKVHiCacheStorage",
            "interface_v1": 1, "servers": ["10.0.0.5:9900"], "auth_key": "..."}'

SGLang constructs `MemKVHiCacheStorage(storage_config, kwargs)` and calls
`register_mem_pool_host(host_pool)` right after. With "interface_v1": 1 its
cache controller moves pages through `batch_get_v1` / `batch_set_v1`: the
pages' addresses come from `host_pool.get_page_buffer_meta(host_indices)` and
go straight to the MemKV client (`batch_get_into_ptr` / `batch_put_ptr`), so
nothing is copied in Python. Without it SGLang falls back to `batch_get` /
`batch_set` on flat page tensors, which this backend also serves.

Keys (every one starts with the namespace):

    <namespace>/<page hash>/<model>/[tp<r>of<n>/]pp<r>of<n>/[cp<r>of<n>/]<layout>/<page bytes>B/<part>

A page of a request SGLang hands a request namespace for (its extra key or
cache salt, in the HiCacheStorageExtraInfo of the call) has one more part
after the namespace, `ns-<digest of the extra key and cache salt>/`, so that
two tenants' pages of the same tokens never share a key; a page without one
keeps the layout above (see "Keeping tenants apart" in docs/engines/sglang.md).

`<part>` names one entry of get_page_buffer_meta for a page: `k` and `v`
(MHA, page-first layouts), `k<l>` and `v<l>` (MHA, layer_first), `kv` (MLA,
page-first), `l<l>` (MLA, layer_first), `c<i>` (other pools), or `page` for
the flat pages of the non-zero-copy path. The tp part is left out for MLA
models, whose pages every TP rank holds whole: only TP rank 0 stores them and
every rank reads them. A page is a hit only when all of its parts are.

A store an overloaded server sheds (Busy) is skipped, not failed: the page is
reported not stored (False from batch_set_v1 / batch_set, as for any page not
backed up), counted in memkv_stats()'s stores_shed and logged at INFO at most
once per interval; loads are unaffected.

SGLang is imported when it is installed; otherwise a minimal local base class
stands in, so that this module imports (for tests and benchmarks) without it.
"""

import ctypes
import hashlib
import json
import logging
import re
import threading
import time
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import memkv

from ._common import (AdapterConfig, ConfigError, PageIO, cache_identity, chained_options, dtype_name, load_config,
                      make_client, namespaced, package_version, prefix_restores)

log = logging.getLogger("memkv.adapters.sglang")

ENGINE = "sglang"
WHERE = "--hicache-storage-backend-extra-config"

try:  # The real base class, so that SGLang's factory accepts the class (issubclass check).
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage

    SGLANG_AVAILABLE = True
    _SGLANG_IMPORT_ERROR: Optional[str] = None
except Exception as _e:  # noqa: BLE001 - SGLang absent or not importable here: run without it
    SGLANG_AVAILABLE = False
    _SGLANG_IMPORT_ERROR = f"{type(_e).__name__}: {_e}"

    class HiCacheStorage:  # type: ignore[no-redef]
        """Stand-in for sglang.srt.mem_cache.hicache_storage.HiCacheStorage,
        used only when SGLang cannot be imported."""

        def register_mem_pool_host(self, mem_pool_host: Any) -> None:
            self.mem_pool_host = mem_pool_host

        def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
            if not hasattr(self, "registered_pools"):
                self.registered_pools = {}
            self.registered_pools[host_pool_name] = host_pool

        def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
            raise NotImplementedError()

        def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
            raise NotImplementedError()

        def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
            for i, key in enumerate(keys):
                if not self.exists(key):  # type: ignore[attr-defined]
                    return i
            return len(keys)

        def clear(self) -> None:
            pass

        def get_stats(self) -> Any:
            return None


# Keys SGLang itself reads from --hicache-storage-backend-extra-config
# (docs/engines/sglang.md lists where, and for which SGLang). Recent releases
# pop the prefetch_*, hicache_storage_pass_prefix_keys and tp_lcm_size keys
# before the backend sees the dict, older ones pass some of them through; the
# dynamic factory always passes backend_name, module_path, class_name and
# interface_v1; "allocator" (the host pool's allocator, e.g. "shm") is read by
# the host pool and left in the dict. They are SGLang's, not MemKV's settings:
# stripped here before the common parser sees the dict, never checked, and
# they change nothing in this backend.
SGLANG_KEYS = frozenset({
    "backend_name", "module_path", "class_name", "interface_v1", "allocator",
    "prefetch_threshold", "prefetch_timeout_base", "prefetch_timeout_per_ki_token", "prefetch_timeout_max",
    "hicache_storage_pass_prefix_keys", "tp_lcm_size",
})

# SGLang's prefetch timeout when its extra config does not set one (its
# defaults): base + per_ki_token seconds per 1024 tokens of the prefetch.
_PREFETCH_TIMEOUT_BASE_S = 1.0
_PREFETCH_TIMEOUT_PER_KI_TOKEN_S = 0.25

# The most entries the metrics windows keep between two get_stats() calls.
_METRICS_WINDOW = 4096
_MODEL_TAG_MAX = 120


def model_tag(model_name: Optional[str]) -> str:
    """The model name as one key part: '/' becomes '-', anything outside
    [A-Za-z0-9._-] becomes '_'; longer than 120 bytes, it is cut and a hash of
    the full name appended, so that two long names stay apart."""
    if not model_name:
        return "unknown-model"
    tag = re.sub(r"[^A-Za-z0-9._-]", "_", "-".join(str(model_name).split("/")))
    if len(tag) > _MODEL_TAG_MAX:
        digest = hashlib.blake2b(str(model_name).encode(), digest_size=8).hexdigest()
        tag = tag[:_MODEL_TAG_MAX - 17] + "~" + digest
    return tag


def _seconds(value: Any, default: Optional[float]) -> Optional[float]:
    """A timeout SGLang reads from the extra config, in seconds; the default when absent or not a number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return default


def _region(buffer: Any) -> Optional[Tuple[int, int]]:
    """(address, bytes) of a torch tensor or a numpy array, else None."""
    if buffer is None:
        return None
    if callable(getattr(buffer, "data_ptr", None)):
        return int(buffer.data_ptr()), int(buffer.numel()) * int(buffer.element_size())
    ctypes_attr = getattr(buffer, "ctypes", None)
    if ctypes_attr is not None and hasattr(buffer, "nbytes"):
        return int(ctypes_attr.data), int(buffer.nbytes)
    return None


def page_hash_value(page_hash: Any) -> Optional[bytes]:
    """The block hash a put of the page carries (and its events publish):
    SGLang's page hash, a hex str, as the bytes it spells; a hash that is not
    hex as its UTF-8 (left out past 64 bytes)."""
    if isinstance(page_hash, bytes):
        return page_hash
    text = str(page_hash)
    try:
        return bytes.fromhex(text)
    except ValueError:
        return text.encode()


# The request namespace SGLang keeps tenants apart by (Req.extra_key, which
# the OpenAI server makes of cache_salt and extra_key, with the LoRA id
# appended; RadixKey.extra_key in the radix tree), by the names it may carry
# it under in a storage call's HiCacheStorageExtraInfo: an attribute of its
# own, or an entry of its extra_info dict.
NAMESPACE_FIELDS = ("extra_key", "cache_salt")


def request_namespace(extra_info: Any) -> Optional[Tuple[Optional[str], ...]]:
    """The request namespace a storage call carries (NAMESPACE_FIELDS, each
    as a str or None), or None when it carries none: no extra_info, or every
    field absent or empty."""
    if extra_info is None:
        return None
    inner = extra_info if isinstance(extra_info, Mapping) else getattr(extra_info, "extra_info", None)
    values: List[Optional[str]] = []
    for name in NAMESPACE_FIELDS:
        value = None if isinstance(extra_info, Mapping) else getattr(extra_info, name, None)
        if value is None and isinstance(inner, Mapping):
            value = inner.get(name)
        values.append(None if value is None or value == "" else str(value))
    return tuple(values) if any(v is not None for v in values) else None


def namespace_part(extra_info: Any) -> bytes:
    """The key part of a call's request namespace: b"ns-<32 hex>/", the first
    16 bytes of the BLAKE2b of the fields as a JSON list (so that no two
    different pairs give one digest by concatenation), or b"" when the call
    carries none (the layout of a request without a namespace is unchanged)."""
    fields = request_namespace(extra_info)
    if fields is None:
        return b""
    digest = hashlib.blake2b(json.dumps(list(fields)).encode(), digest_size=16, person=b"memkv-sglang-ns")
    return b"ns-" + digest.hexdigest().encode() + b"/"


def _prior_page(extra_info: Any) -> Optional[Any]:
    """The hash of the page before a batch's first, when SGLang passes the
    prefix's page hashes (HiCacheStorageExtraInfo.prefix_keys, with
    hicache_storage_pass_prefix_keys); None otherwise."""
    prefix = getattr(extra_info, "prefix_keys", None)
    if isinstance(prefix, (list, tuple)) and prefix and isinstance(prefix[-1], (str, bytes)):
        return prefix[-1]
    return None


def _probe_indices(page_size: int) -> Any:
    """Token indices of host page 0, in the type SGLang's pools take."""
    try:
        import torch  # SGLang's own index type

        return torch.arange(page_size, dtype=torch.int64)
    except Exception:  # noqa: BLE001 - no torch: numpy (len() and tolist() are all the pools use)
        import numpy

        return numpy.arange(page_size, dtype=numpy.int64)


def _part_names(count: int, is_mla: bool, layout: str) -> List[str]:
    """Names of the get_page_buffer_meta entries of one page (see the module doc)."""
    if count == 1:
        return ["kv"]
    if not is_mla and count == 2:
        return ["k", "v"]
    if not is_mla and layout == "layer_first" and count % 2 == 0:
        return [f"{kv}{layer}" for layer in range(count // 2) for kv in ("k", "v")]
    if is_mla and layout == "layer_first":
        return [f"l{layer}" for layer in range(count)]
    return [f"c{i}" for i in range(count)]


class _Layout(NamedTuple):
    """What register_mem_pool_host learned about the host pool."""

    page_size: int
    layout: str
    parts: Tuple[str, ...]          # one name per get_page_buffer_meta entry of a page
    part_bytes: Tuple[int, ...]     # their sizes
    page_bytes: int
    tails: Tuple[bytes, ...]        # "/<scope>/<part>" for each part
    flat_tail: bytes                # "/<scope>/page", the non-zero-copy value


class MemKVHiCacheStorage(HiCacheStorage):
    """SGLang HiCache L3 storage on MemKV.

    Constructed by SGLang's dynamic backend factory as
    `MemKVHiCacheStorage(storage_config, kwargs)`: `storage_config` is a
    HiCacheStorageConfig (any object with its attributes will do: tp_rank,
    tp_size, pp_rank, pp_size, attn_cp_rank, attn_cp_size, is_mla_model,
    enable_storage_metrics, model_name, extra_config); `kwargs` is the dict of
    extra arguments SGLang's factory passes through (ignored). Settings come
    from storage_config.extra_config (see docs/engines/README.md), with the
    MEMKV_* environment as the fallback; a bad one raises ConfigError naming
    it. The keys SGLang reads from the same dict (SGLANG_KEYS) are accepted.

    Data-path methods never raise and never wait longer than timeout_ms per
    MemKV call: a server that is down, slow or restarted, a value of the wrong
    size or a corrupted one, are misses (False, 0, None) and failed stores
    (False), logged at most once per 10 s per kind on "memkv.adapters".
    """

    def __init__(self, storage_config: Any, kwargs: Any = None) -> None:
        extra_config = getattr(storage_config, "extra_config", None) or {}
        if not isinstance(extra_config, Mapping):
            raise ConfigError(f"memkv {ENGINE} adapter: {WHERE} must be a JSON object, not {extra_config!r}")
        settings = {k: v for k, v in extra_config.items() if k not in SGLANG_KEYS}
        self.config: AdapterConfig = load_config(ENGINE, settings, WHERE)

        self.tp_rank = int(getattr(storage_config, "tp_rank", 0) or 0)
        self.tp_size = int(getattr(storage_config, "tp_size", 1) or 1)
        self.pp_rank = int(getattr(storage_config, "pp_rank", 0) or 0)
        self.pp_size = int(getattr(storage_config, "pp_size", 1) or 1)
        self.cp_rank = int(getattr(storage_config, "attn_cp_rank", 0) or 0)
        self.cp_size = int(getattr(storage_config, "attn_cp_size", 1) or 1)
        self.is_mla = bool(getattr(storage_config, "is_mla_model", False))
        self.model_name = getattr(storage_config, "model_name", None)
        self.model = model_tag(self.model_name)
        self.enable_metrics = bool(getattr(storage_config, "enable_storage_metrics", False))
        # With interface_v1 SGLang calls batch_get_v1/batch_set_v1; without it,
        # batch_get/batch_set on flat pages. batch_exists follows the same flag,
        # read exactly as SGLang's cache controller reads it (the Python truth
        # of the value: "0" and "false" are non-empty strings, so zero copy),
        # or it would look up the keys of the path SGLang does not take.
        self.zero_copy = bool(extra_config.get("interface_v1", 0))
        # MLA pages are the same on every TP rank: rank 0 stores them.
        self.writer = not (self.is_mla and self.tp_rank != 0)
        self.namespace = self.config.namespace or f"sglang/{self.model}"
        self._prefix = namespaced(self.namespace) + b"/" if self.namespace else b""

        self._prefetch_timeout = tuple(_seconds(extra_config.get(name), default) for name, default in (
            ("prefetch_timeout_base", _PREFETCH_TIMEOUT_BASE_S),
            ("prefetch_timeout_per_ki_token", _PREFETCH_TIMEOUT_PER_KI_TOKEN_S),
            ("prefetch_timeout_max", None)))
        # The identity's fields SGLang's storage config gives; the host pool
        # gives the rest (register_mem_pool_host makes the client again then).
        self._identity_given = {k: v for k, v in self.config.client_options.items() if k.startswith("identity_")}
        self.identity = self._identity(None)
        self._client = make_client(self.config, self.identity)
        self._io = PageIO(self._client, ENGINE)
        self._layout: Optional[_Layout] = None
        self._closed = False
        self._metrics_lock = threading.Lock()
        self._prefetch_pgs: List[int] = []
        self._backup_pgs: List[int] = []
        self._prefetch_bw: List[float] = []
        self._backup_bw: List[float] = []
        self._storage_metrics_cls: Any = None
        if not self.zero_copy:
            log.warning("memkv %s: %s has no \"interface_v1\": 1; SGLang will copy every page through "
                        "batch_get/batch_set instead of the zero-copy batch_get_v1/batch_set_v1", ENGINE, WHERE)
        log.info("memkv %s: servers %s, namespace %r, model %r, %s, %s", ENGINE, ",".join(self.config.servers),
                 self.namespace, self.model, "MLA (TP rank 0 writes)" if self.is_mla else
                 f"TP rank {self.tp_rank} of {self.tp_size}", "zero copy" if self.zero_copy else "flat pages")

    # ------------------------------------------------------------------ setup

    def _identity(self, lay: Optional["_Layout"], dtype: Any = None) -> Any:
        """The cache identity: the model and the parallel ranks from SGLang's
        storage config, the KV dtype, page size and layout from the host pool
        (once registered). An MLA model's pages are the same on every TP
        rank, so its identity is TP rank 0's on every rank (all read what
        rank 0 writes)."""
        self.config.client_options.update(self._identity_given)  # each identity is made from the settings as given
        layout = None
        if lay is not None:
            parts = [lay.layout or "unknown-layout", "mla" if self.is_mla else "mha",
                     f"pp{self.pp_rank}of{self.pp_size}"]
            if self.cp_size > 1:
                parts.append(f"cp{self.cp_rank}of{self.cp_size}")
            layout = "/".join(parts + [f"{lay.page_bytes}B"])
        return cache_identity(self.config, model=self.model_name, kv_dtype=dtype_name(dtype), layout=layout,
                              block_tokens=None if lay is None else lay.page_size,
                              tp_rank=0 if self.is_mla else self.tp_rank, tp_size=self.tp_size, engine=ENGINE,
                              engine_version=package_version("sglang"))

    def _bind_identity(self, lay: "_Layout", pool: Any) -> None:
        """Makes the client again with the identity the host pool completes
        (before any page moves: SGLang registers the pool right after
        construction). A client that cannot be made keeps the first one."""
        identity = self._identity(lay, getattr(pool, "dtype", None))
        if identity is None or identity == self.identity:
            return
        client = make_client(self.config, identity)
        old, self._client, self._io, self.identity = self._client, client, PageIO(client, ENGINE), identity
        try:
            old.close()
        except memkv.Error as e:
            log.warning("memkv %s: closing the client made before the host pool was known: %s", ENGINE, e)

    def _scope(self, layout: str, page_bytes: int) -> List[str]:
        parts = [self.model]
        if not self.is_mla:
            parts.append(f"tp{self.tp_rank}of{self.tp_size}")
        parts.append(f"pp{self.pp_rank}of{self.pp_size}")
        if self.cp_size > 1:
            parts.append(f"cp{self.cp_rank}of{self.cp_size}")
        parts += [layout or "unknown-layout", f"{page_bytes}B"]
        return parts

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Called by SGLang right after construction. Learns the pool's page
        layout from get_page_buffer_meta of one page, and registers the pool's
        memory with the client (zero copy over RDMA; nothing under TCP). A pool
        whose pages cannot be described is logged as an ERROR and every
        data-path call then misses: SGLang runs without L3 rather than fail."""
        super().register_mem_pool_host(mem_pool_host)
        self._layout = None
        try:
            page_size = int(mem_pool_host.page_size)
            layout = str(getattr(mem_pool_host, "layout", "") or "")
            ptrs, sizes = mem_pool_host.get_page_buffer_meta(_probe_indices(page_size))
            ptrs, sizes = list(ptrs), [int(s) for s in sizes]
            if not ptrs or len(ptrs) != len(sizes) or min(sizes) <= 0:
                raise ValueError(f"get_page_buffer_meta of one page gave {len(ptrs)} pointer(s) and sizes {sizes}")
            names = _part_names(len(ptrs), self.is_mla, layout)
            page_bytes = sum(sizes)
            scope = self._scope(layout, page_bytes)
            tails = tuple(b"/" + namespaced("", *scope, name) for name in names)
            lay = _Layout(page_size, layout, tuple(names), tuple(sizes), page_bytes, tails,
                          b"/" + namespaced("", *scope, "page"))
            self._bind_identity(lay, mem_pool_host)
            self._layout = lay
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.error("memkv %s: cannot address the pages of host pool %s (layout %r): %s: %s; L3 storage is off",
                      ENGINE, type(mem_pool_host).__name__, getattr(mem_pool_host, "layout", None),
                      type(e).__name__, e)
            return
        self._register_memory(mem_pool_host)
        log.info("memkv %s: host pool layout %s, page of %d tokens = %d bytes in %d part(s) %s, identity %r",
                 ENGINE, self._layout.layout, self._layout.page_size, self._layout.page_bytes,
                 len(self._layout.parts), ",".join(self._layout.parts), self.identity)

    def _register_memory(self, pool: Any) -> None:
        regions = []
        for name in ("kv_buffer", "k_buffer", "v_buffer", "index_k_buffer", "index_k_scale_buffer"):
            try:
                region = _region(getattr(pool, name, None))
            except Exception:  # noqa: BLE001 - an attribute that is not a buffer
                region = None
            if region and region[1] > 0:
                regions.append(region)
        regions.sort(key=lambda r: (r[0], -r[1]))
        kept: List[Tuple[int, int]] = []
        for addr, length in regions:  # drop views inside a region already kept (MHA k_buffer in kv_buffer)
            if kept and addr + length <= kept[-1][0] + kept[-1][1]:
                continue
            kept.append((addr, length))
        for addr, length in kept:
            try:
                self._client.register_memory(addr, length)
            except Exception as e:  # noqa: BLE001 - an optimisation: never stop start-up for it
                log.warning("memkv %s: registering %d bytes of the host pool failed (transfers still work, "
                            "through the client's bounce buffers over RDMA): %s", ENGINE, length, e)

    # ------------------------------------------------------------------ keys

    @staticmethod
    def _hash_bytes(page_hash: Any) -> bytes:
        return page_hash if isinstance(page_hash, bytes) else str(page_hash).encode()

    def memkv_keys(self, page_hash: Any, extra_info: Any = None) -> List[bytes]:
        """The MemKV keys that hold one page (one per part, in
        get_page_buffer_meta order) for a call with this extra_info (its
        request namespace, if any, is part of every key); empty before
        register_mem_pool_host."""
        lay = self._layout
        if lay is None:
            return []
        h = self._prefix + namespace_part(extra_info) + self._hash_bytes(page_hash)
        return [h + t for t in lay.tails]

    def memkv_flat_key(self, page_hash: Any, extra_info: Any = None) -> Optional[bytes]:
        """The MemKV key of a page stored by batch_set/set (flat pages)."""
        lay = self._layout
        if lay is None:
            return None
        return self._prefix + namespace_part(extra_info) + self._hash_bytes(page_hash) + lay.flat_tail

    def _part_keys(self, lay: _Layout, keys: Sequence[Any], extra_info: Any = None) -> List[bytes]:
        prefix, tails = self._prefix + namespace_part(extra_info), lay.tails
        heads = [prefix + (k if isinstance(k, bytes) else str(k).encode()) for k in keys]
        return [h + t for h in heads for t in tails]

    def _flat_keys(self, lay: _Layout, keys: Sequence[Any], extra_info: Any = None) -> List[bytes]:
        prefix = self._prefix + namespace_part(extra_info)
        return [prefix + self._hash_bytes(k) + lay.flat_tail for k in keys]

    def _store_options(self, keys: Sequence[Any], part_keys: Sequence[bytes], tails: Sequence[bytes],
                       extra_info: Any) -> List[Any]:
        """The put options of the pages' values, in the order of their keys
        (part_keys: page by page, a page's parts in order): SGLang hands a
        batch's pages in prefix order, so each part names the same part of
        the previous page as its parent (the batch's first page: the last
        prefix page, when SGLang passes the prefix keys), in the same request
        namespace, and carries the page hashes as SGLang made them."""
        hashes = [page_hash_value(k) for k in keys]
        prior = _prior_page(extra_info)
        head = None if prior is None else self._prefix + namespace_part(extra_info) + self._hash_bytes(prior)
        prior_hash = None if prior is None else page_hash_value(prior)
        m = len(tails)
        chains = [chained_options(part_keys[j::m], hashes, None if head is None else head + tails[j], prior_hash)
                  for j in range(m)]
        if m == 1:
            return chains[0]
        return [chain[i] for i in range(len(keys)) for chain in chains]

    def _ready(self, op: str) -> Optional[_Layout]:
        lay = self._layout
        if lay is None:
            self._io.errors.warn(f"{op}:unregistered", f"memkv {ENGINE}: {op} before a usable host pool was "
                                 "registered (register_mem_pool_host); treated as a miss / not stored")
        return lay

    def _failed(self, op: str, e: BaseException) -> None:
        self._io._count(errors=1)
        self._io.errors.warn(f"{op}:{type(e).__name__}",
                             f"memkv {ENGINE}: {op} failed, treated as a miss / not stored: {type(e).__name__}: {e}")

    # ------------------------------------------------------------------ zero copy (interface_v1)

    def _page_meta(self, lay: _Layout, n: int, host_indices: Any) -> Tuple[List[int], List[int]]:
        if len(host_indices) != n * lay.page_size:
            raise ValueError(f"{n} page key(s) but {len(host_indices)} host indices (page size {lay.page_size})")
        ptrs, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        m = len(lay.parts)
        if len(ptrs) != n * m or len(sizes) != n * m:
            raise ValueError(f"get_page_buffer_meta gave {len(ptrs)} pointer(s) and {len(sizes)} size(s) "
                             f"for {n} page(s) of {m} part(s)")
        if type(ptrs) is list and type(sizes) is list and type(ptrs[0]) is int and type(sizes[0]) is int:
            return ptrs, sizes  # SGLang's pools give lists of ints (tolist)
        return [int(p) for p in ptrs], [int(s) for s in sizes]

    @staticmethod
    def _per_page(ok: List[bool], m: int) -> List[bool]:
        if m == 1:
            return ok
        return [all(ok[i:i + m]) for i in range(0, len(ok), m)]

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many pages, from keys[0], are stored whole (all parts): one
        MemKV match_prefix over the pages' part keys in order (one request
        per server, each stopping at its first miss), in the request
        namespace extra_info carries, if any. 0 on any failure."""
        try:
            if not keys:
                return 0
            lay = self._ready("exists")
            if lay is None:
                return 0
            if self.zero_copy:
                return self._io.exists_prefix(self._part_keys(lay, keys, extra_info)) // len(lay.parts)
            return self._io.exists_prefix(self._flat_keys(lay, keys, extra_info))
        except Exception as e:  # noqa: BLE001 - never raise on the data path
            self._failed("exists", e)
            return 0

    def exists(self, key: str) -> bool:
        """True when the page is stored whole."""
        return self.batch_exists([key]) == 1

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Reads each page straight into the host pool at host_indices
        (len(keys) * page_size token indices): True per page whose every part
        was there and of the right size."""
        return self._move_pages("get", keys, host_indices, extra_info)

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """Stores each page straight from the host pool: True per page whose
        every part was stored. On an MLA model's TP ranks other than 0, stores
        nothing and returns True (rank 0 stores the same pages)."""
        if keys and not self.writer:
            return [True] * len(keys)
        return self._move_pages("put", keys, host_indices, extra_info)

    def _move_pages(self, op: str, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        """batch_get_v1 / batch_set_v1 ("get" / "put") between the host pool's
        page memory and MemKV; never raises."""
        n = len(keys)
        try:
            if n == 0:
                return []
            lay = self._ready(op)
            if lay is None:
                return [False] * n
            ptrs, sizes = self._page_meta(lay, n, host_indices)
            start = time.perf_counter()
            part_keys = self._part_keys(lay, keys, extra_info)
            if op == "get":
                moved = self._io.get(part_keys, ptrs, sizes)
            else:
                options = self._store_options(keys, part_keys, lay.tails, extra_info)
                moved = self._io.put(part_keys, ptrs, sizes, options)
            ok = self._per_page(moved, len(lay.parts))
            if op == "get":
                self._report_restores(lay, ok, start)
            pgs, bandwidth = ((self._prefetch_pgs, self._prefetch_bw) if op == "get"
                              else (self._backup_pgs, self._backup_bw))
            self._record(pgs, bandwidth, n, lay.page_bytes * sum(ok), start)
            return ok
        except Exception as e:  # noqa: BLE001 - never raise on the data path
            self._failed(op, e)
            return [False] * n

    def _report_restores(self, lay: _Layout, ok: List[bool], start: float) -> None:
        """A prefetch's pages in time or late (PageIO.report_restores). SGLang
        uses the leading run of pages a prefetch brought and recomputes from
        its first miss, and gives up waiting on a prefetch after its timeout
        (base + per_ki_token per 1024 tokens, at most max): the pages of the
        leading run are in time when the call ended within that timeout, the
        others it loaded are late."""
        in_time, late = prefix_restores(ok)
        base, per_ki_token, most = self._prefetch_timeout
        timeout = base + per_ki_token * len(ok) * lay.page_size / 1024
        if most is not None:
            timeout = min(timeout, most)
        if time.perf_counter() - start > timeout:
            in_time, late = 0, in_time + late
        self._io.report_restores(in_time, late)

    # ------------------------------------------------------------------ flat pages (no interface_v1)

    @staticmethod
    def _target(location: Any, size: Any, writable: bool) -> Tuple[int, int, Any]:
        """(address, bytes, object to keep alive) of a page buffer: a CPU torch
        tensor, an object with the buffer protocol, or an address (int) with
        its size."""
        if isinstance(location, int) and not isinstance(location, bool):
            if size is None:
                raise ValueError("a page given as an address needs its size (target_sizes)")
            return location, int(size), None
        if callable(getattr(location, "data_ptr", None)):
            if getattr(location, "is_cuda", False) or str(getattr(location, "device", "cpu")) != "cpu":
                raise ValueError(f"page tensor on {location.device}; only CPU memory can be sent")
            if not location.is_contiguous():
                raise ValueError("page tensor is not contiguous")
            return int(location.data_ptr()), int(location.numel()) * int(location.element_size()), location
        view = memoryview(location)
        if not view.c_contiguous:
            raise ValueError("page buffer is not C-contiguous")
        if view.readonly:
            if writable:
                raise ValueError("page buffer is read-only")
            data = view.tobytes() if not isinstance(location, bytes) else location
            return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0, len(data), data
        raw = (ctypes.c_char * view.nbytes).from_buffer(view.cast("B") if view.format != "B" else view)
        return ctypes.addressof(raw), view.nbytes, (raw, view)

    def batch_get(self, keys: List[str], target_locations: Optional[Sequence[Any]] = None,
                  target_sizes: Optional[Sequence[Any]] = None) -> List[Any]:
        """Reads flat pages (SGLang without interface_v1) into
        target_locations[i] (a tensor, a buffer, or an address with
        target_sizes[i]); without targets, into new bytearrays of the page's
        size. Returns per key the filled target, or None on a miss. SGLang
        hands this path no extra_info: its keys have no request namespace."""
        n = len(keys)
        try:
            if n == 0:
                return []
            lay = self._ready("get")
            if lay is None:
                return [None] * n
            if target_locations is None:
                target_locations = [bytearray(lay.page_bytes) for _ in range(n)]
            if len(target_locations) != n:
                raise ValueError(f"{n} key(s) but {len(target_locations)} target(s)")
            sizes_in = list(target_sizes) if target_sizes is not None else [None] * n
            targets = [self._target(loc, size, True) for loc, size in zip(target_locations, sizes_in)]
            start = time.perf_counter()
            ok = self._io.get(self._flat_keys(lay, keys), [t[0] for t in targets], [t[1] for t in targets])
            self._report_restores(lay, ok, start)
            self._record(self._prefetch_pgs, self._prefetch_bw, n,
                         sum(t[1] for t, o in zip(targets, ok) if o), start)
            return [loc if o else None for loc, o in zip(target_locations, ok)]
        except Exception as e:  # noqa: BLE001 - never raise on the data path
            self._failed("get", e)
            return [None] * n

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        """One flat page (see batch_get): the filled target, or None."""
        return self.batch_get([key], None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])[0]

    def batch_set(self, keys: List[str], values: Optional[Sequence[Any]] = None,
                  target_locations: Optional[Sequence[Any]] = None,
                  target_sizes: Optional[Sequence[Any]] = None) -> bool:
        """Stores flat pages: values[i] (a tensor or a buffer) or
        target_locations[i] with target_sizes[i] (addresses). True only when
        every page was stored, which is how SGLang reads it. On an MLA
        model's TP ranks other than 0: True, nothing stored."""
        n = len(keys)
        try:
            if n == 0:
                return True
            if not self.writer:
                return True
            lay = self._ready("put")
            if lay is None:
                return False
            sources = values if values is not None else target_locations
            if sources is None or len(sources) != n:
                raise ValueError(f"{n} key(s) but {0 if sources is None else len(sources)} value(s)")
            sizes_in = list(target_sizes) if target_sizes is not None else [None] * n
            buffers = [self._target(src, size, False) for src, size in zip(sources, sizes_in)]
            start = time.perf_counter()
            flat_keys = self._flat_keys(lay, keys)
            ok = self._io.put(flat_keys, [b[0] for b in buffers], [b[1] for b in buffers],
                              self._store_options(keys, flat_keys, (lay.flat_tail,), None))
            self._record(self._backup_pgs, self._backup_bw, n, sum(b[1] for b, o in zip(buffers, ok) if o), start)
            return all(ok)
        except Exception as e:  # noqa: BLE001 - never raise on the data path
            self._failed("put", e)
            return False

    def set(self, key: str, value: Any = None, target_location: Any = None, target_sizes: Any = None) -> bool:
        """One flat page (see batch_set)."""
        return self.batch_set([key], None if value is None else [value],
                              None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])

    # ------------------------------------------------------------------ housekeeping

    def clear(self) -> None:
        """SGLang's "clear the L3 storage" (its /clear_hicache_storage_backend).

        Deletes every key under this backend's namespace (namespace + "/"),
        found by key listing over every server: the pages of every SGLang
        instance that shares the namespace go with them. With an empty
        namespace it deletes nothing (it would be the whole store) and logs a
        WARNING. A server that cannot be reached leaves its keys; the count
        of what was deleted and what was not is logged. Resets the metrics
        windows. Never raises."""
        try:
            if not self.namespace:
                log.warning("memkv %s: clear() deletes nothing when 'namespace' is empty (it would delete every key "
                            "in the store)", ENGINE)
            else:
                deleted, failed = self._io.delete_prefix(self.namespace.encode() + b"/")
                (log.warning if failed else log.info)(
                    "memkv %s: clear() deleted %d key(s) under namespace %r%s", ENGINE, deleted, self.namespace,
                    f"; {failed} could not be deleted (see the warnings above)" if failed else "")
        except Exception as e:  # noqa: BLE001 - never raise on the data path
            self._failed("clear", e)
        with self._metrics_lock:
            for window in (self._prefetch_pgs, self._backup_pgs, self._prefetch_bw, self._backup_bw):
                window.clear()

    def _record(self, pgs: List[int], bandwidth: List[float], pages: int, nbytes: int, start: float) -> None:
        if not self.enable_metrics:
            return
        elapsed = time.perf_counter() - start
        with self._metrics_lock:
            if len(pgs) < _METRICS_WINDOW:
                pgs.append(pages)
                if elapsed > 0:
                    bandwidth.append(nbytes / elapsed / (1 << 30))

    def _metrics_class(self) -> Any:
        if self._storage_metrics_cls is None:
            self._storage_metrics_cls = False
            for module in ("sglang.srt.observability.metrics_collector", "sglang.srt.metrics.collector"):
                try:
                    self._storage_metrics_cls = getattr(__import__(module, fromlist=["StorageMetrics"]),
                                                        "StorageMetrics")
                    break
                except Exception:  # noqa: BLE001 - not this SGLang version's module
                    continue
        return self._storage_metrics_cls

    def get_stats(self) -> Any:
        """What SGLang's storage metrics read (--enable-metrics with a storage
        backend): a StorageMetrics (pages per prefetch and backup batch, and
        their GiB/s, since the last call; kept only when SGLang enables them).
        None when SGLang is installed but its StorageMetrics cannot be found;
        without SGLang, a dict of the same four lists plus memkv_stats()."""
        with self._metrics_lock:
            windows = (list(self._prefetch_pgs), list(self._backup_pgs), list(self._prefetch_bw),
                       list(self._backup_bw))
            for window in (self._prefetch_pgs, self._backup_pgs, self._prefetch_bw, self._backup_bw):
                window.clear()
        cls = self._metrics_class()
        if cls:
            return cls(prefetch_pgs=windows[0], backup_pgs=windows[1], prefetch_bandwidth=windows[2],
                       backup_bandwidth=windows[3])
        if SGLANG_AVAILABLE:
            return None
        return {"prefetch_pgs": windows[0], "backup_pgs": windows[1], "prefetch_bandwidth": windows[2],
                "backup_bandwidth": windows[3], "memkv": self.memkv_stats()}

    def memkv_stats(self) -> Dict[str, Any]:
        """Counters of this backend (keys and bytes read, written, probed;
        failures) and the client's stats()."""
        out = self._io.stats()
        lay = self._layout
        out.update({"namespace": self.namespace, "writer": self.writer, "zero_copy": self.zero_copy,
                    "layout": None if lay is None else lay.layout,
                    "page_bytes": None if lay is None else lay.page_bytes,
                    "parts": None if lay is None else list(lay.parts)})
        return out

    def close(self) -> None:
        """Closes the client (SGLang calls it on detach). Later data-path
        calls miss and fail to store; calling close() again does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._client.close()
        except memkv.Error as e:
            log.warning("memkv %s: closing the client: %s", ENGINE, e)


__all__ = ["MemKVHiCacheStorage", "ConfigError", "NAMESPACE_FIELDS", "SGLANG_AVAILABLE", "SGLANG_KEYS", "model_tag",
           "namespace_part", "request_namespace"]

"""MemKVL2Connector: the connector object of LMCache's ``native_plugin`` L2
adapter (docs/engines/lmcache.md), over the client's asynchronous batches."""

import collections
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import memkv

from ._common import hashed_options, prefix_restores
from ._lmcache_core import ENGINE, L2_NAMESPACE, Core, loud
from ._lmcache_keys import buffer_span, chunk_hash_of, key_text

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
    submitted to the client and runs on its driver threads
    (``async_threads`` of them), zero copy from or into the
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
        """Takes the settings of docs/engines/README.md as keywords, the
        ``adapter_params`` of the --l2-adapter JSON; a setting missing there
        comes from its MEMKV_* variable. A bad one raises
        ConfigError naming it, logged CRITICAL and written to stderr."""
        try:
            self._core = Core(adapter_params, "adapter_params of --l2-adapter (native_plugin)", L2_NAMESPACE)
        except Exception as e:
            loud(e)
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
        self._core.close()
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
            names = [self._core.key(key_text(k)) for k in keys]
            return _Submitted(fid, kind, len(keys), names, list(range(len(keys))), [], [], None, "")
        if len(keys) != len(views):
            raise ValueError(f"{len(keys)} keys but {len(views)} memoryviews")
        index, names, addresses, lengths = [], [], [], []
        # A store carries each chunk's hash; no parent: a batch's keys are
        # not said to be one chain, in order.
        hashes: Optional[List[Any]] = [] if kind == "set" else None
        first_bad = ""
        for i, (k, v) in enumerate(zip(keys, views)):
            try:
                address, length = buffer_span(v, kind == "get")
            except (ValueError, TypeError) as e:
                first_bad = first_bad or f"key {k!r}: {e}"
                continue
            index.append(i)
            text = key_text(k)
            names.append(self._core.key(text))
            addresses.append(address)
            lengths.append(length)
            if hashes is not None:
                hashes.append(chunk_hash_of(text))
        what = "loaded" if kind == "get" else "stored"
        if first_bad:
            self._core.io.errors.warn(f"{what}:buffer", f"memkv {ENGINE}: {what}: unusable buffer, {first_bad}")
        options = None if hashes is None else hashed_options(hashes)
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
        if s.kind == "get":
            # LMCache uses the leading run of chunks a load brings and
            # recomputes from the first one missing: that run is in time,
            # chunks loaded after a gap late.
            io.report_restores(*prefix_restores(bools))
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

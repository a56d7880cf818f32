"""What both LMCache entry points share: checked settings, the client,
PageIO, the key layout, and batches split to MemKV's limits."""

import hashlib
import sys
import warnings
from typing import Any, List, Mapping, Optional, Sequence, Union

import memkv

from ._common import (AdapterConfig, PageIO, cache_identity, load_config, log, make_client, namespaced,
                      package_version, positive_int)

ENGINE = "lmcache"
# The module LMCache loads (module_path of its plugin and L2 adapter configs).
MODULE = "memkv.adapters.lmcache"
MAX_KEY_BYTES = 1024      # MemKV's key limit
MAX_BATCH_KEYS = 1024     # MemKV's keys per batch call
MAX_ASYNC_THREADS = 64    # the client option async_threads' limit
# Settings of this adapter beyond the shared ones (docs/engines/README.md).
# io_threads is deprecated: batches run on the client's driver threads,
# async_threads of them; a given io_threads still sets async_threads when
# that is not set.
EXTRA_SETTINGS = {"io_threads": (positive_int, None)}
L2_NAMESPACE = "lmcache-l2"
PLUGIN_NAMESPACE = "lmcache-plugin"


def loud(error: BaseException) -> None:
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


def _io_threads_deprecated(config: AdapterConfig, where: str) -> None:
    """A given io_threads: a DeprecationWarning and a WARNING line (engines
    hide the former), then its value as async_threads unless that is set."""
    io_threads = config.extra["io_threads"]
    if io_threads is None:
        return
    text = (f"memkv {ENGINE} adapter: 'io_threads' in {where} is deprecated: batches run on the client's "
            f"driver threads; set async_threads instead")
    if "async_threads" in config.client_options:
        text += " (async_threads is set, so io_threads is ignored)"
    else:
        config.client_options["async_threads"] = min(io_threads, MAX_ASYNC_THREADS)
        config.sources["async_threads"] = f"'io_threads' in {where}"
        text += f" (taken as async_threads {config.client_options['async_threads']})"
    warnings.warn(text, DeprecationWarning, stacklevel=4)
    log.warning("%s", text)


class Core:
    """The settings, client and PageIO of one entry point, and the key
    layout. Blocking batches run on the caller's thread; asynchronous ones
    are each entry point's own (the client's submit_* calls)."""

    def __init__(self, settings: Optional[Mapping[str, Any]], where: str, default_namespace: str,
                 identity: Optional[Mapping[str, Any]] = None) -> None:
        """`identity`: the cache identity's fields LMCache's metadata gives
        (memkv.adapters._common.cache_identity); engine and version are added here."""
        self.config = load_config(ENGINE, settings, where, extra=EXTRA_SETTINGS)
        _io_threads_deprecated(self.config, where)
        self.namespace = self.config.namespace or default_namespace
        self._key_prefix = namespaced(self.namespace, "")  # "namespace/": what every key starts with
        self.identity = cache_identity(self.config, **dict(identity or {}), engine=ENGINE,
                                       engine_version=package_version("lmcache"))
        self.client = make_client(self.config, self.identity)
        self.io = PageIO(self.client, ENGINE)

    @property
    def async_threads(self) -> int:
        """The client's driver threads: submissions that run at once."""
        return int(self.client.options()["async_threads"])

    def key(self, name: Union[str, bytes]) -> bytes:
        """namespace/name; a name that would make the key longer than MemKV's
        1024 bytes becomes namespace/sha256/<hex of its SHA-256>."""
        out = self._key_prefix + (name if isinstance(name, bytes) else name.encode())
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

    def close(self) -> None:
        """Closes the client: what it has not started is cancelled, what runs ends within timeout_ms."""
        try:
            self.client.close()
        except memkv.Error:
            pass

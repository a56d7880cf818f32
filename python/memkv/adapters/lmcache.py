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
    (memkv.adapters._lmcache_l2)

MemKVStorageBackend
    An in-process ``StoragePluginInterface`` backend, loaded by LMCache's
    storage plugin launcher::

        storage_plugins: memkv
        extra_config:
          storage_plugin.memkv.module_path: memkv.adapters.lmcache
          storage_plugin.memkv.class_name: MemKVStorageBackend
          storage_plugin.memkv.servers: 10.0.0.5:9900

    Its stores, non-blocking loads and async lookups are submitted to the
    client too, and handed to LMCache as Futures completed from the
    client's completions. (memkv.adapters._lmcache_plugin)

Both move bytes with the shared adapter core (memkv.adapters._common.PageIO):
zero copy between LMCache's memory (the memoryviews of the L2 adapter, the
MemoryObjs of LocalCPUBackend) and MemKV, one MemKV batch per engine batch
(the blocking ones split at MemKV's 1024 keys per call). A server that is down, slow or
restarted gives misses and failed stores, never an exception out of a data
path method; a value whose size is not the buffer's, or whose checksum
fails, is a miss. A store an overloaded server sheds (Busy) is skipped: its
keys are reported not stored (False; no store callback), counted in
get_stats()'s stores_shed, and logged at INFO at most once per interval.

LMCache is imported only to subclass its StoragePluginInterface; without it
the module still imports (HAVE_LMCACHE is then False) and the backend
derives from a minimal local stand-in.

The parts: _lmcache_core (settings, client, key layout), _lmcache_keys
(key text, chunk hashes, buffer addresses), _lmcache_l2 and _lmcache_plugin
(the two entry points), _completions (Futures over the client's
completions). LMCache loads the classes from this module by name.
"""

from ._common import ConfigError
from ._lmcache_keys import chunk_hash_of
from ._lmcache_l2 import MemKVL2Connector
from ._lmcache_plugin import HAVE_LMCACHE, MemKVStorageBackend

__all__ = ["HAVE_LMCACHE", "MemKVL2Connector", "MemKVStorageBackend", "ConfigError", "chunk_hash_of"]

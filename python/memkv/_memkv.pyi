"""Types of memkv._memkv, the extension behind memkv (docs/client-library.md, "Python")."""

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from typing_extensions import Buffer as _Buffer  # collections.abc.Buffer from Python 3.12
from typing_extensions import TypedDict

from ._errors import Error

__version__: str

Key = Union[str, bytes]
# An object with the buffer protocol: bytes, bytearray, memoryview, mmap, numpy.ndarray, ...
Buffer = _Buffer
LogCallback = Callable[[int, str, str], Any]

class ClientOptionInfo(TypedDict):
    """One row of the client option table (docs/configuration.md)."""

    name: str      # Client keyword, YAML key, engine adapter setting, NIXL parameter
    env: str       # its MEMKV_* variable
    type: str      # "list", "string", "integer", "choice", "host:port", "auto or integer"
    default: str   # as text; "" for none
    allowed: str
    doc: str
    is_list: bool  # several values: a list of str or one comma-separated str
    required: bool

def client_options() -> List[ClientOptionInfo]: ...

class BatchResult:
    """The outcome of a batch call, key by key, in the order of the keys."""

    @property
    def statuses(self) -> List[int]: ...
    @property
    def messages(self) -> List[str]: ...
    @property
    def present_prefix(self) -> int: ...
    @property
    def sizes(self) -> Optional[List[int]]: ...
    @property
    def ok(self) -> bool: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> int: ...
    def __iter__(self) -> Iterator[int]: ...
    def error(self, i: int) -> Optional[Error]: ...

class Completion:
    """One finished submission of a Client.submit_* call."""

    @property
    def id(self) -> int: ...
    @property
    def tag(self) -> int: ...
    @property
    def op(self) -> str: ...  # "get", "put", "exists", "delete"
    @property
    def cancelled(self) -> bool: ...
    @property
    def result(self) -> BatchResult: ...

Hash = Union[bytes, int]
Retention = str  # "normal", "pinned" or "evict_first"

class PutOptions:
    """What a put may say about its value besides its bytes."""

    def __init__(
        self,
        *,
        ttl_ms: int = 0,
        retention: Retention = "normal",
        parent_key: Optional[Key] = None,
        block_hash: Optional[Hash] = None,
        parent_hash: Optional[Hash] = None,
    ) -> None: ...
    @property
    def ttl_ms(self) -> int: ...
    @property
    def retention(self) -> str: ...
    @property
    def parent_key(self) -> Optional[bytes]: ...
    @property
    def block_hash(self) -> Optional[Hash]: ...
    @property
    def parent_hash(self) -> Optional[Hash]: ...
    @property
    def hash_kind(self) -> str: ...  # "bytes" or "int64"
    @staticmethod
    def chain(
        keys: Sequence[Key],
        block_hashes: Sequence[Optional[Hash]],
        parent_key: Optional[Key] = None,
        parent_hash: Optional[Hash] = None,
    ) -> List["PutOptions"]: ...
    @staticmethod
    def of_hashes(block_hashes: Sequence[Optional[Hash]]) -> List["PutOptions"]: ...

from ._identity import CacheIdentity


class Client:
    """A thread-safe client of one or more MemKV servers.

    __init__ takes every option of client_options() by its name, typed by the
    row's type (test_stubs.py checks the two agree), and log_callback.
    """

    def __init__(
        self,
        servers: Union[str, Sequence[str], None] = None,
        auth_key: Optional[str] = None,
        *,
        transport: Optional[str] = ...,
        num_connections: Optional[int] = ...,
        timeout_ms: Optional[int] = ...,
        connect_timeout_ms: Optional[int] = ...,
        discovery_interval_ms: Optional[int] = ...,  # 0: resolve the servers once
        dns_server: Optional[str] = ...,             # "IP:PORT"; "": the system's name servers
        resolve_timeout_ms: Optional[int] = ...,     # name resolution budget of one dns:/srv: entry
        rebalance_grace_ms: Optional[int] = ...,
        async_threads: Optional[int] = ...,
        store_shed_latency_ms: Optional[int] = ...,  # 0: never shed for latency (docs/client-library.md)
        store_shed_inflight: Optional[int] = ...,    # 0: no bound on stores in flight
        rdma_devices: Union[str, Sequence[str], None] = ...,
        rdma_mtu: Optional[int] = ...,
        rdma_retry_count: Optional[int] = ...,
        rdma_timeout: Optional[int] = ...,
        rdma_qps: Optional[int] = ...,
        rdma_gid_index: Union[str, int, None] = ...,
        rdma_traffic_class: Union[str, int, None] = ...,
        rdma_service_level: Union[str, int, None] = ...,
        prometheus_bind: Optional[str] = ...,
        log_level: Union[str, int, None] = ...,
        access_log_path: Optional[str] = ...,        # an absolute path; "": off (docs/client-library.md, "Access log")
        access_log_sample: Union[str, float, None] = ...,
        access_log_max_lines_per_sec: Optional[int] = ...,
        identity_model: Optional[str] = ...,         # cache identity (memkv.CacheIdentity); "": none
        identity_revision: Optional[str] = ...,
        identity_kv_dtype: Optional[str] = ...,
        identity_layout: Optional[str] = ...,
        identity_block_tokens: Optional[int] = ...,
        identity_tp_rank: Optional[int] = ...,
        identity_tp_size: Optional[int] = ...,
        identity_engine: Optional[str] = ...,
        identity_engine_version: Optional[str] = ...,
        identity_extras: Union[str, Sequence[str], None] = ...,  # name=value entries
        identity: Optional["CacheIdentity"] = ...,   # all identity_* at once
        log_callback: Optional[LogCallback] = ...,
    ) -> None: ...
    @staticmethod
    def from_env() -> "Client": ...

    def put(
        self, key: Key, value: Buffer, *, ttl_ms: int = 0, retention: Retention = "normal", parent_key: Optional[Key] = None,
        block_hash: Optional[Hash] = None, parent_hash: Optional[Hash] = None,
    ) -> None: ...
    def put_ptr(
        self, key: Key, address: int, length: int, *, ttl_ms: int = 0, retention: Retention = "normal", parent_key: Optional[Key] = None,
        block_hash: Optional[Hash] = None, parent_hash: Optional[Hash] = None,
    ) -> None: ...
    def get(self, key: Key) -> Optional[bytes]: ...
    def get_into(self, key: Key, buffer: Buffer) -> Optional[int]: ...
    def get_into_ptr(self, key: Key, address: int, length: int) -> Optional[int]: ...
    def delete(self, key: Key) -> bool: ...
    def exists(self, key: Key) -> bool: ...
    def value_size(self, key: Key) -> Optional[int]: ...
    def list_keys(
        self, prefix: Key = "", cursor: Optional[bytes] = None, page_size: int = 1000
    ) -> Tuple[List[bytes], Optional[bytes]]: ...
    def iter_keys(self, prefix: Key = "", page_size: int = 1000) -> Iterator[bytes]: ...

    def batch_put(
        self, keys: Sequence[Key], values: Sequence[Buffer], *, options: Optional[Sequence[Optional[PutOptions]]] = None
    ) -> BatchResult: ...
    def batch_put_ptr(
        self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]], *,
        options: Optional[Sequence[Optional[PutOptions]]] = None,
    ) -> BatchResult: ...
    def batch_get_into(self, keys: Sequence[Key], buffers: Sequence[Buffer]) -> BatchResult: ...
    def batch_get_into_ptr(
        self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]]
    ) -> BatchResult: ...
    def batch_exists(self, keys: Sequence[Key]) -> BatchResult: ...
    def match_prefix(self, keys: Sequence[Key]) -> int: ...

    # Asynchronous batches: submit_* returns the submission's id at once.
    def submit_put(
        self, keys: Sequence[Key], values: Sequence[Buffer], tag: int = 0, *,
        options: Optional[Sequence[Optional[PutOptions]]] = None,
    ) -> int: ...
    def submit_put_ptr(
        self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]], tag: int = 0, *,
        options: Optional[Sequence[Optional[PutOptions]]] = None,
    ) -> int: ...
    def submit_get_into(self, keys: Sequence[Key], buffers: Sequence[Buffer], tag: int = 0) -> int: ...
    def submit_get_into_ptr(
        self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]], tag: int = 0
    ) -> int: ...
    def submit_exists(self, keys: Sequence[Key], tag: int = 0) -> int: ...
    def submit_delete(self, keys: Sequence[Key], tag: int = 0) -> int: ...
    def completion_fd(self) -> int: ...
    def poll_completions(self, max: Optional[int] = None, timeout_ms: int = 0) -> List[Completion]: ...
    def cancel(self, id: int) -> bool: ...
    # asyncio (memkv/_aio.py): submit, then await the completion on the running loop.
    async def aput(
        self, keys: Sequence[Key], values: Sequence[Buffer], *, options: Optional[Sequence[Optional[PutOptions]]] = None
    ) -> BatchResult: ...
    async def aget_into(self, keys: Sequence[Key], buffers: Sequence[Buffer]) -> BatchResult: ...
    async def aexists(self, keys: Sequence[Key]) -> BatchResult: ...
    async def adelete(self, keys: Sequence[Key]) -> BatchResult: ...

    def server_for(self, key: Key) -> int: ...
    @property
    def identity_tag(self) -> str: ...
    def report_restores(self, in_time: int, late: int = 0) -> None: ...
    def stats(self) -> Dict[str, Any]: ...
    def servers(self) -> List[Dict[str, Any]]: ...
    def options(self) -> Dict[str, str]: ...
    def register_memory(self, region: Union[Buffer, int], length: Optional[int] = None) -> int: ...
    def unregister_memory(self, region: Union[Buffer, int]) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> "Client": ...
    def __exit__(self, *exc: object) -> None: ...

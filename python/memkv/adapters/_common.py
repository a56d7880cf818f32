"""What every engine adapter shares (docs/engines/README.md).

- Configuration: the settings the engine hands the adapter first, the
  MEMKV_* environment as the fallback, each checked at start-up; a bad value
  is a ConfigError naming the setting, where it came from and what is allowed.
- The client those settings make.
- Keys: every key an adapter writes starts with its namespace, so that two
  models or two layouts sharing a cluster never read each other's pages.
- Page transfers that never raise: a server down, slow or restarted, and a
  corrupted or wrongly sized value, are misses and failed stores, each
  reported to the caller as False; the reason is logged (rate-limited) on the
  "memkv.adapters" logger.
"""

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import memkv

log = logging.getLogger("memkv.adapters")

Key = Union[str, bytes]

# Setting -> environment variable used when the engine's config lacks it.
ENVIRONMENT = {
    "servers": "MEMKV_SERVERS",
    "auth_key": "MEMKV_AUTH_KEY",
    "transport": "MEMKV_TRANSPORT",
    "timeout_ms": "MEMKV_TIMEOUT_MS",
    "connect_timeout_ms": "MEMKV_CONNECT_TIMEOUT_MS",
    "num_connections": "MEMKV_NUM_CONNECTIONS",
    "namespace": "MEMKV_NAMESPACE",
    "log_level": "MEMKV_LOG_LEVEL",
}

TRANSPORTS = ("auto", "tcp", "rdma")
LOG_LEVELS = ("debug", "info", "warn", "error", "off")
MAX_NAMESPACE_BYTES = 200
_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):([0-9]{1,5})$")


class ConfigError(memkv.InvalidArgument):
    """A bad adapter setting. The message names the engine, the setting, where
    the value came from (the engine's config or a MEMKV_* variable) and what
    is allowed. Also a ValueError."""


@dataclass(frozen=True)
class AdapterConfig:
    """The checked settings of one adapter instance."""

    engine: str
    servers: Tuple[str, ...]
    auth_key: str
    transport: str = "auto"
    timeout_ms: int = 5000
    connect_timeout_ms: Optional[int] = None
    num_connections: Optional[int] = None
    namespace: str = ""
    log_level: Optional[str] = None
    # Engine-specific settings, converted by the adapter's own parsers.
    extra: Dict[str, Any] = field(default_factory=dict)

    def client_kwargs(self) -> Dict[str, Any]:
        kwargs: Dict[str, Any] = {"servers": list(self.servers), "auth_key": self.auth_key,
                                  "transport": self.transport, "timeout_ms": self.timeout_ms}
        for name in ("connect_timeout_ms", "num_connections", "log_level"):
            value = getattr(self, name)
            if value is not None:
                kwargs[name] = value
        return kwargs


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a positive integer, not {value!r}")
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            raise ValueError(f"{what} must be a positive integer, not {value!r}")
        value = int(text)
    if not isinstance(value, int) or value <= 0 or value > 0xFFFFFFFF:
        raise ValueError(f"{what} must be an integer in 1..4294967295, not {value!r}")
    return value


def _servers(value: Any, what: str) -> Tuple[str, ...]:
    if isinstance(value, str):
        items = [s.strip() for s in value.split(",") if s.strip()]
    elif isinstance(value, (list, tuple)) and all(isinstance(s, str) for s in value):
        items = [s.strip() for s in value if s.strip()]
    else:
        raise ValueError(f"{what} must be a list of 'host:port' or one comma-separated str, not {value!r}")
    if not items:
        raise ValueError(f"{what} is empty; give at least one 'host:port'")
    for item in items:
        m = _HOST_PORT.match(item)
        if not m or not 1 <= int(m.group(2)) <= 65535:
            raise ValueError(f"{what}: '{item}' is not 'host:port' (port 1..65535; IPv6 as [addr]:port)")
    return tuple(items)


def _auth_key(value: Any, what: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9A-Fa-f]{64}", value.strip()):
        raise ValueError(f"{what} must be 64 hex characters (the server's network.auth_key or its auth.key file)")
    return value.strip()


def _choice(allowed: Sequence[str]) -> Callable[[Any, str], str]:
    def parse(value: Any, what: str) -> str:
        if not isinstance(value, str) or value.strip().lower() not in allowed:
            raise ValueError(f"{what} is {value!r}; allowed: {', '.join(allowed)}")
        return value.strip().lower()
    return parse


def _namespace(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str, not {value!r}")
    if len(value.encode()) > MAX_NAMESPACE_BYTES or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"{what} must be at most {MAX_NAMESPACE_BYTES} bytes of printable characters")
    return value


_PARSERS: Dict[str, Callable[[Any, str], Any]] = {
    "servers": _servers,
    "auth_key": _auth_key,
    "transport": _choice(TRANSPORTS),
    "timeout_ms": _positive_int,
    "connect_timeout_ms": _positive_int,
    "num_connections": _positive_int,
    "namespace": _namespace,
    "log_level": _choice(LOG_LEVELS),
}


def positive_int(value: Any, what: str) -> int:
    """A parser for engine-specific settings: a positive int (or its decimal str)."""
    return _positive_int(value, what)


def boolean(value: Any, what: str) -> bool:
    """A parser for engine-specific settings: a bool, or true/false/1/0 as a str."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise ValueError(f"{what} must be true or false, not {value!r}")


def load_config(engine: str, settings: Optional[Mapping[str, Any]], where: str,
                extra: Optional[Mapping[str, Tuple[Callable[[Any, str], Any], Any]]] = None,
                environ: Optional[Mapping[str, str]] = None) -> AdapterConfig:
    """Checks `settings` (what the engine passed; `where` says where an
    operator writes them) with the environment as the fallback.

    `extra` declares the adapter's own settings: name -> (parser, default);
    a parser takes (value, description) and raises ValueError. Unknown
    settings are refused, naming the allowed ones. Raises ConfigError."""
    environ = os.environ if environ is None else environ
    settings = dict(settings or {})
    extra = dict(extra or {})
    allowed = list(_PARSERS) + list(extra)
    unknown = sorted(k for k in settings if k not in allowed)
    if unknown:
        raise ConfigError(f"memkv {engine} adapter: unknown setting(s) {', '.join(repr(k) for k in unknown)} in "
                          f"{where}; allowed: {', '.join(allowed)}")
    values: Dict[str, Any] = {}
    for name, parser in list(_PARSERS.items()) + [(n, p) for n, (p, _) in extra.items()]:
        if name in settings and settings[name] is not None:
            raw, what = settings[name], f"'{name}' in {where}"
        elif name in ENVIRONMENT and environ.get(ENVIRONMENT[name], "") != "":
            raw, what = environ[ENVIRONMENT[name]], f"{ENVIRONMENT[name]} (environment)"
        else:
            continue
        try:
            values[name] = parser(raw, what)
        except ValueError as e:
            raise ConfigError(f"memkv {engine} adapter: {e}") from None
    for name in ("servers", "auth_key"):
        if name not in values:
            raise ConfigError(f"memkv {engine} adapter: no {name}: set '{name}' in {where} or {ENVIRONMENT[name]}")
    extras = {n: values.pop(n, default) for n, (_, default) in extra.items()}
    return AdapterConfig(engine=engine, extra=extras, **values)


def make_client(config: AdapterConfig) -> "memkv.Client":
    """The client of `config`; a setting the client refuses is a ConfigError."""
    try:
        return memkv.Client(**config.client_kwargs())
    except (memkv.InvalidArgument, TypeError) as e:
        raise ConfigError(f"memkv {config.engine} adapter: the client refused its settings: {e}") from None


def namespaced(namespace: str, *parts: Union[str, bytes, int]) -> bytes:
    """namespace/part/part...: the key layout every adapter writes."""
    out = [namespace.encode()] if namespace else []
    for p in parts:
        out.append(p if isinstance(p, bytes) else str(p).encode())
    return b"/".join(out)


class RateLimitedLog:
    """One WARNING per `interval_s` per kind of failure, with how many were
    folded into it, so that a dead server does not flood the engine's log."""

    def __init__(self, interval_s: float = 10.0) -> None:
        self._interval = interval_s
        self._lock = threading.Lock()
        self._last: Dict[str, float] = {}
        self._folded: Dict[str, int] = {}

    def warn(self, kind: str, message: str) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self._interval:
                self._folded[kind] = self._folded.get(kind, 0) + 1
                return
            folded = self._folded.pop(kind, 0)
            self._last[kind] = now
        suffix = f" ({folded} more like it since the last report)" if folded else ""
        log.warning("%s%s", message, suffix)


class PageIO:
    """Batch transfers between raw page memory and MemKV that never raise.

    Every call returns one bool per key. A miss, a value whose size is not the
    page's, a corrupted value (the client checks each value's checksum), a
    server that is down or slower than timeout_ms: False, and the reason is
    logged (rate-limited). Counters are kept for get_stats()."""

    def __init__(self, client: "memkv.Client", engine: str) -> None:
        self.client = client
        self.engine = engine
        self.errors = RateLimitedLog()
        self._lock = threading.Lock()
        self.counters = {"get_keys": 0, "get_hits": 0, "get_bytes": 0, "put_keys": 0, "put_ok": 0, "put_bytes": 0,
                         "exists_keys": 0, "exists_hits": 0, "errors": 0}

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, v in deltas.items():
                self.counters[k] += v

    def _failed(self, op: str, e: Exception, keys: int) -> None:
        self._count(errors=1)
        self.errors.warn(f"{op}:{type(e).__name__}",
                         f"memkv {self.engine}: {op} of {keys} key(s) failed, treated as "
                         f"{'misses' if op != 'put' else 'not stored'}: {e}")

    def _per_key(self, op: str, result: "memkv.BatchResult") -> None:
        bad = [i for i, s in enumerate(result.statuses) if s not in (0, 1)]
        if bad:
            self._count(errors=1)
            first = result.error(bad[0])
            self.errors.warn(f"{op}:{type(first).__name__}",
                             f"memkv {self.engine}: {op}: {len(bad)} of {len(result)} key(s) failed, treated as "
                             f"{'misses' if op != 'put' else 'not stored'}; first: {first}")

    def get(self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]]) -> List[bool]:
        """Reads keys[i] into addresses[i] (lengths[i] bytes): True where the
        value was there and exactly that size."""
        n = len(keys)
        if n == 0:
            return []
        try:
            result = self.client.batch_get_into_ptr(keys, addresses, lengths)
        except memkv.Error as e:
            self._failed("get", e, n)
            self._count(get_keys=n)
            return [False] * n
        want = [lengths] * n if isinstance(lengths, int) else list(lengths)
        sizes = result.sizes or [0] * n
        ok = [s == 0 and sizes[i] == want[i] for i, s in enumerate(result.statuses)]
        short = [i for i, s in enumerate(result.statuses) if s == 0 and sizes[i] != want[i]]
        if short:
            i = short[0]
            self.errors.warn("get:size", f"memkv {self.engine}: {len(short)} value(s) of the wrong size, treated as "
                                         f"misses; first {keys[i]!r}: {sizes[i]} bytes, the page is {want[i]}")
        self._per_key("get", result)
        hits = sum(ok)
        self._count(get_keys=n, get_hits=hits, get_bytes=sum(w for w, o in zip(want, ok) if o))
        return ok

    def put(self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]]) -> List[bool]:
        """Stores lengths[i] bytes at addresses[i] under keys[i]: True where stored."""
        n = len(keys)
        if n == 0:
            return []
        try:
            result = self.client.batch_put_ptr(keys, addresses, lengths)
        except memkv.Error as e:
            self._failed("put", e, n)
            self._count(put_keys=n)
            return [False] * n
        want = [lengths] * n if isinstance(lengths, int) else list(lengths)
        ok = [s == 0 for s in result.statuses]
        self._per_key("put", result)
        self._count(put_keys=n, put_ok=sum(ok), put_bytes=sum(w for w, o in zip(want, ok) if o))
        return ok

    def exists(self, keys: Sequence[Key]) -> List[bool]:
        """Which keys are present (one round trip per server); all False on failure."""
        n = len(keys)
        if n == 0:
            return []
        try:
            result = self.client.batch_exists(keys)
        except memkv.Error as e:
            self._failed("exists", e, n)
            self._count(exists_keys=n)
            return [False] * n
        present = [s == 0 for s in result.statuses]
        self._per_key("exists", result)
        self._count(exists_keys=n, exists_hits=sum(present))
        return present

    def exists_prefix(self, keys: Sequence[Key]) -> int:
        """How many keys, from keys[0], are present without a gap."""
        present = self.exists(keys)
        for i, p in enumerate(present):
            if not p:
                return i
        return len(present)

    def delete(self, keys: Sequence[Key]) -> List[bool]:
        """Deletes each key: True where it was deleted or already absent."""
        out = []
        for k in keys:
            try:
                self.client.delete(k)
                out.append(True)
            except memkv.Error as e:
                self._failed("delete", e, 1)
                out.append(False)
        return out

    def delete_prefix(self, prefix: bytes, page_size: int = 1000) -> Tuple[int, int]:
        """Deletes every key that starts with `prefix` (found by key listing,
        every server asked): (keys deleted, keys that could not be). A listing
        that fails stops the walk; what was deleted stays deleted."""
        deleted = failed = 0
        cursor = None
        while True:
            try:
                keys, cursor = self.client.list_keys(prefix, cursor, page_size)
            except memkv.Error as e:
                self._failed("list", e, 0)
                return deleted, failed + 1
            for ok in self.delete(keys):
                deleted += ok
                failed += not ok
            if cursor is None:
                return deleted, failed

    def stats(self) -> Dict[str, Any]:
        with self._lock:
            out: Dict[str, Any] = dict(self.counters)
        try:
            out["client"] = self.client.stats()
        except memkv.Error:
            pass
        return out

"""What every engine adapter shares (docs/engines/README.md).

- Configuration: the settings the engine hands the adapter first, the
  MEMKV_* environment as the fallback, each checked at start-up; a bad value
  is a ConfigError naming the setting, where it came from and what is allowed.
  Every client option (memkv.client_options()) is a setting by its name and
  goes to memkv.Client, which checks it; namespace and each adapter's own
  settings are checked here.
- The client those settings make.
- Keys: every key an adapter writes starts with its namespace, so that two
  models or two layouts sharing a cluster never read each other's pages.
- Page transfers that never raise: a server down, slow or restarted, and a
  corrupted or wrongly sized value, are misses and failed stores, each
  reported to the caller as False; the reason is logged (rate-limited) on the
  "memkv.adapters" logger.
- The cache identity (memkv.CacheIdentity): each adapter fills it from the
  engine's own configuration (cache_identity); the identity_* settings, when
  given, replace a field each, and identity_extras adds to the extras. The
  client sends it on each connection and the server keeps every identity's
  keys apart, so two deployments that differ in model, dtype, layout, block
  size or TP rank never read each other's blocks, whatever their keys.
- Restores: after each restore an adapter tells the client how many blocks
  came in time (the engine used them, it did not recompute them) and how
  many late (fetched, but recomputed anyway): PageIO.report_restores.
- Back-pressure: a put an overloaded server sheds (memkv.Busy, per key in a
  batch) is a store skipped, not a failure: it is reported to the caller as
  not stored (False), counted in stores_shed (not in errors) and logged at
  INFO at most once per interval. This is the distinction vLLM's KV-offload
  back-pressure RFC draws between a store skipped under back-pressure and a
  failed one. Loads are unaffected. A put answered Draining (the client
  itself places such keys on the next server) is a failure like Unavailable.
"""

import difflib
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import memkv

log = logging.getLogger("memkv.adapters")

Key = Union[str, bytes]

# The client options (memkv.client_options(), docs/configuration.md): each is
# a setting of every adapter by its name, its MEMKV_* variable the fallback,
# and goes to memkv.Client as a keyword argument, which checks it.
CLIENT_OPTIONS: Tuple[Dict[str, Any], ...] = tuple(memkv.client_options())
NAMESPACE_VARIABLE = "MEMKV_NAMESPACE"
# Setting -> environment variable used when the engine's config lacks it.
ENVIRONMENT: Dict[str, str] = {**{o["name"]: o["env"] for o in CLIENT_OPTIONS}, "namespace": NAMESPACE_VARIABLE}

MAX_NAMESPACE_BYTES = 200
# The most keys one Client.match_prefix call takes.
MAX_MATCH_KEYS = 1024
# The longest block hash a put carries (memkv/put_options.h, kMaxBlockHashBytes).
MAX_HASH_BYTES = 64
_CLIENT_PREFIX = "memkv.Client: "


class ConfigError(memkv.InvalidArgument):
    """A bad adapter setting. The message names the engine, the setting, where
    the value came from (the engine's config or a MEMKV_* variable) and what
    is allowed. Also a ValueError."""


@dataclass(frozen=True)
class AdapterConfig:
    """The settings of one adapter instance: the client options as given
    (memkv.Client checks them in make_client), the namespace (checked) and
    the adapter's own settings (checked by its parsers)."""

    engine: str
    # Client option name -> value as the engine's config or the environment gave it.
    client_options: Dict[str, Any] = field(default_factory=dict)
    # Client option name -> where its value came from ("'timeout_ms' in <where>", "MEMKV_TIMEOUT_MS (environment)").
    sources: Dict[str, str] = field(default_factory=dict)
    namespace: str = ""
    # Engine-specific settings, converted by the adapter's own parsers.
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def servers(self) -> Tuple[str, ...]:
        """The servers as given (for log lines): a list, or one comma-separated str, split."""
        value = self.client_options.get("servers", ())
        items = value.split(",") if isinstance(value, str) else value
        return tuple(str(s).strip() for s in items if str(s).strip())

    def client_kwargs(self) -> Dict[str, Any]:
        return dict(self.client_options)


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


def _namespace(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a str, not {value!r}")
    if len(value.encode()) > MAX_NAMESPACE_BYTES or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"{what} must be at most {MAX_NAMESPACE_BYTES} bytes of printable characters")
    return value


def _client_value(option: Mapping[str, Any], value: Any, what: str) -> Any:
    """`value` as memkv.Client takes it. An integer option given as text (a
    MEMKV_* variable, a str in a YAML or JSON config) becomes an int; every
    other check is the client's. A required option given empty is refused
    here, as the client would only say "none given"."""
    if option["type"] == "integer" and isinstance(value, str):
        text = value.strip()
        if not text.isdigit():
            raise ValueError(f"{what}: {value!r} is not a non-negative integer; allowed: {option['allowed']}")
        return int(text)
    if option["required"]:
        items = value.split(",") if isinstance(value, str) else value if isinstance(value, (list, tuple)) else [1]
        if not any(str(item).strip() for item in items):
            raise ValueError(f"{what} is empty; allowed: {option['allowed']}")
    return value


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


def _unknown(engine: str, unknown: Sequence[str], allowed: Sequence[str], where: str) -> ConfigError:
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, allowed, n=1)
        if close:
            hints.append(f"'{close[0]}'" if len(unknown) == 1 else f"'{close[0]}' for '{name}'")
    hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
    return ConfigError(f"memkv {engine} adapter: unknown setting(s) {', '.join(repr(k) for k in unknown)} in "
                       f"{where}{hint}; allowed: {', '.join(allowed)}")


def load_config(engine: str, settings: Optional[Mapping[str, Any]], where: str,
                extra: Optional[Mapping[str, Tuple[Callable[[Any, str], Any], Any]]] = None,
                environ: Optional[Mapping[str, str]] = None) -> AdapterConfig:
    """Reads `settings` (what the engine passed; `where` says where an
    operator writes them) with the environment as the fallback: every client
    option by its name (memkv.client_options()), `namespace`, and the
    adapter's own settings.

    `extra` declares the adapter's own settings: name -> (parser, default);
    a parser takes (value, description) and raises ValueError. Unknown
    settings are refused, naming the allowed ones. The namespace and the
    extra settings are checked here, the client options by memkv.Client in
    make_client. Raises ConfigError."""
    environ = os.environ if environ is None else environ
    settings = dict(settings or {})
    extra = dict(extra or {})
    allowed = [o["name"] for o in CLIENT_OPTIONS] + ["namespace"] + list(extra)
    unknown = sorted(k for k in settings if k not in allowed)
    if unknown:
        raise _unknown(engine, unknown, allowed, where)

    def given(name: str, variable: Optional[str]) -> Optional[Tuple[Any, str]]:
        if settings.get(name) is not None:
            return settings[name], f"'{name}' in {where}"
        if variable and environ.get(variable, "") != "":
            return environ[variable], f"{variable} (environment)"
        return None

    options: Dict[str, Any] = {}
    sources: Dict[str, str] = {}
    parsed: Dict[str, Any] = {}
    try:
        for option in CLIENT_OPTIONS:
            found = given(option["name"], option["env"])
            if found is None:
                if option["required"]:
                    raise ValueError(f"no {option['name']}: set '{option['name']}' in {where} or {option['env']}")
                continue
            options[option["name"]] = _client_value(option, found[0], found[1])
            sources[option["name"]] = found[1]
        parsers = [("namespace", _namespace, "")] + [(n, p, d) for n, (p, d) in extra.items()]
        for name, parser, default in parsers:
            found = given(name, NAMESPACE_VARIABLE if name == "namespace" else None)
            parsed[name] = default if found is None else parser(found[0], found[1])
    except ValueError as e:
        raise ConfigError(f"memkv {engine} adapter: {e}") from None
    namespace = parsed.pop("namespace")
    return AdapterConfig(engine=engine, client_options=options, sources=sources, namespace=namespace, extra=parsed)


IDENTITY_FIELDS = ("model", "revision", "kv_dtype", "layout", "block_tokens", "tp_rank", "tp_size", "engine",
                   "engine_version")
_IDENTITY_NUMBERS = ("block_tokens", "tp_rank", "tp_size")


def package_version(*modules: str) -> str:
    """The version of the first of these packages that is installed
    (its __version__, else its distribution's), "" when none is."""
    import importlib
    import importlib.metadata
    for name in modules:
        try:
            version = getattr(importlib.import_module(name), "__version__", None)
        except Exception:  # noqa: BLE001 - absent, or not importable here
            version = None
        if version is None:
            try:
                version = importlib.metadata.version(name.replace("_", "-"))
            except Exception:  # noqa: BLE001
                continue
        return str(version)
    return ""


def dtype_name(dtype: Any) -> str:
    """A dtype as text without its module: torch.bfloat16 -> "bfloat16"."""
    if dtype is None:
        return ""
    text = str(dtype)
    return text[len("torch."):] if text.startswith("torch.") else text


def _extras_of(value: Any, what: str) -> Dict[str, str]:
    """identity_extras as given: a mapping, a list of name=value, or that list as one comma-separated str."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ValueError(f"{what} must be a list of name=value, not {value!r}; allowed: name=value,...")
    out: Dict[str, str] = {}
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        name, sep, val = text.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{what}: {text!r} is not name=value; allowed: name=value,...")
        out[name.strip()] = val.strip()
    return out


def cache_identity(config: AdapterConfig, **fields: Any) -> Optional["memkv.CacheIdentity"]:
    """The cache identity of an adapter: `fields` (IDENTITY_FIELDS and
    extras) as the engine's configuration gives them, None or "" where it
    does not say; each identity_* setting given in `config` replaces its
    field, and identity_extras adds to (and overrides) the extras. A model
    nobody names is "unknown". The identity_* settings are taken out of the
    client options: make_client(config, identity) sends the merged identity.
    None when this memkv has no CacheIdentity, and when identity_model is
    given empty (the client's "no identity": keys shared with clients that
    have none, as before identities). A bad value is a ConfigError naming
    where it came from."""
    identity_type = getattr(memkv, "CacheIdentity", None)
    if identity_type is None:
        return None
    values: Dict[str, Any] = {}
    given: Dict[str, str] = {}
    try:
        for name in IDENTITY_FIELDS:
            value = fields.get(name)
            if value is None or value == "":
                continue
            values[name] = int(value) if name in _IDENTITY_NUMBERS else _identity_text(str(value))
        extras = {str(k): _identity_text(str(v)) for k, v in (fields.get("extras") or {}).items() if v is not None}
        if config.client_options.get("identity_model") == "":
            for name in IDENTITY_FIELDS + ("extras",):
                config.client_options.pop(f"identity_{name}", None)
            return None
        for name in IDENTITY_FIELDS + ("extras",):
            option = f"identity_{name}"
            if option not in config.client_options:
                continue
            value = config.client_options.pop(option)
            given[name] = config.sources.get(option, f"'{option}'")
            if name == "extras":
                extras.update(_extras_of(value, given[name]))
            elif name in _IDENTITY_NUMBERS:
                values[name] = _identity_number(value, given[name])
            else:
                values[name] = value if isinstance(value, str) else str(value)
        values.setdefault("model", "unknown")
        return identity_type(**values, extras=extras)
    except (TypeError, ValueError) as e:
        text = str(e)
        text = text[len("CacheIdentity: "):] if text.startswith("CacheIdentity: ") else text
        named = [where for name, where in given.items() if name in text and where not in text]
        where = f"{named[0]}: " if named else ""
        raise ConfigError(f"memkv {config.engine} adapter: cache identity: {where}{text}") from None


MAX_IDENTITY_TEXT_BYTES = 256  # the client's limit on each text field


def _identity_text(text: str) -> str:
    """An engine's value as an identity field: past the client's 256 bytes,
    cut, with 16 hex digits of the whole value's SHA-256 after a '~', so
    that two long values stay apart."""
    raw = text.encode()
    if len(raw) <= MAX_IDENTITY_TEXT_BYTES:
        return text
    import hashlib
    head = raw[:MAX_IDENTITY_TEXT_BYTES - 17].decode(errors="ignore")
    return f"{head}~{hashlib.sha256(raw).hexdigest()[:16]}"


def _identity_number(value: Any, what: str) -> int:
    """A non-negative int (or its decimal str)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"{what}: {value!r} is not a count; allowed: an integer in 0..4294967295")
    return value


def make_client(config: AdapterConfig, identity: Optional["memkv.CacheIdentity"] = None) -> "memkv.Client":
    """The client of `config`, with `identity` (cache_identity) when given.
    A client option it refuses is a ConfigError in the client's words,
    naming where the value came from."""
    kwargs = config.client_kwargs()
    if identity is not None:
        kwargs.update(identity.options())
    try:
        return memkv.Client(**kwargs)
    except (memkv.InvalidArgument, TypeError) as e:
        text = str(e)
        text = text[len(_CLIENT_PREFIX):] if text.startswith(_CLIENT_PREFIX) else text
        name = getattr(e, "option", None)
        if name in config.sources:
            text = text[len(name) + 2:] if text.startswith(f"{name}: ") else text
            raise ConfigError(f"memkv {config.engine} adapter: {config.sources[name]}: {text}") from None
        raise ConfigError(f"memkv {config.engine} adapter: the client refused its settings: {text}") from None


def chained_options(keys: Sequence[Key], hashes: Sequence[Optional[Union[bytes, int]]],
                    parent_key: Optional[Key] = None, parent_hash: Optional[Union[bytes, int]] = None,
                    ) -> List["memkv.PutOptions"]:
    """The put options of blocks the engine hands in chain order: block i
    names block i - 1 as its parent (key and hash), block 0 the given parent
    (None: unknown, or a chain head). A hash that is None, or does not fit a
    PutOptions (bytes over 64, an int past 64 bits), is left out, and so is
    a parent hash of another kind than the block's. Built by the client
    (memkv.PutOptions.chain), without a Python call per block."""
    return memkv.PutOptions.chain(keys, hashes, parent_key or None, parent_hash)


def put_options(block_hash: Optional[Union[bytes, int]] = None, parent_key: Optional[Key] = None,
                parent_hash: Optional[Union[bytes, int]] = None) -> "memkv.PutOptions":
    """A memkv.PutOptions of what is usable among these; never raises (an
    adapter's data path does not): a hash the client refuses is dropped,
    with the parent hash when the two are not of one kind."""
    if not _usable_hash(block_hash):
        block_hash = None
    if not _usable_hash(parent_hash) or (block_hash is not None and type(block_hash) is not type(parent_hash)):
        parent_hash = None
    return memkv.PutOptions(parent_key=parent_key or None, block_hash=block_hash, parent_hash=parent_hash)


def hashed_options(block_hashes: Sequence[Optional[Union[bytes, int]]]) -> List["memkv.PutOptions"]:
    """put_options(block_hash=h) for each of `block_hashes` (blocks that are
    not one chain: no parent), built by the client in one call
    (memkv.PutOptions.of_hashes); a hash it cannot carry is left out."""
    return memkv.PutOptions.of_hashes(block_hashes)


def _usable_hash(value: Any) -> bool:
    if isinstance(value, bytes):
        return 0 < len(value) <= MAX_HASH_BYTES
    return isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < (1 << 64)


def prefix_restores(loaded: Sequence[bool]) -> Tuple[int, int]:
    """(in time, late) of one restore of blocks in prefix order, for an
    engine that uses only the leading run of loaded blocks and recomputes
    from its first missing one: the blocks of that run are in time, any
    block loaded after a gap is late."""
    run = loaded.index(False) if False in loaded else len(loaded)
    return run, sum(1 for ok in loaded[run:] if ok)


def namespaced(namespace: str, *parts: Union[str, bytes, int]) -> bytes:
    """namespace/part/part...: the key layout every adapter writes."""
    out = [namespace.encode()] if namespace else []
    for p in parts:
        out.append(p if isinstance(p, bytes) else str(p).encode())
    return b"/".join(out)


class RateLimitedLog:
    """One line (WARNING unless `level` says otherwise) per `interval_s` per
    kind of event, with how many were folded into it, so that a dead or
    overloaded server does not flood the engine's log."""

    def __init__(self, interval_s: float = 10.0, level: int = logging.WARNING) -> None:
        self._interval = interval_s
        self._level = level
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
        log.log(self._level, "%s%s", message, suffix)


def _kind(error: Exception) -> str:
    """The kind a failure is logged under: Draining is reported with
    Unavailable (the client retries such puts on the next server, so it only
    surfaces when no server takes the key)."""
    return "Unavailable" if isinstance(error, memkv.Draining) else type(error).__name__


class PageIO:
    """Batch transfers between raw page memory and MemKV that never raise.

    Every call returns one bool per key. A miss, a value whose size is not the
    page's, a corrupted value (the client checks each value's checksum), a
    server that is down or slower than timeout_ms: False, and the reason is
    logged (rate-limited). A put the server shed (Busy) is False too, but
    counted in stores_shed rather than errors, and logged at INFO (see the
    module's docstring). Counters are kept for get_stats()."""

    def __init__(self, client: "memkv.Client", engine: str) -> None:
        self.client = client
        self.engine = engine
        self.errors = RateLimitedLog()
        self.shed = RateLimitedLog(level=logging.INFO)
        self._lock = threading.Lock()
        self.counters = {"get_keys": 0, "get_hits": 0, "get_bytes": 0, "put_keys": 0, "put_ok": 0, "put_bytes": 0,
                         "stores_shed": 0, "exists_keys": 0, "exists_hits": 0, "errors": 0,
                         "restored_in_time": 0, "restored_late": 0}

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for k, v in deltas.items():
                self.counters[k] += v

    def _failed(self, op: str, e: Exception, keys: int) -> None:
        if op == "put" and isinstance(e, memkv.Busy):
            self._shed(keys, keys, e)
            return
        self._count(errors=1)
        self.errors.warn(f"{op}:{_kind(e)}",
                         f"memkv {self.engine}: {op} of {keys} key(s) failed, treated as "
                         f"{'misses' if op != 'put' else 'not stored'}: {e}")

    def _shed(self, shed: int, keys: int, first: Exception) -> None:
        """Counts and logs (INFO, rate-limited) puts an overloaded server shed."""
        self._count(stores_shed=shed)
        self.shed.warn("put:Busy", f"memkv {self.engine}: the tier is busy: {shed} of {keys} store(s) shed, "
                                   f"not stored (loads go on): {first}")

    def _per_key(self, op: str, result: "memkv.BatchResult") -> None:
        statuses = result.statuses
        if op == "put":
            shed = [i for i, s in enumerate(statuses) if s == memkv.StatusCode.BUSY]
            if shed:
                self._shed(len(shed), len(statuses), result.error(shed[0]))
        busy = memkv.StatusCode.BUSY if op == "put" else None  # a shed put is not a failure
        bad = [i for i, s in enumerate(statuses) if s not in (0, 1) and s != busy]
        if bad:
            self._count(errors=1)
            first = result.error(bad[0])
            self.errors.warn(f"{op}:{_kind(first)}",
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
        return self.get_result(keys, lengths, result)

    def get_result(self, keys: Sequence[Key], lengths: Union[int, Sequence[int]],
                   result: "memkv.BatchResult") -> List[bool]:
        """What get makes of its batch's result (also of a submit_get_into_ptr
        completion): True where the value was there and exactly that size."""
        n = len(keys)
        if result.ok:  # every value there: the common case, without a pass per key when all sizes are right
            sizes = result.sizes
            if (sizes.count(lengths) == n) if isinstance(lengths, int) else (sizes == list(lengths)):
                self._count(get_keys=n, get_hits=n, get_bytes=sum(sizes))
                return [True] * n
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

    def put(self, keys: Sequence[Key], addresses: Sequence[int], lengths: Union[int, Sequence[int]],
            options: Optional[Sequence[Optional["memkv.PutOptions"]]] = None) -> List[bool]:
        """Stores lengths[i] bytes at addresses[i] under keys[i], with
        options[i] (a memkv.PutOptions or None) when given: True where stored."""
        n = len(keys)
        if n == 0:
            return []
        try:
            result = self.client.batch_put_ptr(keys, addresses, lengths, options=options)
        except memkv.Error as e:
            self._failed("put", e, n)
            self._count(put_keys=n)
            return [False] * n
        return self.put_result(keys, lengths, result)

    def put_result(self, keys: Sequence[Key], lengths: Union[int, Sequence[int]],
                   result: "memkv.BatchResult") -> List[bool]:
        """What put makes of its batch's result: True where stored."""
        n = len(keys)
        if result.ok:  # all stored: the common case, without a pass per key
            self._count(put_keys=n, put_ok=n, put_bytes=lengths * n if isinstance(lengths, int) else sum(lengths))
            return [True] * n
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
        return self.exists_result(result)

    def exists_result(self, result: "memkv.BatchResult") -> List[bool]:
        """What exists makes of its batch's result: True where present."""
        n = len(result)
        present = [s == 0 for s in result.statuses]
        self._per_key("exists", result)
        self._count(exists_keys=n, exists_hits=sum(present))
        return present

    def exists_prefix(self, keys: Sequence[Key]) -> int:
        """How many keys, from keys[0], are present without a gap: the
        client's match_prefix (one request per server, each stopping at its
        first miss; the client itself asks a server that predates it with
        exists), MAX_MATCH_KEYS at a time, asking no further than the first
        slice with a gap. A slice the client cannot match (an error other
        than a closed client) is counted from a batch exists instead, which
        reads the same: a key whose server cannot be asked is a miss."""
        hit = 0
        for i in range(0, len(keys), MAX_MATCH_KEYS):
            part = keys[i:i + MAX_MATCH_KEYS]
            n = self._match_prefix(part)
            hit += n
            if n < len(part):
                break
        return hit

    def _match_prefix(self, keys: Sequence[Key]) -> int:
        try:
            n = self.client.match_prefix(keys)
        except memkv.FailedPrecondition as e:  # closed: nothing else will answer either
            self._failed("exists", e, len(keys))
            self._count(exists_keys=len(keys))
            return 0
        except memkv.Error as e:
            self.errors.warn(f"match:{type(e).__name__}", f"memkv {self.engine}: match_prefix of {len(keys)} key(s) "
                                                          f"failed, counted from exists instead: {e}")
            present = self.exists(keys)
            return present.index(False) if False in present else len(present)
        self._count(exists_keys=len(keys), exists_hits=n)
        return n

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

    def delete_result(self, result: "memkv.BatchResult") -> List[bool]:
        """What a batch delete's result (a submit_delete completion) means:
        True where the key was deleted or already absent."""
        self._per_key("delete", result)
        return [s in (0, 1) for s in result.statuses]

    def failed_submission(self, op: str, error: Exception, keys: int) -> None:
        """Counts and logs (rate-limited) a submission the client refused
        ("set" is a put)."""
        self._failed("put" if op == "set" else op, error, keys)

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

    def report_restores(self, in_time: int, late: int) -> None:
        """Tells the client (Client.report_restores) how many blocks of a
        restore came in time (the engine used them instead of recomputing
        them) and how many late (fetched, but the engine recomputed them);
        counted in restored_in_time and restored_late too. Never raises."""
        if in_time <= 0 and late <= 0:
            return
        self._count(restored_in_time=max(in_time, 0), restored_late=max(late, 0))
        report = getattr(self.client, "report_restores", None)
        if report is None:
            return
        try:
            report(max(in_time, 0), max(late, 0))
        except Exception as e:  # noqa: BLE001 - closed, or an older client: the data path goes on
            self.errors.warn(f"report:{type(e).__name__}", f"memkv {self.engine}: reporting restores failed: {e}")

    def stats(self) -> Dict[str, Any]:
        with self._lock:
            out: Dict[str, Any] = dict(self.counters)
        try:
            out["client"] = self.client.stats()
        except memkv.Error:
            pass
        return out

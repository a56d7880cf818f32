"""What the vLLM adapter knows of vLLM's tiered-offloading API: the classes
it takes from vLLM (or local stand-ins when vLLM is absent), the check that
the installed release has the API MemKVTierManager implements, and whether
vLLM seeds its block hashes at random."""

from __future__ import annotations

import dataclasses
import enum
import inspect
import os
from typing import Any, Optional, Tuple

_LOCALITIES = ("LOCAL", "REMOTE")


class IncompatibleVLLMError(RuntimeError):
    """The installed vLLM's secondary-tier API is not the one this adapter
    implements; the message says what differs and what is needed."""

class _LocalLookupResult(enum.Enum):
    """Stand-in for vllm.v1.kv_offload.base.LookupResult when vLLM is absent."""

    MISS = enum.auto()
    HIT = enum.auto()
    HIT_PENDING = enum.auto()
    RETRY = enum.auto()


@dataclasses.dataclass
class _LocalRequestOffloadingContext:
    """Stand-in for vllm.v1.kv_offload.base.RequestOffloadingContext."""

    policy: Any = "chunk_level"


@dataclasses.dataclass
class _LocalJobResult:
    """Stand-in for vllm.v1.kv_offload.tiering.base.JobResult."""

    job_id: int
    success: bool
    successful_keys: Optional[Any] = None
    transfer_time: Optional[float] = None


class _LocalTierBase:
    """Stand-in for vllm.v1.kv_offload.tiering.base.SecondaryTierManager, so
    that this module imports (and the tier runs, e.g. in tests and benchmarks)
    without vLLM."""

    medium = None

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str) -> None:
        self._offloading_spec = offloading_spec
        self._primary_kv_view = primary_kv_view
        self.tier_type = tier_type
        self.locality = None

def _random_hash_seed() -> Optional[bool]:
    """Whether vLLM seeds its block-hash chain at random in this process (so
    that no other process, nor this one after a restart, asks for the keys
    it stores): True, False, or None while that is not known yet.

    Never with PYTHONHASHSEED set. vLLM before 0.30 seeds at random whenever
    it is unset; from 0.30 on only for a hash algorithm that is not
    collision resistant (prefix_caching_hash_algo xxhash or xxhash_cbor):
    the default, sha256, seeds with a fixed value. vLLM picks the seed
    (init_none_hash) after it has built its offloading tiers."""
    if os.environ.get("PYTHONHASHSEED") is not None or not _VLLM_VERSION:
        return False  # set, or no vLLM (no block hashes of vLLM's)
    try:
        from vllm.v1.core import kv_cache_utils
    except Exception:
        return False
    default = getattr(kv_cache_utils, "DEFAULT_NONE_HASH_SEED", None)
    seed_of = getattr(kv_cache_utils, "get_none_hash_seed", None)
    if default is None or not callable(seed_of):
        return True  # a release that seeds at random without PYTHONHASHSEED
    if getattr(kv_cache_utils, "_NONE_HASH_SEED", default) is None:
        return None  # not seeded yet
    try:
        return seed_of() != default
    except Exception:
        return None


def _api_problem(base: Any, lookup_result: Any) -> Optional[str]:
    """What makes vLLM's tier API differ from the one implemented here, or None."""
    problems = []
    try:
        params = inspect.signature(base.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    missing = [p for p in ("offloading_spec", "primary_kv_view", "tier_type") if p not in params]
    if missing:
        problems.append(f"SecondaryTierManager.__init__{tuple(p for p in params if p != 'self')} lacks "
                        f"{', '.join(missing)}")
    for method in ("get_finished_jobs", "drain_jobs", "submit_store", "submit_load", "lookup"):
        if not callable(getattr(base, method, None)):
            problems.append(f"SecondaryTierManager has no {method}()")
    if lookup_result is None:
        problems.append("vllm.v1.kv_offload.base has no LookupResult (lookup() returned bool | None)")
    else:
        absent = [m for m in ("HIT", "MISS", "RETRY") if not hasattr(lookup_result, m)]
        if absent:
            problems.append(f"LookupResult lacks {', '.join(absent)}")
    return "; ".join(problems) or None


def _import_vllm() -> Tuple[Any, Any, Any, Any, Optional[str], str]:
    """(tier base, LookupResult, RequestOffloadingContext, JobResult, problem, version)."""
    local = (_LocalTierBase, _LocalLookupResult, _LocalRequestOffloadingContext, _LocalJobResult)
    try:
        from vllm.v1.kv_offload import base as offload_base
        from vllm.v1.kv_offload.tiering import base as tiering_base
    except Exception as e:  # ImportError, or a vLLM install that fails on import
        try:
            import vllm
        except ImportError:
            return (*local, None, "")  # no vLLM: the local stand-ins
        except Exception:
            vllm = None
        version = str(getattr(vllm, "__version__", "unknown"))
        return (*local, f"vllm.v1.kv_offload.tiering.base does not import ({e!r})", version)
    import vllm
    version = str(getattr(vllm, "__version__", "unknown"))
    base = getattr(tiering_base, "SecondaryTierManager", None)
    lookup_result = getattr(offload_base, "LookupResult", None)
    job_result = getattr(tiering_base, "JobResult", None)
    context = getattr(offload_base, "RequestOffloadingContext", None) or _LocalRequestOffloadingContext
    problem = "vllm.v1.kv_offload.tiering.base has no SecondaryTierManager" if base is None else \
        _api_problem(base, lookup_result)
    if problem is None and job_result is None:
        problem = "vllm.v1.kv_offload.tiering.base has no JobResult"
    if problem is not None:
        # The class still has to be constructible, to raise the clear error
        # from __init__ rather than "can't instantiate abstract class".
        return _LocalTierBase, _LocalLookupResult, context, _LocalJobResult, problem, version
    return base, lookup_result, context, job_result, None, version


_TierBase, LookupResult, RequestOffloadingContext, JobResult, _VLLM_PROBLEM, _VLLM_VERSION = _import_vllm()

try:
    from vllm.v1.kv_offload.base import Locality as _Locality
    _REMOTE = getattr(_Locality, "REMOTE", None)
    if _REMOTE is None or not all(hasattr(_Locality, name) for name in _LOCALITIES):
        _Locality = None
except Exception:  # vLLM absent, or a release without Locality
    _Locality = None
    _REMOTE = None


def _result_fields(cls: Any) -> Tuple[str, ...]:
    if dataclasses.is_dataclass(cls):
        return tuple(f.name for f in dataclasses.fields(cls))
    try:
        return tuple(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return ("job_id", "success")


_RESULT_FIELDS = _result_fields(JobResult)


def _incompatible(problem: str) -> IncompatibleVLLMError:
    return IncompatibleVLLMError(
        f"memkv vllm adapter: the installed vLLM ({_VLLM_VERSION or 'unknown version'}) has another "
        f"secondary-tier API than MemKVTierManager implements: {problem}. MemKVTierManager needs "
        "SecondaryTierManager(offloading_spec, primary_kv_view, tier_type) with lookup() -> LookupResult "
        "(HIT/MISS/RETRY), submit_store/submit_load(TransferJob), get_finished_jobs() and drain_jobs() "
        "(vllm/v1/kv_offload/tiering/base.py of vLLM 0.25 and later; docs/engines/vllm.md). Use a vLLM "
        "with that API.")

def _base_init_params() -> Tuple[str, ...]:
    """Constructor parameters of vLLM's base beyond the three every tier gets
    (forwarded to it when the config carries them, e.g. a store policy)."""
    try:
        params = inspect.signature(_TierBase.__init__).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(p for p, v in params.items()
                 if p not in ("self", "offloading_spec", "primary_kv_view", "tier_type")
                 and v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY))

"""A real client whose puts of chosen keys come back Busy (or Draining), as
from an overloaded (or draining) server.

The adapters' tests swap it in where they already swap in recording clients
(the adapter's client attribute, or its PageIO's). Every other call, and the
puts of the other keys, go to the real client and a real server: only the
chosen keys are held back and answered with the status a shedding server
sends, so that what an adapter stores, loads and reports stays checkable.
"""

from typing import Any, Callable, Dict, List, Optional, Sequence

import memkv


class ShedResult:
    """A BatchResult of a put whose shed keys answer `code` and the others
    what the real batch of them answered."""

    def __init__(self, statuses: List[int], errors: Dict[int, Optional[Exception]]) -> None:
        self.statuses = statuses
        self.sizes = None
        self._errors = errors

    @property
    def ok(self) -> bool:
        return all(s == 0 for s in self.statuses)

    def __len__(self) -> int:
        return len(self.statuses)

    def __getitem__(self, i: int) -> int:
        return self.statuses[i]

    def __iter__(self):
        return iter(self.statuses)

    def error(self, i: int) -> Optional[Exception]:
        return self._errors.get(i)


class ShedCompletion:
    """A completion whose result is a ShedResult; the rest as the real one."""

    def __init__(self, real: Any, result: ShedResult) -> None:
        self._real = real
        self.result = result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class SheddingClient:
    """Forwards to `real`; puts (batch_put_ptr, submit_put_ptr) of the keys
    for which shed(key) is true are not sent and answer `code` (Busy unless
    told), with the message a server gives. Counts the keys it shed."""

    def __init__(self, real: "memkv.Client", shed: Callable[[bytes], bool],
                 code: int = memkv.StatusCode.BUSY) -> None:
        self.real = real
        self.shed = shed
        self.code = int(code)
        self.shed_keys = 0
        self._pending: Dict[int, tuple] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def _split(self, keys: Sequence[Any]) -> List[int]:
        return [i for i, k in enumerate(keys) if not self.shed(k if isinstance(k, bytes) else str(k).encode())]

    def _error(self) -> Exception:
        cls = memkv.Busy if self.code == memkv.StatusCode.BUSY else memkv.Draining
        what = "overloaded, put shed" if cls is memkv.Busy else "draining, takes no new keys"
        return cls(f"memkv.Client.batch_put: {cls.__name__}: the server is {what}", self.code)

    def _merge(self, n: int, kept: List[int], result: Any) -> ShedResult:
        statuses = [self.code] * n
        errors: Dict[int, Optional[Exception]] = {}
        for i in range(n):
            errors[i] = self._error()
        for j, i in enumerate(kept):
            statuses[i] = int(result.statuses[j]) if result is not None else 0
            errors[i] = result.error(j) if result is not None else None
        self.shed_keys += n - len(kept)
        return ShedResult(statuses, errors)

    @staticmethod
    def _pick(values: Any, kept: List[int]) -> Any:
        if values is None or isinstance(values, int):
            return values
        return [values[i] for i in kept]

    def batch_put_ptr(self, keys, addresses, lengths, options=None, **kwargs):
        kept = self._split(keys)
        result = None
        if kept:
            result = self.real.batch_put_ptr(self._pick(keys, kept), self._pick(addresses, kept),
                                             self._pick(lengths, kept), options=self._pick(options, kept), **kwargs)
        return self._merge(len(keys), kept, result)

    def submit_put_ptr(self, keys, addresses, lengths, options=None, **kwargs):
        kept = self._split(keys)
        if kept:
            sid = self.real.submit_put_ptr(self._pick(keys, kept), self._pick(addresses, kept),
                                           self._pick(lengths, kept), options=self._pick(options, kept), **kwargs)
        else:  # every key shed: an empty submission still completes, as the server's answer would
            sid = self.real.submit_exists([])
        self._pending[sid] = (len(keys), kept)
        return sid

    def poll_completions(self, *args, **kwargs):
        done = self.real.poll_completions(*args, **kwargs)
        out = []
        for c in done:
            held = self._pending.pop(c.id, None)
            if held is None:
                out.append(c)
                continue
            n, kept = held
            out.append(ShedCompletion(c, self._merge(n, kept, c.result if kept else None)))
        return out

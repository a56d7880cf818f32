"""asyncio over a Client's asynchronous batches: `await client.aget_into(keys,
buffers)` and friends.

Each call submits (Client.submit_*, returning at once) and awaits a future that
a reader on the client's completion_fd() resolves from poll_completions(), on
the event loop's own thread: no thread per call, no executor. The reader is
added when the first call of a client on a loop starts and removed when its
last ends.

Rules:
- The reader takes every completion of the client, so on one client use either
  these coroutines or poll_completions() yourself, not both at once.
- Cancelling the awaiting task cancels the submission when it has not started;
  one already running finishes on its own, and its keys and buffers stay held
  until its completion arrives (the reader then drops it).
- Closing the client (close() or leaving its `with` block) while calls are
  awaited wakes each of them with memkv.FailedPrecondition "the client is
  closed": close() drops the completions of what it cancels, so they would
  otherwise never come.
"""

import asyncio
from typing import Any, Callable, Dict, Tuple

from ._errors import FailedPrecondition
from ._memkv import BatchResult, Client

# (id(client), loop) -> its reader, while calls are in flight.
_readers: Dict[Tuple[int, asyncio.AbstractEventLoop], "_Reader"] = {}


class _Reader:
    def __init__(self, client: Client, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self.loop = loop
        self.fd = client.completion_fd()
        # Submission id -> its future; a cancelled one stays until its
        # completion comes, so the reader keeps polling for it.
        self.futures: Dict[int, asyncio.Future] = {}
        loop.add_reader(self.fd, self._ready)

    def _fail(self, error: BaseException) -> None:
        """Wakes every awaiter with `error` and stops reading; on the loop."""
        for future in self.futures.values():
            if not future.done():
                future.set_exception(error)
        self.futures.clear()
        self.loop.remove_reader(self.fd)
        if _readers.get((id(self.client), self.loop)) is self:
            del _readers[(id(self.client), self.loop)]

    def closing(self) -> None:
        """The client is about to close (any thread): its queue, and the fd,
        go with it, so stop reading it and fail the awaiters."""
        error = FailedPrecondition("the client is closed")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._fail(error)
        elif not self.loop.is_closed():
            # Not waited for: the loop's thread may be the one close() waits
            # on. A readiness seen meanwhile finds the client closed and fails
            # the awaiters the same way.
            self.loop.call_soon_threadsafe(self._fail, error)

    def _ready(self) -> None:
        try:
            done = self.client.poll_completions()
        except Exception as error:  # closed under us: wake every awaiter
            self._fail(error)
            return
        else:
            for completion in done:
                future = self.futures.pop(completion.id, None)
                if future is not None and not future.done():
                    future.set_result(completion)
        if not self.futures:
            self.loop.remove_reader(self.fd)
            _readers.pop((id(self.client), self.loop), None)


async def _run(client: Client, submit: Callable[..., int], *args: Any) -> BatchResult:
    loop = asyncio.get_running_loop()
    key = (id(client), loop)
    reader = _readers.get(key)
    if reader is None or reader.client is not client:
        reader = _readers[key] = _Reader(client, loop)
    submission = submit(*args)
    future = loop.create_future()
    reader.futures[submission] = future
    try:
        completion = await future
    except asyncio.CancelledError:
        try:
            client.cancel(submission)
        except Exception:
            pass
        raise
    return completion.result


async def aput(self: Client, keys, values, *, options=None) -> BatchResult:
    """await aput(keys, values, *, options=None) -> BatchResult: batch_put
    (options: one memkv.PutOptions or None per key) without blocking the loop."""
    if options is None:
        return await _run(self, self.submit_put, keys, values)
    return await _run(self, lambda k, v: self.submit_put(k, v, options=options), keys, values)


async def aget_into(self: Client, keys, buffers) -> BatchResult:
    """await aget_into(keys, buffers) -> BatchResult: batch_get_into without blocking the loop."""
    return await _run(self, self.submit_get_into, keys, buffers)


async def aexists(self: Client, keys) -> BatchResult:
    """await aexists(keys) -> BatchResult: batch_exists without blocking the loop."""
    return await _run(self, self.submit_exists, keys)


async def adelete(self: Client, keys) -> BatchResult:
    """await adelete(keys) -> BatchResult: OK deleted, NOT_FOUND was absent."""
    return await _run(self, self.submit_delete, keys)


def _closing(client: Client) -> None:
    for reader in [r for r in _readers.values() if r.client is client]:
        reader.closing()


def install() -> None:
    close = Client.close
    leave = Client.__exit__

    def close_waking_awaiters(self: Client) -> None:
        _closing(self)
        close(self)

    def exit_waking_awaiters(self: Client, *exc: Any) -> None:
        _closing(self)
        leave(self, *exc)

    close_waking_awaiters.__doc__ = close.__doc__
    exit_waking_awaiters.__doc__ = leave.__doc__
    Client.close = close_waking_awaiters
    Client.__exit__ = exit_waking_awaiters
    Client.aput = aput
    Client.aget_into = aget_into
    Client.aexists = aexists
    Client.adelete = adelete

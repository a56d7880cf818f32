"""Futures over a client's asynchronous batches, for an adapter whose engine
wants a concurrent.futures.Future (or an awaitable) and never polls MemKV.

A submission goes to the client's one asynchronous door (Client.submit_*,
run by its driver threads; docs/client-library.md, "Asynchronous calls");
one thread per CompletionFutures waits on the client's completion fd, takes
the completions and completes each submission's Future with what its
`then` makes of the BatchResult. The thread moves no bytes: it only turns
completions into results.

The client is looked up through `client_of()` at each submission and each
poll, so a caller that swaps the client object (a recording or shedding
wrapper in tests) has both go through the same one. No one else may take
this client's completions (poll_completions, or the asyncio coroutines of
memkv._aio): they would never reach their Futures.
"""

import concurrent.futures
import os
import select
import threading
from typing import Any, Callable, Dict, Optional, Tuple

import memkv

from ._common import log

# What a submission's completion is turned into: then(its BatchResult), or
# then(None) when the completion can no longer come (the client was closed
# before close() here), so that what the submission held is still released.
Then = Callable[[Optional["memkv.BatchResult"]], Any]


class CompletionFutures:
    """Owned by one adapter instance, for one client. submit() and close()
    may be called from any thread; `then` callbacks run on this object's
    thread, one at a time, and must not block on another Future of it."""

    def __init__(self, client_of: Callable[[], "memkv.Client"], name: str) -> None:
        self._client_of = client_of
        self._name = name
        # Guards what follows. A submission is recorded under it before a
        # poll can see its completion (polls also take it to look ids up).
        self._lock = threading.Condition()
        self._pending: Dict[int, Tuple[concurrent.futures.Future, Then]] = {}
        self._thread: Optional[threading.Thread] = None
        self._wake: Optional[Tuple[int, int]] = None  # (read, write) ends of a pipe that stops the thread
        self._closed = False

    def submit(self, call: Callable[["memkv.Client"], int], then: Then) -> concurrent.futures.Future:
        """call(client) submits one batch and returns its submission id;
        returns a Future of then(the batch's BatchResult). What call raises
        (memkv.Error, TypeError, ...) is raised here, nothing submitted; so
        is memkv.FailedPrecondition once close() has begun."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_running_or_notify_cancel()  # the bytes are lent until the completion: not cancellable
        with self._lock:
            if self._closed:
                raise memkv.FailedPrecondition(f"{self._name}: closed")
            self._start_locked()
            sid = call(self._client_of())
            self._pending[sid] = (future, then)
        return future

    def pending(self) -> int:
        """Submissions whose Future is not completed yet."""
        with self._lock:
            return len(self._pending)

    def close(self) -> None:
        """Refuses new submissions, waits for every pending one to complete
        (each ends within the client's timeout_ms; close the client only
        after this), then stops the thread. Idempotent."""
        with self._lock:
            self._closed = True
            thread = self._thread
            while self._pending and thread is not None and thread.is_alive() and not self._client_closed():
                self._lock.wait(0.5)  # woken by each completion; the bound re-checks the thread and the client
            wake = self._wake
        if thread is None:
            return
        if wake is not None:
            try:
                os.write(wake[1], b"x")
            except OSError:
                pass
        thread.join()
        with self._lock:
            if self._wake is not None:
                for fd in self._wake:
                    os.close(fd)
                self._wake = None
            self._thread = None

    def _client_closed(self) -> bool:
        """A client closed first drops the completions of what it cancelled."""
        try:
            return bool(self._client_of().closed)
        except Exception:
            return True

    # --- the completion thread ---------------------------------------------

    def _start_locked(self) -> None:
        if self._thread is not None:
            return
        fd = self._client_of().completion_fd()
        self._wake = os.pipe()
        self._thread = threading.Thread(target=self._run, args=(fd, self._wake[0]), name=f"{self._name}-completions",
                                        daemon=True)
        self._thread.start()

    def _run(self, fd: int, wake: int) -> None:
        while True:
            try:
                ready = select.select([fd, wake], [], [])[0]
            except (OSError, ValueError) as e:  # the client's fd went away under us
                log.warning("memkv %s: completion wait ended: %r", self._name, e)
                break
            if wake in ready:
                break
            try:
                done = self._client_of().poll_completions()
            except memkv.Error as e:  # closed under us
                log.warning("memkv %s: taking completions failed: %r", self._name, e)
                break
            for completion in done:
                with self._lock:
                    item = self._pending.pop(completion.id, None)
                if item is not None:
                    self._settle(item[0], item[1], completion.result)
        self._fail_pending()

    def _settle(self, future: concurrent.futures.Future, then: Then, result: Any) -> None:
        try:
            future.set_result(then(result))
        except BaseException as e:  # noqa: B902 (handed to the Future's owner)
            future.set_exception(e)
        with self._lock:
            self._lock.notify_all()

    def _fail_pending(self) -> None:
        """The thread is ending with submissions still pending (the client
        was closed first): their completions will never come."""
        with self._lock:
            left, self._pending = list(self._pending.values()), {}
        for future, then in left:
            self._settle(future, then, None)

"""Blocking calls — the store's — in threads, off the event loop; the thread that went idle last takes the next one.

``anyio.to_thread`` hands a call to whichever of its threads wakes first, about 0.1 ms a call, and a flow makes one
store call per round. Here the thread that served the caller's previous call (still hot, and already awake) takes
it for a fraction of that. A new thread starts only when every one is busy, so a slow store still stalls only the
flow that waits for it; past ``LIMIT`` calls at once, the rest go to anyio's own threads.

Built on asyncio: mcpcli's only event loop (anyio's asyncio backend, and Textual's).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

from mcpcli.platform import fork_hook

T = TypeVar("T")

LIMIT = 40
"""Threads at most (anyio's default for its own)."""

_Job = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]


async def run_sync(call: Callable[[], T]) -> T:
    """``call()`` in a thread; the caller waits for it even when cancelled meanwhile (as ``anyio.to_thread``
    does without abandoning: a store call the flow reached always ends before the flow does)."""
    thread = _POOL.take()
    if thread is None:
        return await anyio.to_thread.run_sync(call)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    thread.give((call, future, loop))
    with anyio.CancelScope(shield=True):
        result = await future
    return result


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class _Thread:
    def __init__(self, pool: _Pool) -> None:
        self._pool = pool
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="mcpcli-offload", daemon=True).start()

    def give(self, job: _Job) -> None:
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            call, future, loop = self._jobs.get()
            result: Any = None
            error: BaseException | None = None
            try:
                result = call()
            except BaseException as exc:  # handed to the caller, whatever it is
                error = exc
            self._pool.idle_again(self)  # before the answer: the caller's next call finds this thread idle
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
                loop.call_soon_threadsafe(_settle, future, result, error)
            del call, future, loop, result, error  # nothing held while idle


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Thread] = []
        self._busy = 0

    def take(self) -> _Thread | None:
        with self._lock:
            thread = self._idle.pop() if self._idle else None
            if thread is None and self._busy >= LIMIT:
                return None
            self._busy += 1
        return thread or _Thread(self)

    def idle_again(self, thread: _Thread) -> None:
        with self._lock:
            self._busy -= 1
            self._idle.append(thread)


_POOL = _Pool()


def _forked() -> None:
    """In a forked child (the worker's commands) the parent's threads are gone, and its lock may be held."""
    global _POOL
    _POOL = _Pool()


fork_hook(_forked)

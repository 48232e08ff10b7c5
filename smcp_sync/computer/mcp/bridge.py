"""The Computer's private event loop, in one daemon thread: the only place that touches
asyncio (docs/ARCHITECTURE.md, Threads). Code running on the loop is written with anyio, like the SDK.

The `mcp` SDK is async; smcp_sync's API is not. Sync code submits coroutines and waits
on the returned future with a timeout. Long-lived work (one supervisor per MCP server)
runs in the loop's root task group, so stopping the bridge cancels it anyio-style: the
SDK's shielded cleanups (terminating a stdio child) still run. Because the loop lives
in its own thread, a caller whose thread already runs a loop (Jupyter) is unaffected.

Fork (`threads.forks`): the loop is made by `start()`, so a bridge made and not started
before a fork owns no selector or pipe the child shares with its parent. A child of a
started bridge never touches the loop it inherited (its epoll set and self-pipe are the
parent's: closing the loop there would unregister the parent's descriptors): the bridge is
closed there, and the loop, left running in name, is never closed by its finalizer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from typing import Any, Callable, Coroutine, TypeVar

import anyio
import anyio.abc

from ...protocol.errors import InternalError
from ...threads.forks import after_fork_in_child

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long stopping lets the loop's work unwind (closing MCP sessions, stdio children).
SHUTDOWN_GRACE = 10.0
_START_TIMEOUT = 10.0


class BridgeClosedError(InternalError, RuntimeError):
    """The bridge is not running: nothing can be submitted. Also an `SMCPError`: a peer's
    request that races the Computer's close is answered with it (500, this message)
    rather than logged as a handler's crash."""


class EventLoopThread:
    def __init__(self, name: str) -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._open = False
        self._tasks: anyio.abc.TaskGroup | None = None
        self._stop_requested: anyio.Event | None = None
        after_fork_in_child(self._forget_parent)

    def _forget_parent(self) -> None:
        """In a forked child: closed, its loop left alone (module doc)."""
        self._lock, self._open = threading.Lock(), False

    def start(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_log_loop_exception)
        self._thread = threading.Thread(target=self._run, name=f"smcp-computer-loop[{self._name}]", daemon=True)
        self._thread.start()
        if not self._ready.wait(_START_TIMEOUT):
            raise RuntimeError("the Computer's event loop did not start")
        with self._lock:
            self._open = True

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule `coro` on the loop; cancelling the returned future cancels it."""
        with self._lock:
            if not self._open:
                coro.close()
                raise BridgeClosedError("the Computer is not running")
            assert self._loop is not None
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call_soon(self, function: Callable[[], Any]) -> None:
        """Run `function()` on the loop soon, from any thread (nothing if it is stopped)."""
        with self._lock:
            if self._open:
                assert self._loop is not None
                self._loop.call_soon_threadsafe(function)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run `coro` on the loop and wait for it; on timeout cancel it and raise TimeoutError."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("blocking call from the Computer's own event loop thread")
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            # the same class as the builtin on 3.11+: a coroutine's own TimeoutError (or an
            # end just past the wait) is its outcome, not a wait that ran out
            if future.done():
                return future.result()
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g}s") from None

    def spawn(self, function: Callable[[], Coroutine[Any, Any, Any]], name: str) -> None:
        """Run `function()` in the loop's root task group until it returns or the bridge
        stops. Call on the loop; `function` must not raise (it would stop the bridge)."""
        assert self._tasks is not None, "spawn() before start()"
        self._tasks.start_soon(function, name=name)

    def stop(self, timeout: float = SHUTDOWN_GRACE) -> None:
        """Cancel the loop's work, let it unwind (bounded), and join the thread."""
        with self._lock:
            was_open, self._open = self._open, False
        if not was_open:
            return
        assert self._stop_requested is not None and self._loop is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stop_requested.set)
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("the Computer's event loop thread did not stop within %.1fs", timeout)

    def _run(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
            self._loop.run_until_complete(_cancel_leftover_tasks(SHUTDOWN_GRACE))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            self._loop.close()

    async def _main(self) -> None:
        self._stop_requested = anyio.Event()
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            self._ready.set()
            await self._stop_requested.wait()
            tasks.cancel_scope.cancel()


async def _cancel_leftover_tasks(timeout: float) -> None:
    """Submitted coroutines still running (calls in flight) when the loop stops."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=timeout)


def _log_loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    log.error(
        "unhandled error on the Computer's event loop: %s", context.get("message"), exc_info=context.get("exception")
    )

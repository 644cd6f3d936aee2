"""An asyncio event loop on its own thread, driven from synchronous code with bounded waits.

::

    loop_thread = LoopThread("my-loop", LoopThreadErrors(Closed, Timeout, StartError), "my proxy")
    loop_thread.start()                              # the loop runs when this returns
    port = loop_thread.call(lambda: core.port)       # a function, run on the loop thread
    loop_thread.run(core.start())                    # a coroutine, run on the loop
    leftovers = loop_thread.close(shutdown, timeout=10)   # names of tasks left running

Every crossing to the loop waits at most its timeout; nothing here blocks forever. On the loop,
:func:`listen` and :func:`wait_server_closed` start and end a proxy's listening socket. Each user
(``adapters.netproxy``, ``adapters.zkproxy``) raises its own errors, named in
:class:`LoopThreadErrors`, and is a :class:`LoopThreadFacade`: a synchronous object, used in a
``with`` block, whose state lives on its own loop thread.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_START_TIMEOUT = 10.0
DEFAULT_CLOSE_TIMEOUT = 10.0
#: How long a closed server may take to finish closing before its close goes on without it.
SERVER_CLOSE_TIMEOUT = 2.0


@dataclass(frozen=True)
class LoopThreadErrors:
    """The exceptions a :class:`LoopThread` raises, so each user raises its own."""

    #: The loop is not running (never started, closed, or its thread stopped).
    closed: type[Exception]
    #: A call to the loop did not answer within its timeout.
    timeout: type[Exception]
    #: The loop was started twice, or did not start in time.
    start: type[Exception]


class LoopThread:
    """One event loop run forever on one daemon thread; started once, closed once."""

    def __init__(self, thread_name: str, errors: LoopThreadErrors, description: str) -> None:
        """``description`` names the user in messages and logs ("the ZooKeeper proxy")."""
        self.thread_name = thread_name
        self.errors = errors
        self.description = description
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def started(self) -> bool:
        return self._thread is not None

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._closed

    def start(self, timeout: float = DEFAULT_START_TIMEOUT) -> None:
        """Start the thread and wait up to ``timeout`` seconds for its loop to run."""
        if self._thread is not None or self._closed:
            raise self.errors.start(f"{self.description} starts once; create a new one")
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        self._loop = loop
        self._thread = threading.Thread(target=run, name=self.thread_name, daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise self.errors.start(
                f"{self.description}'s event loop did not start within {timeout}s"
            )

    def call(self, function: Callable[[], T], timeout: float) -> T:
        """Run ``function`` on the loop thread; its result or exception comes back here."""
        loop = self._running_loop()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def invoke() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(function())
            except BaseException as exc:
                future.set_exception(exc)

        loop.call_soon_threadsafe(invoke)
        return self._wait(future, timeout)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the loop; its result or exception comes back here."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._running_loop())
        return self._wait(future, timeout)

    def close(self, shutdown: Callable[[], Awaitable[None]], timeout: float) -> list[str]:
        """Await ``shutdown()`` on the loop, cancel every task still running, stop the loop and
        join its thread, each wait bounded by ``timeout`` seconds. Returns the names of the
        tasks cancelled (left running besides the shutdown's own). Idempotent."""
        if self._closed:
            return []
        self._closed = True
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return []
        leftover_tasks: list[str] = []
        try:
            future = asyncio.run_coroutine_threadsafe(_shut_down(shutdown), loop)
            try:
                leftover_tasks = future.result(timeout)
            except concurrent.futures.TimeoutError:
                log.error(
                    "%s did not close within %ss; stopping its loop", self.description, timeout
                )
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout)
            if not thread.is_alive():
                loop.close()
            else:
                log.error("%s's loop thread still runs after %ss", self.description, timeout)
        return leftover_tasks

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None or self._closed or self._thread is None:
            raise self.errors.closed(f"{self.description} is not running (use it in a with block)")
        if not self._thread.is_alive():
            raise self.errors.closed(f"{self.description}'s loop thread has stopped")
        return self._loop

    def _wait(self, future: concurrent.futures.Future[T], timeout: float) -> T:
        # concurrent.futures.TimeoutError is the builtin TimeoutError, which the users' timeout
        # errors (raised by the call itself) also are: tell "the call timed out" from "the wait
        # for it did".
        done, _ = concurrent.futures.wait([future], timeout)
        if not done:
            future.cancel()
            raise self.errors.timeout(f"{self.description}'s loop did not answer within {timeout}s")
        return future.result()


class LoopThreadFacade(abc.ABC):
    """A synchronous, thread-safe object whose state lives on its own :class:`LoopThread`.

    Started once (:meth:`start`, or a ``with`` block), closed once (:meth:`close`); every call
    crosses to the loop thread and waits at most ``call_timeout`` seconds unless told otherwise.
    A subclass opens its state on the loop in :meth:`_open` and closes it in
    :meth:`_close_on_loop`.
    """

    def __init__(
        self,
        loop_thread: LoopThread,
        *,
        call_timeout: float,
        start_timeout: float = DEFAULT_START_TIMEOUT,
    ) -> None:
        self.call_timeout = call_timeout
        self._loop_thread = loop_thread
        self._start_timeout = start_timeout
        self._leftover_tasks: list[str] = []

    def start(self) -> Self:
        """Start the loop thread and :meth:`_open`; usable when this returns (closed if not)."""
        if self._loop_thread.started or self._loop_thread.closed:
            raise self._loop_thread.errors.start(
                f"a {type(self).__name__} starts once; create a new one"
            )
        try:
            self._loop_thread.start(self._start_timeout)
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def __enter__(self) -> Self:
        return self.start() if not self._loop_thread.started else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self, timeout: float = DEFAULT_CLOSE_TIMEOUT) -> None:
        """:meth:`_close_on_loop`, cancel what is left on the loop, stop it, join its thread;
        each wait bounded by ``timeout`` seconds. Idempotent."""
        if self._loop_thread.closed:
            return
        self._leftover_tasks = self._loop_thread.close(self._close_on_loop, timeout)

    @property
    def leftover_tasks(self) -> list[str]:
        """Tasks the close found running besides the object's own (should be none)."""
        return list(self._leftover_tasks)

    @property
    def running(self) -> bool:
        return self._loop_thread.running

    @abc.abstractmethod
    def _open(self) -> None:
        """Set up what lives on the loop (with :meth:`_call` and :meth:`_run`); the loop runs."""

    @abc.abstractmethod
    async def _close_on_loop(self) -> None:
        """Close what :meth:`_open` set up; runs on the loop."""

    def _call(self, function: Callable[[], T], timeout: float | None = None) -> T:
        """Run ``function`` on the loop thread; its result or exception comes back here."""
        return self._loop_thread.call(function, self.call_timeout if timeout is None else timeout)

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the loop; its result or exception comes back here."""
        return self._loop_thread.run(coroutine, self.call_timeout if timeout is None else timeout)


async def listen(
    accept: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str,
    port: int,
    *,
    limit: int,
    error: type[Exception],
    who: str,
) -> asyncio.Server:
    """A server on the running loop listening on ``host:port`` (0: a free port), each
    connection handed to ``accept`` with streams buffering up to ``limit`` bytes; ``error``
    naming ``who`` if it cannot listen."""
    try:
        return await asyncio.start_server(accept, host, port, limit=limit)
    except OSError as exc:
        raise error(f"{who} cannot listen on {host}:{port}: {exc}") from exc


async def wait_server_closed(server: asyncio.Server, timeout: float = SERVER_CLOSE_TIMEOUT) -> None:
    """Wait up to ``timeout`` seconds for a closed ``server`` to finish closing."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            await server.wait_closed()


async def _shut_down(shutdown: Callable[[], Awaitable[None]]) -> list[str]:
    await shutdown()
    current = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not current]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    # Transports finish closing one loop turn later (their connection_lost callbacks).
    await asyncio.sleep(0)
    return [task.get_name() for task in others]


__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "LoopThread",
    "LoopThreadErrors",
    "LoopThreadFacade",
    "listen",
    "wait_server_closed",
]

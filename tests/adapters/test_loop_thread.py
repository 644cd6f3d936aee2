"""The loop thread: started once, calls cross with bounded waits, closed once with no leftovers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest

from adapters.loop_thread import (
    LoopThread,
    LoopThreadErrors,
    LoopThreadFacade,
    listen,
    wait_server_closed,
)


class Closed(Exception):
    pass


class Timeout(TimeoutError):
    pass


class StartFailed(Exception):
    pass


def new_loop_thread() -> LoopThread:
    return LoopThread("test-loop", LoopThreadErrors(Closed, Timeout, StartFailed), "the test loop")


async def nothing() -> None:
    return None


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    loop_thread = new_loop_thread()
    loop_thread.start()
    yield loop_thread
    assert loop_thread.close(nothing, timeout=5) == []


def test_call_runs_on_the_loop_thread(loop_thread: LoopThread) -> None:
    assert loop_thread.running
    name = loop_thread.call(lambda: threading.current_thread().name, timeout=5)
    assert name == "test-loop"


def test_call_and_run_bring_back_exceptions(loop_thread: LoopThread) -> None:
    def fail() -> None:
        raise ValueError("on the loop")

    async def fail_later() -> None:
        await asyncio.sleep(0)
        raise KeyError("in a coroutine")

    with pytest.raises(ValueError, match="on the loop"):
        loop_thread.call(fail, timeout=5)
    with pytest.raises(KeyError, match="in a coroutine"):
        loop_thread.run(fail_later(), timeout=5)


def test_run_returns_the_coroutines_result(loop_thread: LoopThread) -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert loop_thread.run(answer(), timeout=5) == 42


def test_a_wait_that_runs_out_raises_the_users_timeout(loop_thread: LoopThread) -> None:
    with pytest.raises(Timeout, match="did not answer within 0"):
        loop_thread.run(asyncio.sleep(5), timeout=0.05)


def test_starts_once() -> None:
    loop_thread = new_loop_thread()
    loop_thread.start()
    try:
        with pytest.raises(StartFailed, match="starts once"):
            loop_thread.start()
    finally:
        loop_thread.close(nothing, timeout=5)
    with pytest.raises(StartFailed, match="starts once"):
        loop_thread.start()


def test_close_runs_the_shutdown_cancels_leftovers_and_is_idempotent() -> None:
    loop_thread = new_loop_thread()
    loop_thread.start()
    shut_down = threading.Event()

    async def shutdown() -> None:
        shut_down.set()

    async def forgotten() -> None:
        await asyncio.sleep(60)

    loop_thread.call(
        lambda: asyncio.get_running_loop().create_task(forgotten(), name="forgotten"), timeout=5
    )
    assert loop_thread.close(shutdown, timeout=5) == ["forgotten"]
    assert shut_down.is_set() and not loop_thread.running and loop_thread.closed
    assert loop_thread.close(shutdown, timeout=5) == []
    with pytest.raises(Closed, match="not running"):
        loop_thread.call(lambda: None, timeout=5)


def test_a_loop_never_started_is_not_running_and_closes_quietly() -> None:
    loop_thread = new_loop_thread()
    assert not loop_thread.started and not loop_thread.running
    with pytest.raises(Closed, match="not running"):
        loop_thread.call(lambda: None, timeout=5)
    assert loop_thread.close(nothing, timeout=5) == []


class Counter(LoopThreadFacade):
    """A facade over one number that lives on its loop thread."""

    def __init__(self) -> None:
        super().__init__(new_loop_thread(), call_timeout=5)
        self.value: int | None = None
        self.closed_on_loop = False

    def _open(self) -> None:
        self.value = self._call(lambda: 0)

    async def _close_on_loop(self) -> None:
        self.closed_on_loop = True

    def add(self, amount: int) -> int:
        def on_loop() -> int:
            assert self.value is not None
            self.value += amount
            return self.value

        return self._call(on_loop)


def test_a_facade_opens_on_start_and_closes_at_the_end_of_its_with_block() -> None:
    with Counter() as counter:
        assert counter.running and counter.add(2) == 2 and counter.add(3) == 5
    assert counter.closed_on_loop and not counter.running and counter.leftover_tasks == []
    with pytest.raises(StartFailed, match="a Counter starts once"):
        counter.start()
    with pytest.raises(Closed):
        counter.add(1)


def test_a_facade_that_fails_to_open_is_closed() -> None:
    class Broken(Counter):
        def _open(self) -> None:
            raise OSError("cannot listen")

    broken = Broken()
    with pytest.raises(OSError, match="cannot listen"):
        broken.start()
    assert broken.closed_on_loop and not broken.running


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(await reader.readline())
    await writer.drain()
    writer.close()


def test_listen_serves_on_a_free_port_and_its_server_closes() -> None:
    asyncio.run(serve_and_close())


async def serve_and_close() -> None:
    server = await listen(echo, "127.0.0.1", 0, limit=1024, error=StartFailed, who="the echo")
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"hello\n")
    assert await reader.readline() == b"hello\n"
    writer.close()
    await writer.wait_closed()
    server.close()
    await wait_server_closed(server, timeout=2)
    assert not server.is_serving()


def test_listen_on_a_port_in_use_raises_the_users_error() -> None:
    asyncio.run(listen_twice())


async def listen_twice() -> None:
    server = await listen(echo, "127.0.0.1", 0, limit=1024, error=StartFailed, who="the echo")
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(StartFailed, match=f"the echo cannot listen on 127.0.0.1:{port}"):
            await listen(echo, "127.0.0.1", port, limit=1024, error=StartFailed, who="the echo")
    finally:
        server.close()
        await wait_server_closed(server)

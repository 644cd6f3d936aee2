"""One request, one answer, the connection's ending as it was (adapters/bookkeeper/exchange.py)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from adapters.bookkeeper.errors import ConnectTimeout
from adapters.bookkeeper.exchange import Ending, exchange_once
from adapters.bookkeeper.framing import encode_frame

_LINGER_RESET = struct.pack("ii", 1, 0)


@contextmanager
def one_connection_server(answer: Callable[[socket.socket], None]) -> Iterator[int]:
    """A server on a free port that serves one connection with ``answer`` after reading the
    request's 4-byte length; its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            (length,) = struct.unpack(">i", connection.recv(4))
            connection.recv(length)
            answer(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        listener.close()
        thread.join(timeout=5)


def test_an_answer_is_kept_whole_even_when_split() -> None:
    def answer(connection: socket.socket) -> None:
        frame = encode_frame(b"answer-bytes")
        connection.sendall(frame[:3])
        connection.sendall(frame[3:] + encode_frame(b"a second frame, ignored"))

    with one_connection_server(answer) as port:
        done = exchange_once("127.0.0.1", port, b"request", timeout=5)
    assert (done.ending, done.answer) == (Ending.ANSWERED, b"answer-bytes")
    assert done.answer_frame == encode_frame(b"answer-bytes")
    assert done.request_frame == encode_frame(b"request")


def test_a_reset_and_a_close_are_told_apart() -> None:
    def reset(connection: socket.socket) -> None:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)

    with one_connection_server(reset) as port:
        assert exchange_once("127.0.0.1", port, b"x", timeout=5).ending is Ending.RESET
    with one_connection_server(lambda connection: None) as port:
        closed = exchange_once("127.0.0.1", port, b"x", timeout=5)
    assert (closed.ending, closed.answer, closed.answer_frame) == (Ending.CLOSED, None, None)


def test_silence_ends_at_the_timeout() -> None:
    release = threading.Event()

    def stay_silent(connection: socket.socket) -> None:
        release.wait(5)

    with one_connection_server(stay_silent) as port:
        done = exchange_once("127.0.0.1", port, b"x", timeout=0.3)
        release.set()
    assert done.ending is Ending.TIMEOUT


def test_nobody_listening_is_a_connect_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
    with pytest.raises(ConnectTimeout, match=f"127.0.0.1:{port}"):
        exchange_once("127.0.0.1", port, b"x", timeout=2)

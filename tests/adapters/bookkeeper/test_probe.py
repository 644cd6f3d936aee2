"""``bookie_answers``: a bookie is serving when it answers a request, not when it accepts TCP."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from adapters.bookkeeper.framing import encode_frame
from adapters.bookkeeper.probe import PROBE_LEDGER, bookie_answers
from adapters.bookkeeper.status import StatusCode
from adapters.bookkeeper.v2 import V2ReadRequest, encode_response, v2_response_for


def _serve_once(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def run() -> None:
        connection, _ = server.accept()
        with connection:
            handle(connection)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        thread.join(2)


def _read_request(connection: socket.socket) -> None:
    length = int.from_bytes(connection.recv(4), "big")
    while length > 0:
        length -= len(connection.recv(length))


@pytest.fixture
def answering() -> Iterator[int]:
    def handle(connection: socket.socket) -> None:
        _read_request(connection)
        answer = v2_response_for(V2ReadRequest(PROBE_LEDGER, 0), StatusCode.ENOLEDGER)
        connection.sendall(encode_frame(encode_response(answer)))

    yield from _serve_once(handle)


@pytest.fixture
def dropping() -> Iterator[int]:
    # What a real bookie does between binding its port and running its request server.
    def handle(connection: socket.socket) -> None:
        connection.setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
        )

    yield from _serve_once(handle)


@pytest.fixture
def garbling() -> Iterator[int]:
    def handle(connection: socket.socket) -> None:
        _read_request(connection)
        connection.sendall(encode_frame(b"\xff" * 30))

    yield from _serve_once(handle)


@pytest.fixture
def silent() -> Iterator[int]:
    def handle(connection: socket.socket) -> None:
        _read_request(connection)
        connection.recv(1)  # until the probe gives up and closes

    yield from _serve_once(handle)


def test_an_answer_of_any_status_means_serving(answering: int) -> None:
    assert bookie_answers("127.0.0.1", answering)


def test_a_connection_dropped_unanswered_is_not_serving(dropping: int) -> None:
    assert not bookie_answers("127.0.0.1", dropping)


def test_an_answer_that_is_not_a_response_is_not_serving(garbling: int) -> None:
    assert not bookie_answers("127.0.0.1", garbling)


def test_no_answer_within_the_timeout_is_not_serving(silent: int) -> None:
    assert not bookie_answers("127.0.0.1", silent, timeout=0.3)


def test_nothing_listening_is_not_serving() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    assert not bookie_answers("127.0.0.1", port)

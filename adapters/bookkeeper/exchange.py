"""One request, one answer, on a connection of its own, with the bytes kept as they were.

The asyncio clients (:mod:`.client`) decode what they receive and hide how a connection
ended; a probe of how a bookie answers a malformed or unusual frame needs the answer's exact
bytes, and, when none comes, whether the bookie closed the connection or reset it (a real
bookie resets a connection whose frame it cannot decode: golden ``bad-version-undefined-enum``).

::

    exchange = exchange_once("127.0.0.1", 3181, encode_request(request), timeout=5)
    exchange.answer        # the answer's payload (after the length prefix), or None
    exchange.ending        # Ending.ANSWERED, CLOSED, RESET or TIMEOUT
"""

from __future__ import annotations

import enum
import socket
import time
from dataclasses import dataclass

from adapters.bookkeeper.errors import ConnectTimeout, WireError
from adapters.bookkeeper.framing import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame

_READ_CHUNK = 64 * 1024


class Ending(enum.Enum):
    """How the exchange ended."""

    ANSWERED = "answered"
    #: The bookie closed the connection (FIN) without answering.
    CLOSED = "closed"
    #: The bookie reset the connection (RST) without answering.
    RESET = "reset"
    #: No answer and no close within the timeout.
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class Exchange:
    #: The request's payload, as sent (the frame is its length prefix and these bytes).
    request: bytes
    #: The first answer's payload (None: no answer).
    answer: bytes | None
    ending: Ending

    @property
    def request_frame(self) -> bytes:
        return encode_frame(self.request)

    @property
    def answer_frame(self) -> bytes | None:
        return None if self.answer is None else encode_frame(self.answer)


def exchange_once(
    host: str,
    port: int,
    request: bytes,
    *,
    timeout: float,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> Exchange:
    """Connect, send ``request`` (a payload; the length prefix is added), and wait at most
    ``timeout`` seconds for one answer frame or the end of the connection.

    :raises ConnectTimeout: the connection could not be made within ``timeout``.
    :raises WireError: the bookie sent bytes that are not a frame.
    """
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise ConnectTimeout(f"cannot connect to {host}:{port}: {exc}") from exc
    with sock:
        sock.sendall(encode_frame(request))
        decoder = FrameDecoder(max_frame_size)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return Exchange(request, None, Ending.TIMEOUT)
            sock.settimeout(left)
            try:
                chunk = sock.recv(_READ_CHUNK)
            except TimeoutError:
                return Exchange(request, None, Ending.TIMEOUT)
            except ConnectionResetError:
                return Exchange(request, None, Ending.RESET)
            if not chunk:
                return Exchange(request, None, Ending.CLOSED)
            payloads = decoder.feed(chunk)
            if payloads:
                return Exchange(request, payloads[0], Ending.ANSWERED)


__all__ = ["Ending", "Exchange", "WireError", "exchange_once"]

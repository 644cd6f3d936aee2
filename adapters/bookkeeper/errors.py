"""Every error the BookKeeper wire adapter raises, under one root: :class:`WireError`.

Errors that a bookie *answers* (EFENCED, ENOENTRY, ...) are not exceptions here: they are
:class:`~adapters.bookkeeper.status.StatusCode` values in typed results, because a conformance
test observes them as data. Exceptions are reserved for things that stop an exchange. A timeout
or a lost connection is retriable (:attr:`~adapters.errors.AdapterError.retriable`): another
attempt may get its answer; bytes that do not decode are not.
"""

from __future__ import annotations

import enum

from adapters.errors import AdapterError


class WireError(AdapterError):
    """Root of all errors raised by ``adapters.bookkeeper`` and ``adapters.refbookie``."""


class MalformedFrame(WireError):
    """Bytes that do not decode as a v2 or v3 BookKeeper frame (or a frame's length is invalid)."""


class FrameTooLarge(MalformedFrame):
    """A length prefix announced more bytes than the decoder's maximum frame size (or < 0)."""

    def __init__(self, length: int, max_frame_size: int) -> None:
        super().__init__(f"frame length {length} outside [0, {max_frame_size}]")
        self.length = length
        self.max_frame_size = max_frame_size


class MalformedEntry(WireError):
    """An entry or LAC body too short for its header and digest."""


class DigestMismatch(MalformedEntry):
    """An entry or LAC body whose digest does not match its contents."""


class ConnectTimeout(WireError):
    """The TCP connection to a bookie was not established within the connect timeout."""

    retriable = True


class RequestTimeout(WireError):
    """No response to a request arrived within its timeout (the request may still take effect)."""

    retriable = True


class CloseReason(enum.IntEnum):
    """Why a bookie connection was closed; carried by :class:`ConnectionClosed`."""

    #: ``close()`` was called by the owner of the connection.
    USER = 0
    #: The peer closed the TCP connection (EOF) or reset it.
    PEER_CLOSED = 1
    #: The peer sent bytes that do not decode; the stream cannot be resynchronised.
    MALFORMED_FRAME = 2
    #: A socket error while reading or writing.
    CONNECTION_BROKEN = 3


class ConnectionClosed(WireError):
    """The connection closed before a response arrived; every pending request fails with this.
    Retriable, unless the peer sent bytes that do not decode (``MALFORMED_FRAME``)."""

    def __init__(self, peer: str, reason: CloseReason, detail: str = "") -> None:
        message = f"connection to {peer} closed ({reason.name})"
        super().__init__(f"{message}: {detail}" if detail else message)
        self.peer = peer
        self.reason = reason
        self.retriable = reason is not CloseReason.MALFORMED_FRAME


class UnexpectedResponse(WireError):
    """A decoded response does not fit the request it answers (e.g. missing sub-response)."""

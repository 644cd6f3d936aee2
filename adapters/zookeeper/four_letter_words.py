"""ZooKeeper's four-letter words: one command word over a plain TCP connection to the client
port, answered in text (``srvr``: the server's mode, zxid, counts). No session, no kazoo: they
answer even while a server cannot form a quorum, which is when the cluster code asks them."""

from __future__ import annotations

import re
import socket

_MODE = re.compile(r"^Mode: (\S+)", re.MULTILINE)


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str | None:
    """Send a ZooKeeper four-letter word and return the reply, or None if none came.

    The server closes the connection after replying, so the reply is read to EOF.
    """
    if len(word) != 4:
        raise ValueError(f"four-letter words have four letters, got {word!r}")
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError:
        return None
    return b"".join(chunks).decode("utf-8", errors="replace")


def server_mode(host: str, port: int, timeout: float = 2.0) -> str | None:
    """``Mode:`` from the ``srvr`` four-letter word, or None when the server does not serve."""
    reply = four_letter_word(host, port, "srvr", timeout)
    if reply is None:
        return None
    match = _MODE.search(reply)
    return match.group(1) if match else None


__all__ = ["four_letter_word", "server_mode"]

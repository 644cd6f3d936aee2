"""ZooKeeper's four-letter words: one command word over a plain TCP connection to the client
port, answered in text (``srvr``: the server's mode, zxid, counts). No session, no kazoo: they
answer even while a server cannot form a quorum, which is when the cluster code asks them."""

from __future__ import annotations

import re
import socket

_MODE = re.compile(r"^Mode: (\S+)", re.MULTILINE)
#: One connection of ``cons``: `` /127.0.0.1:45364[1](queued=0,recved=161,sent=161,
#: sid=0x10000e53e810000,lop=EXIS,...)``; a connection without a session yet has no ``sid``.
_CONNECTION = re.compile(r"recved=(\d+),[^)]*?\bsid=0x([0-9a-fA-F]+)")


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


def packets_received(host: str, port: int, timeout: float = 2.0) -> dict[int, int] | None:
    """Session id -> how many packets the server has received on that session's connection
    (``cons``), for the sessions connected to this server; None when it does not answer.
    A count that grew since an earlier look means the server heard from the session since:
    it touched the session, which cannot expire before a session timeout from then."""
    reply = four_letter_word(host, port, "cons", timeout)
    if reply is None:
        return None
    return {int(sid, 16): int(received) for received, sid in _CONNECTION.findall(reply)}


__all__ = ["four_letter_word", "packets_received", "server_mode"]

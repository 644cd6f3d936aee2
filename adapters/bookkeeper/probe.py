"""Is a bookie serving? One v2 read of a ledger no one writes, answered with any status.

A TCP connection is not enough: a real bookie binds its port and registers in ZooKeeper before
its request server runs, and in that window it accepts connections and closes them at once
(the client sees a reset). A bookie that answers a request serves the next one.
"""

from __future__ import annotations

import socket

from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.framing import FrameDecoder, encode_frame
from adapters.bookkeeper.v2 import V2ReadRequest, V2Response, decode_response, encode_request

#: The ledger the probe reads: the largest id, never allocated by a ledger id generator (the
#: bookie answers "no such ledger" and creates nothing).
PROBE_LEDGER = 2**63 - 1
#: A read answer for a missing ledger is a few dozen bytes; anything longer is not one.
_MAX_ANSWER = 64 * 1024


def bookie_answers(host: str, port: int, timeout: float = 1.0) -> bool:
    """True when the bookie at ``host:port`` answers a read within ``timeout`` seconds."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(encode_frame(encode_request(V2ReadRequest(PROBE_LEDGER, 0))))
            decoder = FrameDecoder(max_frame_size=_MAX_ANSWER)
            payloads: list[bytes] = []
            while not payloads:
                chunk = sock.recv(4096)
                if not chunk:  # closed unanswered
                    return False
                payloads = decoder.feed(chunk)
            answer = decode_response(payloads[0])
    except (OSError, WireError):
        return False
    return isinstance(answer, V2Response) and answer.ledger_id == PROBE_LEDGER

"""Sampling who leads and at which zxid, through the ``srvr`` four-letter word.

A server answers ``srvr`` with ``Mode:`` only while it serves, which for a leader means it
has established its epoch; the ``Zxid:`` line is its last processed zxid, whose high 32 bits
are that epoch. The sampler polls every server on a short period from its own thread, each
probe bounded by a timeout (a paused server accepts the connection but never answers).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from adapters.zookeeper.four_letter_words import four_letter_word

_MODE = re.compile(r"^Mode: (\S+)", re.MULTILINE)
_ZXID = re.compile(r"^Zxid: (0x[0-9a-fA-F]+)", re.MULTILINE)


@dataclass(frozen=True)
class ServerStatus:
    """One ``srvr`` answer: ``time`` is ``time.monotonic()`` when it arrived."""

    time: float
    server: str
    mode: str
    zxid: int


def parse_srvr(reply: str) -> tuple[str, int] | None:
    """``(mode, zxid)`` from a ``srvr`` reply, or None when the server does not serve."""
    mode, zxid = _MODE.search(reply), _ZXID.search(reply)
    if mode is None or zxid is None:
        return None
    return mode.group(1), int(zxid.group(1), 16)


def server_status(name: str, host: str, port: int, timeout: float = 0.5) -> ServerStatus | None:
    reply = four_letter_word(host, port, "srvr", timeout)
    parsed = parse_srvr(reply) if reply is not None else None
    if parsed is None:
        return None
    return ServerStatus(time.monotonic(), name, parsed[0], parsed[1])


class LeaderSampler:
    """Polls ``srvr`` on every endpoint until stopped; use as a context manager.

    ``samples`` keeps every answer from a server in ``leader`` mode; ``last`` the latest
    answer of each server, whatever its mode.
    """

    def __init__(
        self,
        endpoints: Mapping[str, tuple[str, int]],
        *,
        period: float = 0.1,
        probe_timeout: float = 0.5,
    ) -> None:
        self.endpoints = dict(endpoints)
        self.period = period
        self.probe_timeout = probe_timeout
        self.samples: list[ServerStatus] = []
        self.last: dict[str, ServerStatus] = {}
        self.probes = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="zab-leader-sampler", daemon=True)

    def __enter__(self) -> LeaderSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5 + self.probe_timeout * len(self.endpoints))

    def sample_once(self) -> None:
        for name, (host, port) in self.endpoints.items():
            status = server_status(name, host, port, self.probe_timeout)
            with self._lock:
                self.probes += 1
                if status is None:
                    continue
                self.last[name] = status
                if status.mode == "leader":
                    self.samples.append(status)

    def leader_samples(self) -> list[ServerStatus]:
        with self._lock:
            return list(self.samples)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.period)

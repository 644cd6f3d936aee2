"""What one release put on the wire and in ZooKeeper, as data, in the golden captures' format.

A :class:`ReleaseCapture` holds the frames of the golden "session" scenario (the Java client's
requests and the bookies' answers), the answers to the raw probes of the error kinds, and the
znodes the release wrote (ledger metadata at each of its versions, bookie registrations and
cookies). It is written and read in the format of ``../shared/golden`` (README there):

* ``v3_session_<version>.jsonl`` and ``errors_<version>.jsonl``: one frame per line,
  ``{"version", "scenario", "conn", "dir", "bookie", "hex", "summary"}``, ``hex`` the whole
  frame with its 4-byte length prefix; a probe that got no answer has its request only (and,
  beyond the golden format, ``"ending"``: how the connection ended);
* ``zk_<version>.json``: ``[{"path", "hex", "stat_version", "note"}]``;
* ``capture_<version>.json`` (ours only): the ledger id and the bookie ids of the run.

So the golden 4.17.4 captures and the ones this suite takes of any release load alike
(:func:`load_capture`), and the comparison runs on either.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from adapters.bookkeeper import codec, v3
from adapters.bookkeeper.errors import MalformedFrame

REQUEST = "c2b"
RESPONSE = "b2c"


@dataclass(frozen=True)
class CapturedFrame:
    """One whole frame as it crossed a connection."""

    version: str
    scenario: str
    conn: int
    direction: str  # REQUEST or RESPONSE
    bookie: str
    frame: bytes  # the length prefix and the payload
    summary: str
    #: A probe's: how its connection ended ("answered", "reset", "closed", "timeout"); "" for
    #: the session's frames and the golden ones.
    ending: str = ""

    @property
    def is_request(self) -> bool:
        return self.direction == REQUEST

    @property
    def payload(self) -> bytes:
        return self.frame[4:]

    @property
    def label(self) -> str:
        return f"{self.version} {self.scenario} conn {self.conn} {self.direction}"

    def to_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "version": self.version,
            "scenario": self.scenario,
            "conn": self.conn,
            "dir": self.direction,
            "bookie": self.bookie,
            "hex": self.frame.hex(),
            "summary": self.summary,
        }
        if self.ending:
            row["ending"] = self.ending
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> CapturedFrame:
        return cls(
            version=str(row["version"]),
            scenario=str(row["scenario"]),
            conn=int(row["conn"]),
            direction=str(row["dir"]),
            bookie=str(row["bookie"]),
            frame=bytes.fromhex(row["hex"]),
            summary=str(row.get("summary", "")),
            ending=str(row.get("ending", "")),
        )


@dataclass(frozen=True)
class CapturedZnode:
    """A znode's data at one of its versions."""

    path: str
    data: bytes
    stat_version: int
    note: str

    def to_row(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "hex": self.data.hex(),
            "stat_version": self.stat_version,
            "note": self.note,
        }

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> CapturedZnode:
        return cls(
            str(row["path"]), bytes.fromhex(row["hex"]), int(row["stat_version"]), str(row["note"])
        )


@dataclass(frozen=True)
class ReleaseCapture:
    version: str
    session: tuple[CapturedFrame, ...]
    probes: tuple[CapturedFrame, ...]
    znodes: tuple[CapturedZnode, ...]
    #: The session's ledger (None: not recorded, read from the frames).
    ledger_id: int | None = None
    #: The bookies' ids, in the order the session numbered them.
    bookie_ids: tuple[str, ...] = ()
    #: Where the capture came from (a run of this suite, or a golden directory).
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def frames(self) -> tuple[CapturedFrame, ...]:
        return self.session + self.probes


def summarize(payload: bytes, *, is_request: bool) -> str:
    """A one-line decoding of a frame's payload with the suite's codec (the field order of a
    v3 message is the codec's, not the wire's: the comparison reads the wire order itself)."""
    try:
        message = codec.decode_request(payload) if is_request else codec.decode_response(payload)
    except MalformedFrame as exc:
        return f"undecodable: {exc}"
    if isinstance(message, v3.Request | v3.Response):
        kind = "Request" if is_request else "Response"
        return f"v3 {kind} " + text_format.MessageToString(message, as_one_line=True)
    return f"v2 {message!r}"


def _file_names(version: str) -> dict[str, str]:
    return {
        "session": f"v3_session_{version}.jsonl",
        "probes": f"errors_{version}.jsonl",
        "znodes": f"zk_{version}.json",
        "capture": f"capture_{version}.json",
    }


def save_capture(capture: ReleaseCapture, directory: Path) -> list[Path]:
    """Write ``capture`` into ``directory`` in the golden format; the files written."""
    directory.mkdir(parents=True, exist_ok=True)
    names = _file_names(capture.version)
    written = []
    for key, frames in (("session", capture.session), ("probes", capture.probes)):
        path = directory / names[key]
        path.write_text("".join(json.dumps(f.to_row()) + "\n" for f in frames))
        written.append(path)
    znodes = directory / names["znodes"]
    znodes.write_text(json.dumps([z.to_row() for z in capture.znodes], indent=1) + "\n")
    meta = directory / names["capture"]
    meta.write_text(
        json.dumps(
            {
                "version": capture.version,
                "ledger_id": capture.ledger_id,
                "bookie_ids": list(capture.bookie_ids),
                "source": capture.source,
                **capture.extra,
            },
            indent=1,
        )
        + "\n"
    )
    return [*written, znodes, meta]


def _read_frames(path: Path) -> tuple[CapturedFrame, ...]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return tuple(CapturedFrame.from_row(row) for row in rows)


def load_capture(directory: Path, version: str) -> ReleaseCapture:
    """The capture of ``version`` in ``directory`` (a golden directory or one this suite
    wrote). :class:`FileNotFoundError` when its session file is missing."""
    names = _file_names(version)
    session = _read_frames(directory / names["session"])
    probes_path = directory / names["probes"]
    probes = _read_frames(probes_path) if probes_path.is_file() else ()
    znodes_path = directory / names["znodes"]
    znodes: tuple[CapturedZnode, ...] = ()
    if znodes_path.is_file():
        znodes = tuple(CapturedZnode.from_row(row) for row in json.loads(znodes_path.read_text()))
    meta_path = directory / names["capture"]
    meta: dict[str, Any] = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    bookie_ids = tuple(meta.get("bookie_ids") or _bookies_of(session))
    ledger_id = meta.get("ledger_id")
    return ReleaseCapture(
        version=version,
        session=session,
        probes=probes,
        znodes=znodes,
        ledger_id=int(ledger_id) if ledger_id is not None else None,
        bookie_ids=bookie_ids,
        source=str(meta.get("source") or directory),
        extra={k: v for k, v in meta.items() if k not in ("version", "ledger_id", "bookie_ids")},
    )


def _bookies_of(frames: Iterable[CapturedFrame]) -> list[str]:
    """The bookies the frames name, in port order (the golden files' 3181, 3182, 3183)."""
    return sorted({f.bookie for f in frames}, key=_bookie_sort_key)


def _bookie_sort_key(bookie_id: str) -> tuple[str, int]:
    host, _, port = bookie_id.rpartition(":")
    return (host, int(port)) if port.isdigit() else (bookie_id, 0)


__all__ = [
    "REQUEST",
    "RESPONSE",
    "CapturedFrame",
    "CapturedZnode",
    "ReleaseCapture",
    "load_capture",
    "save_capture",
    "summarize",
]

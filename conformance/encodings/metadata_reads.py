"""Who reads the metadata a release wrote: the suite's reader, and every release's own shell.

* The suite's reader (:mod:`adapters.zookeeper.metadata`, ``service_info``, ``cookie``) parses
  each znode a release wrote; the ledger's versions must read as the session left them (v0
  OPEN, v1 IN_RECOVERY, v2 CLOSED at entry 4, length 35, on the session's three bookies), and
  the suite's writer must give the same bytes back for the same value (it writes what
  BookKeeper writes).
* Each release's shell (``bookkeeper shell ledgermetadata``) read the ledger this release wrote,
  during the capture (:mod:`.live`): its printed state, last entry, length and ensemble must be
  the session's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.zookeeper.cookie import parse_cookie, serialize_cookie
from adapters.zookeeper.errors import MetadataError
from adapters.zookeeper.metadata import (
    LedgerState,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from adapters.zookeeper.service_info import (
    parse_bookie_service_info,
    serialize_bookie_service_info,
)
from conformance.encodings.captures import ReleaseCapture

#: What the golden session leaves in the ledger's metadata at each znode version.
EXPECTED_STATES = {0: LedgerState.OPEN, 1: LedgerState.IN_RECOVERY, 2: LedgerState.CLOSED}
CLOSED_LAST_ENTRY = 4
#: entry-0..entry-4, 7 bytes each.
CLOSED_LENGTH = 35
_LEDGER_PATH = re.compile(r"/L(\d+)$")


@dataclass(frozen=True)
class ReaderCheck:
    """The suite's reader on one znode a release wrote."""

    writer: str
    path: str
    stat_version: int
    ok: bool
    read_as: str
    #: Whether the suite's writer gives the same bytes for the value it read.
    same_bytes_written: bool | None
    problem: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "writer": self.writer,
            "path": self.path,
            "stat_version": self.stat_version,
            "ok": self.ok,
            "read_as": self.read_as,
            "same_bytes_written": self.same_bytes_written,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class ShellCheck:
    """One release's shell on a ledger a release wrote, judged."""

    reader: str
    writer: str
    ledger_id: int
    written_as: str
    ok: bool
    shown: str
    problem: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "reader": self.reader,
            "writer": self.writer,
            "ledger_id": self.ledger_id,
            "written_as": self.written_as,
            "ok": self.ok,
            "shown": self.shown,
            "problem": self.problem,
        }


def reader_checks(capture: ReleaseCapture) -> list[ReaderCheck]:
    checks = []
    bookies = set(capture.bookie_ids)
    for znode in capture.znodes:
        try:
            if _LEDGER_PATH.search(znode.path):
                metadata = parse_ledger_metadata(znode.data, path=znode.path)
                problems = _ledger_problems(
                    metadata.state,
                    metadata.last_entry_id,
                    metadata.length,
                    set(metadata.current_ensemble),
                    znode.stat_version,
                    bookies,
                )
                read_as = (
                    f"{metadata.state.name} lastEntryId={metadata.last_entry_id} "
                    f"length={metadata.length} ensemble={list(metadata.current_ensemble)} "
                    f"cToken={metadata.ctoken}"
                )
                same = serialize_ledger_metadata(metadata) == znode.data
            elif "/available/" in znode.path:
                info = parse_bookie_service_info(znode.data, path=znode.path)
                endpoint = info.rpc_endpoint()
                problems = [] if endpoint is not None else ["no bookie-rpc endpoint"]
                read_as = f"endpoint {endpoint.host}:{endpoint.port}" if endpoint else "no endpoint"
                same = serialize_bookie_service_info(info) == znode.data
            elif "/cookies/" in znode.path:
                cookie = parse_cookie(znode.data, path=znode.path)
                problems = (
                    [] if not bookies or cookie.bookie_host in bookies else ["unknown bookie"]
                )
                read_as = f"cookie v{cookie.layout_version} of {cookie.bookie_host}"
                same = serialize_cookie(cookie) == znode.data
            else:
                continue
        except MetadataError as exc:
            checks.append(
                ReaderCheck(
                    capture.version, znode.path, znode.stat_version, False, "", None, str(exc)
                )
            )
            continue
        checks.append(
            ReaderCheck(
                capture.version,
                znode.path,
                znode.stat_version,
                not problems,
                read_as,
                same,
                "; ".join(problems),
            )
        )
    return checks


def _ledger_problems(
    state: LedgerState,
    last_entry_id: int,
    length: int,
    ensemble: set[str],
    stat_version: int,
    bookies: set[str],
) -> list[str]:
    problems = []
    expected = EXPECTED_STATES.get(stat_version)
    if expected is not None and state is not expected:
        problems.append(f"state {state.name}, expected {expected.name} at v{stat_version}")
    if state is LedgerState.CLOSED and (last_entry_id, length) != (
        CLOSED_LAST_ENTRY,
        CLOSED_LENGTH,
    ):
        problems.append(f"closed at {last_entry_id}/{length}, expected 4/35")
    if bookies and ensemble != bookies:
        problems.append(f"ensemble {sorted(ensemble)} is not the session's bookies")
    return problems


_WRITTEN_STATE = re.compile(r"^(OPEN|IN_RECOVERY|CLOSED)")


def shell_checks(capture: ReleaseCapture) -> list[ShellCheck]:
    """The shell reads recorded with ``capture`` (its ``metadata_reads``), judged."""
    rows: Sequence[Mapping[str, Any]] = capture.extra.get("metadata_reads", [])
    checks = []
    for row in rows:
        shown: Mapping[str, str] = row.get("shown", {})
        written = _WRITTEN_STATE.match(str(row["written_as"]))
        problems = []
        if not row.get("ok"):
            problems.append(
                "the shell printed no ledger: " + str(row.get("output_tail", ""))[-300:]
            )
        else:
            if written is not None and shown.get("state") != written.group(1):
                problems.append(f"state {shown.get('state')}, written {written.group(1)}")
            if shown.get("state") == "CLOSED" and (
                shown.get("lastEntryId"),
                shown.get("length"),
            ) != (str(CLOSED_LAST_ENTRY), str(CLOSED_LENGTH)):
                problems.append(
                    f"closed at {shown.get('lastEntryId')}/{shown.get('length')}, expected 4/35"
                )
            missing = [b for b in capture.bookie_ids if b not in str(row.get("ensembles", ""))]
            if missing:
                problems.append(f"ensemble {row.get('ensembles')} lacks {missing}")
        text = ", ".join(f"{k}={v}" for k, v in shown.items())
        checks.append(
            ShellCheck(
                str(row["reader"]),
                str(row["writer"]),
                int(row["ledger_id"]),
                str(row["written_as"]),
                not problems,
                f"{text}, ensembles={{{row.get('ensembles', '')}}}" if text else "",
                "; ".join(problems),
            )
        )
    return checks


__all__ = [
    "CLOSED_LAST_ENTRY",
    "CLOSED_LENGTH",
    "EXPECTED_STATES",
    "ReaderCheck",
    "ShellCheck",
    "reader_checks",
    "shell_checks",
]

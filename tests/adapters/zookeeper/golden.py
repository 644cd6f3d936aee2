"""The golden znodes captured from real BookKeeper (``<repo>/../shared/golden/zk_*.json``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parents[3] / ".." / "shared" / "golden"


class GoldenZnodesMissing(RuntimeError):
    """The golden directory or its zk_*.json files are absent (a failure, never a skip)."""


@dataclass(frozen=True)
class GoldenZnode:
    file: str
    row: int
    path: str
    data: bytes
    stat_version: int
    note: str

    @property
    def label(self) -> str:
        return f"{self.file}#{self.row}:{self.path}@{self.stat_version}"


def load_golden_znodes() -> list[GoldenZnode]:
    """Every row of every ``zk_*.json``; raises (failing collection) if there are none."""
    files = sorted(GOLDEN_DIR.glob("zk_*.json")) if GOLDEN_DIR.is_dir() else []
    if not files:
        raise GoldenZnodesMissing(
            f"golden znode captures zk_*.json not found in {GOLDEN_DIR.resolve()}; "
            "they are required for the ZooKeeper adapter tests"
        )
    znodes = []
    for path in files:
        for number, row in enumerate(json.loads(path.read_text())):
            znodes.append(
                GoldenZnode(
                    file=path.name,
                    row=number,
                    path=row["path"],
                    data=bytes.fromhex(row["hex"]),
                    stat_version=row["stat_version"],
                    note=row["note"],
                )
            )
    return znodes


def golden_ledger_znodes(file: str) -> list[GoldenZnode]:
    """One file's ledger znode rows in capture order: OPEN, OPEN, IN_RECOVERY, CLOSED."""
    return [
        znode
        for znode in load_golden_znodes()
        if znode.file == file and "/L" in znode.path and znode.path.startswith("/ledgers/0")
    ]

"""Access to the golden BookKeeper captures in ``<repo>/../shared/golden`` (see its README)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

GOLDEN_DIR = Path(__file__).resolve().parents[3] / ".." / "shared" / "golden"
#: Password of every golden ledger (README: "Ledger configuration for all sessions").
GOLDEN_PASSWORD = b"golden"


@dataclass(frozen=True)
class GoldenFrame:
    file: str
    line: int
    version: str
    scenario: str
    conn: int
    direction: str  # "c2b" (request) or "b2c" (response)
    bookie: str
    frame: bytes
    summary: str

    @property
    def is_request(self) -> bool:
        return self.direction == "c2b"

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line}:{self.scenario}:{self.direction}"


def golden_dir() -> Path:
    """The golden directory; fails the test (never skips) when it is absent."""
    if not GOLDEN_DIR.is_dir():
        pytest.fail(f"golden captures not found at {GOLDEN_DIR.resolve()}; they are required")
    return GOLDEN_DIR


def golden_files() -> list[Path]:
    files = sorted(golden_dir().glob("*.jsonl"))
    if not files:
        pytest.fail(f"no *.jsonl golden files in {GOLDEN_DIR.resolve()}")
    return files


def load_frames(path: Path) -> list[GoldenFrame]:
    frames = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        row = json.loads(line)
        frames.append(
            GoldenFrame(
                file=path.name,
                line=number,
                version=row["version"],
                scenario=row["scenario"],
                conn=row["conn"],
                direction=row["dir"],
                bookie=row["bookie"],
                frame=bytes.fromhex(row["hex"]),
                summary=row["summary"],
            )
        )
    return frames


def all_frames() -> Iterator[GoldenFrame]:
    for path in golden_files():
        yield from load_frames(path)


def exchanges(path: Path) -> list[tuple[GoldenFrame, GoldenFrame | None]]:
    """Requests paired with their response in the same connection (``None``: none came back).

    Golden error/limbo files hold one request per connection, so pairing is by connection.
    """
    frames = load_frames(path)
    pairs: list[tuple[GoldenFrame, GoldenFrame | None]] = []
    for request in (f for f in frames if f.is_request):
        responses = [f for f in frames if f.conn == request.conn and not f.is_request]
        requests_in_conn = [f for f in frames if f.conn == request.conn and f.is_request]
        if len(requests_in_conn) != 1 or len(responses) > 1:
            raise AssertionError(f"{request.label}: expected one exchange per connection")
        pairs.append((request, responses[0] if responses else None))
    return pairs

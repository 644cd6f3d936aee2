"""The reference bookie as a real process: CLI, SIGTERM, and SIGKILL crashes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.refbookie.process import RefBookieProcess, write_conf
from adapters.refbookie.server import DIRTY_FILE
from tests.adapters.refbookie.harness import conf_properties

pytestmark = pytest.mark.cluster

KEY = master_key(b"pw")
REPO = Path(__file__).resolve().parents[3]


def entry(entry_id: int) -> bytes:
    return package_entry(DigestType.CRC32, b"pw", 1, entry_id, entry_id - 1, entry_id + 1, b"e")


async def add_entries(port: int, count: int) -> None:
    async with await BookieClient.connect("127.0.0.1", port) as bookie:
        for e in range(count):
            assert (await bookie.add(1, e, KEY, entry(e))).status is StatusCode.EOK


async def read_statuses(port: int, count: int) -> list[StatusCode]:
    async with await BookieClient.connect("127.0.0.1", port) as bookie:
        return [(await bookie.read(1, e)).status for e in range(count)]


def _bookie(tmp_path: Path, **overrides: str) -> RefBookieProcess:
    conf = write_conf(tmp_path / "bk_server.conf", conf_properties(tmp_path, **overrides))
    return RefBookieProcess(conf, tmp_path / "bookie.log")


def test_sigkill_keeps_journaled_entries(tmp_path: Path) -> None:
    with _bookie(tmp_path) as bookie:
        assert bookie.port is not None
        asyncio.run(add_entries(bookie.port, 20))
        assert bookie.kill() == -9
    assert (tmp_path / "ledgers" / "current" / DIRTY_FILE).exists()
    with _bookie(tmp_path) as restarted:
        assert restarted.port is not None
        assert asyncio.run(read_statuses(restarted.port, 20)) == [StatusCode.EOK] * 20
        assert restarted.terminate() == 0
    assert not (tmp_path / "ledgers" / "current" / DIRTY_FILE).exists()


def test_sigkill_with_journal_off_loses_acknowledged_entries(tmp_path: Path) -> None:
    with _bookie(tmp_path, journalWriteData="false") as bookie:
        assert bookie.port is not None
        asyncio.run(add_entries(bookie.port, 20))
        bookie.kill()
    with _bookie(tmp_path, journalWriteData="false") as restarted:
        assert restarted.port is not None
        assert asyncio.run(read_statuses(restarted.port, 20)) == [StatusCode.ENOENTRY] * 20


def test_sigterm_flushes_with_journal_off(tmp_path: Path) -> None:
    with _bookie(tmp_path, journalWriteData="false") as bookie:
        assert bookie.port is not None
        asyncio.run(add_entries(bookie.port, 5))
        assert bookie.terminate() == 0
    with _bookie(tmp_path, journalWriteData="false") as restarted:
        assert restarted.port is not None
        assert asyncio.run(read_statuses(restarted.port, 5)) == [StatusCode.EOK] * 5


def test_malformed_configuration_exits_with_2(tmp_path: Path) -> None:
    conf = write_conf(tmp_path / "bad.conf", conf_properties(tmp_path, journalWriteData="perhaps"))
    result = subprocess.run(
        [sys.executable, "-m", "adapters.refbookie", "--conf", str(conf)],
        cwd=REPO, capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert b"journalWriteData" in result.stderr

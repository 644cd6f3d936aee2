"""Journal durability, journal-off loss, unclean-shutdown detection and limbo (in-process).

``BookieServer.crash()`` drops what a SIGKILL would drop (the unflushed ledger storage buffer)
and keeps the dirty marker; ``test_process.py`` repeats the key cases with a real SIGKILL.
"""

from __future__ import annotations

from pathlib import Path

from adapters.bookkeeper.client import BookieClient, V2BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.refbookie.integrity import CLEAR_LIMBO_FILE, LedgerSummary, StaticMetadata
from adapters.refbookie.server import DIRTY_FILE
from tests.adapters.bookkeeper.aio import async_test
from tests.adapters.refbookie.harness import make_server, running_bookie

KEY = master_key(b"pw")
ME = "127.0.0.1:3181"
INTEGRITY = {
    "bookieId": ME,
    "journalWriteData": "false",
    "dataIntegrityChecking": "true",
}


def entry(ledger_id: int, entry_id: int) -> bytes:
    return package_entry(
        DigestType.CRC32, b"pw", ledger_id, entry_id, entry_id - 1, entry_id + 1, b"p"
    )


async def write_entries(port: int, ledger_id: int, count: int) -> None:
    async with await BookieClient.connect("127.0.0.1", port) as bookie:
        for e in range(count):
            assert (
                await bookie.add(ledger_id, e, KEY, entry(ledger_id, e))
            ).status is StatusCode.EOK


@async_test()
async def test_journal_makes_acknowledged_adds_survive_a_crash(tmp_path: Path) -> None:
    server = make_server(tmp_path)
    await server.start()
    await write_entries(server.port, 1, 5)
    async with await BookieClient.connect("127.0.0.1", server.port) as bookie:
        await bookie.read(1, -1, fence=True, master_key=KEY)
    await server.crash()
    assert (tmp_path / "ledgers" / "current" / DIRTY_FILE).exists()
    async with running_bookie(tmp_path) as restarted:
        assert restarted.unclean_shutdown_detected
        async with await BookieClient.connect("127.0.0.1", restarted.port) as bookie:
            for e in range(5):
                assert (await bookie.read(1, e)).body == entry(1, e)
            assert (await bookie.add(1, 5, KEY, entry(1, 5))).status is StatusCode.EFENCED
    assert not (tmp_path / "ledgers" / "current" / DIRTY_FILE).exists()


@async_test()
async def test_journal_off_crash_loses_acknowledged_entries_but_keeps_the_key(
    tmp_path: Path,
) -> None:
    server = make_server(tmp_path, journalWriteData="false")
    await server.start()
    await write_entries(server.port, 1, 5)
    await server.crash()
    async with (
        running_bookie(tmp_path, journalWriteData="false") as restarted,
        await BookieClient.connect("127.0.0.1", restarted.port) as bookie,
    ):
        # Reference §10 "limbo off, crash": the key reached the journal, entries did not.
        assert (await bookie.read(1, 0)).status is StatusCode.ENOENTRY
        assert (await bookie.read_lac(1)).status is StatusCode.ENOENTRY
        assert (await bookie.add(1, 0, master_key(b"x"), entry(1, 0))).status is StatusCode.EUA


@async_test()
async def test_journal_off_clean_stop_keeps_entries(tmp_path: Path) -> None:
    async with running_bookie(tmp_path, journalWriteData="false") as server:
        await write_entries(server.port, 1, 3)
    async with running_bookie(tmp_path, journalWriteData="false") as restarted:
        assert not restarted.unclean_shutdown_detected
        async with await BookieClient.connect("127.0.0.1", restarted.port) as bookie:
            assert (await bookie.read(1, 2)).body == entry(1, 2)


def _metadata() -> StaticMetadata:
    return StaticMetadata(
        (
            LedgerSummary(1, closed=False, last_ensemble=(ME, "127.0.0.1:3182")),
            LedgerSummary(2, closed=True, last_ensemble=(ME, "127.0.0.1:3182")),
            LedgerSummary(3, closed=False, last_ensemble=("127.0.0.1:3182", "127.0.0.1:3183")),
            LedgerSummary(4, closed=False, last_ensemble=("127.0.0.1:3183", ME)),  # not stored
        )
    )


@async_test()
async def test_unclean_journal_off_restart_puts_open_ledgers_in_limbo(tmp_path: Path) -> None:
    server = make_server(tmp_path, metadata=_metadata(), **INTEGRITY)
    await server.start()
    for ledger_id in (1, 2, 3):
        await write_entries(server.port, ledger_id, 3)
    async with await BookieClient.connect("127.0.0.1", server.port) as bookie:
        await bookie.read(1, 0)
    await server.stop()  # clean: entries flushed, no limbo on the next start
    async with running_bookie(tmp_path, metadata=_metadata(), **INTEGRITY) as clean:
        assert clean.limbo_marked == []
        await write_entries(clean.port, 5, 1)
        await clean.crash()
    async with running_bookie(tmp_path, metadata=_metadata(), **INTEGRITY) as restarted:
        assert restarted.unclean_shutdown_detected
        assert restarted.limbo_marked == [1, 4]
        async with await BookieClient.connect("127.0.0.1", restarted.port) as bookie:
            # Limbo answers (reference §3, golden limbo_4.17.4).
            assert (await bookie.read(1, 0)).status is StatusCode.EUNKNOWNLEDGERSTATE
            assert (await bookie.read(1, 9)).status is StatusCode.EUNKNOWNLEDGERSTATE
            assert (await bookie.read(1, -1)).status is StatusCode.EUNKNOWNLEDGERSTATE
            fence = await bookie.read(1, -1, fence=True, master_key=KEY)
            assert fence.status is StatusCode.EUNKNOWNLEDGERSTATE
            recovery_read = await bookie.read(1, 0, fence=True, master_key=KEY, priority=100)
            assert (recovery_read.status, recovery_read.body) == (StatusCode.EOK, entry(1, 0))
            assert (await bookie.read_lac(1)).status is StatusCode.ENOENTRY
            assert (await bookie.add(1, 3, KEY, entry(1, 3))).status is StatusCode.EFENCED
            add = await bookie.add(1, 3, KEY, entry(1, 3), recovery=True, priority=100)
            assert add.status is StatusCode.EOK
            assert (await bookie.read(4, 0)).status is StatusCode.EUNKNOWNLEDGERSTATE
            # Closed ledgers and ledgers whose last ensemble lacks this bookie are untouched.
            assert (await bookie.read(2, 0)).status is StatusCode.EOK
            assert (await bookie.read(3, 0)).status is StatusCode.EOK
        async with await V2BookieClient.connect("127.0.0.1", restarted.port) as v2bookie:
            assert (await v2bookie.read(1, 0)).status is StatusCode.EOK  # stored: served
            assert (await v2bookie.read(1, 9)).status is StatusCode.EUNKNOWNLEDGERSTATE


@async_test()
async def test_limbo_persists_until_cleared(tmp_path: Path) -> None:
    server = make_server(tmp_path, metadata=_metadata(), **INTEGRITY)
    await server.start()
    await write_entries(server.port, 1, 2)
    await server.crash()
    async with running_bookie(tmp_path, metadata=_metadata(), **INTEGRITY) as restarted:
        assert restarted.limbo_marked == [1, 4]
    # A clean restart runs no check, and limbo is still there: no self-repair.
    async with running_bookie(tmp_path, metadata=_metadata(), **INTEGRITY) as again:
        assert again.limbo_marked == []
        async with await BookieClient.connect("127.0.0.1", again.port) as bookie:
            assert (await bookie.read(1, 0)).status is StatusCode.EUNKNOWNLEDGERSTATE
            assert again.clear_limbo([4]) == [4]
    (tmp_path / "ledgers" / "current" / CLEAR_LIMBO_FILE).write_text("1\n")
    async with running_bookie(tmp_path, metadata=_metadata(), **INTEGRITY) as cleared:
        assert not (tmp_path / "ledgers" / "current" / CLEAR_LIMBO_FILE).exists()
        async with await BookieClient.connect("127.0.0.1", cleared.port) as bookie:
            # The crash lost the unflushed entries; without limbo that is an explicit negative.
            assert (await bookie.read(1, 0)).status is StatusCode.ENOENTRY
            assert (await bookie.add(1, 5, KEY, entry(1, 5))).status is StatusCode.EFENCED
            assert (await bookie.read(4, 0)).status is StatusCode.ENOENTRY


@async_test()
async def test_missing_cookie_with_stamp_triggers_limbo_even_after_clean_stop(
    tmp_path: Path,
) -> None:
    overrides = {"bookieId": ME, "dataIntegrityChecking": "true",
                 "dataIntegrityStampMissingCookies": "true"}  # fmt: skip
    async with running_bookie(tmp_path, metadata=_metadata(), **overrides) as first:
        assert first.limbo_marked == [1, 4]  # first boot: no cookies yet, like a wiped disk
    async with running_bookie(tmp_path, metadata=_metadata(), **overrides) as second:
        assert second.limbo_marked == []
    for cookie in tmp_path.glob("*/current/VERSION"):
        cookie.unlink()
    async with running_bookie(tmp_path, metadata=_metadata(), **overrides) as wiped:
        assert wiped.limbo_marked == [1, 4]


@async_test()
async def test_torn_journal_tail_is_cut_and_intact_records_replayed(tmp_path: Path) -> None:
    server = make_server(tmp_path)
    await server.start()
    await write_entries(server.port, 1, 3)
    await server.crash()
    journal = tmp_path / "journal" / "current" / "journal.log"
    intact = journal.stat().st_size
    assert intact > 0
    with journal.open("ab") as handle:
        handle.write(b"\x02\x00\x00\x00")  # a record header cut short by the crash
    async with (
        running_bookie(tmp_path) as restarted,
        await BookieClient.connect("127.0.0.1", restarted.port) as bookie,
    ):
        assert [(await bookie.read(1, e)).body for e in range(3)] == [entry(1, e) for e in range(3)]
    assert journal.stat().st_size == 0  # the clean stop checkpointed and truncated it

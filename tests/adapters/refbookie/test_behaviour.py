"""Documented bookie behaviours, exercised on an in-process reference bookie."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.bookkeeper.client import BookieClient, V2BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry, package_lac, verify_lac
from adapters.bookkeeper.errors import CloseReason, ConnectionClosed
from adapters.bookkeeper.status import StatusCode
from tests.adapters.bookkeeper.aio import async_test
from tests.adapters.refbookie.harness import running_bookie

PW = b"secret"
KEY = master_key(PW)
OTHER_KEY = master_key(b"other")


def entry(ledger_id: int, entry_id: int, lac: int | None = None) -> bytes:
    lac = entry_id - 1 if lac is None else lac
    return package_entry(
        DigestType.CRC32C, PW, ledger_id, entry_id, lac, 10 * (entry_id + 1), b"x" * 10
    )


@async_test()
async def test_add_then_read_piggybacks_lac(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        for e in range(3):
            assert (await bookie.add(1, e, KEY, entry(1, e))).status is StatusCode.EOK
        read = await bookie.read(1, 0)
        assert (read.status, read.body, read.max_lac) == (StatusCode.EOK, entry(1, 0), 1)
        last = await bookie.read(1, -1)
        assert (last.entry_id, last.body) == (-1, entry(1, 2))
        assert (await bookie.read(1, 7)).status is StatusCode.ENOENTRY
        assert (await bookie.read(2, 0)).status is StatusCode.ENOLEDGER


@async_test()
async def test_fence_creates_ledger_and_blocks_normal_adds_only(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        fence = await bookie.read(5, -1, fence=True, master_key=KEY)
        assert fence.status is StatusCode.ENOENTRY  # created by the fence, so not ENOLEDGER
        assert (await bookie.read(5, 0)).status is StatusCode.ENOENTRY
        assert (await bookie.add(5, 0, KEY, entry(5, 0))).status is StatusCode.EFENCED
        recovery = await bookie.add(5, 0, KEY, entry(5, 0), recovery=True, priority=100)
        assert recovery.status is StatusCode.EOK
        fenced_read = await bookie.read(5, -1, fence=True, master_key=KEY)
        assert (fenced_read.status, fenced_read.body, fenced_read.max_lac) == (
            StatusCode.EOK, entry(5, 0), None,
        )  # fmt: skip


@async_test()
async def test_a_recovery_read_fences_the_ledger(tmp_path: Path) -> None:
    # A recovery read is a read of an entry with FENCE_LEDGER: it fences like the LAC read
    # (BookKeeper >= 4.14; the spec's Defect 1 is the read that does not).
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        assert (await bookie.add(6, 0, KEY, entry(6, 0))).status is StatusCode.EOK
        read = await bookie.read(6, 0, fence=True, master_key=KEY)
        assert (read.status, read.body) == (StatusCode.EOK, entry(6, 0))
        assert (await bookie.add(6, 1, KEY, entry(6, 1))).status is StatusCode.EFENCED


@async_test()
async def test_the_faulty_mode_that_ignores_recovery_read_fences_is_visible(
    tmp_path: Path,
) -> None:
    faulty = {"refbookie.faultyMode": "ignore-recovery-read-fence"}
    async with (
        running_bookie(tmp_path, **faulty) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        assert (await bookie.add(6, 0, KEY, entry(6, 0))).status is StatusCode.EOK
        assert (await bookie.read(6, 0, fence=True, master_key=KEY)).status is StatusCode.EOK
        assert (await bookie.add(6, 1, KEY, entry(6, 1))).status is StatusCode.EOK


@async_test()
async def test_master_key_binding(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        assert (await bookie.add(1, 0, KEY, entry(1, 0))).status is StatusCode.EOK
        assert (await bookie.add(1, 1, OTHER_KEY, entry(1, 1))).status is StatusCode.EUA
        wrong_fence = await bookie.read(1, -1, fence=True, master_key=OTHER_KEY)
        assert wrong_fence.status is StatusCode.EUA
        assert (await bookie.read(1, -1, fence=True)).status is StatusCode.EUA  # no key
        lac = package_lac(DigestType.CRC32C, PW, 1, 0)
        assert (await bookie.write_lac(1, 0, OTHER_KEY, lac)).status is StatusCode.EUA
        # Reads do not check keys; the failed fences did not fence.
        assert (await bookie.read(1, 0)).status is StatusCode.EOK
        assert (await bookie.add(1, 1, KEY, entry(1, 1))).status is StatusCode.EOK
        # The bookie trusts the body's ledger id: ledger 2's body goes to ledger 2.
        assert (await bookie.add(1, 9, OTHER_KEY, entry(2, 0))).status is StatusCode.EOK
        assert (await bookie.read(2, 0)).body == entry(2, 0)


@async_test()
async def test_read_lac_quirks_and_write_lac(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        missing = await bookie.read_lac(9)
        assert (missing.status, missing.lac_body, missing.last_entry_body) == (
            StatusCode.ENOENTRY, None, None,
        )  # fmt: skip
        await bookie.add(3, 0, KEY, entry(3, 0))
        only_entry = await bookie.read_lac(3)
        assert (only_entry.status, only_entry.lac_body) == (StatusCode.EOK, None)
        assert only_entry.last_entry_body == entry(3, 0)
        lac_body = package_lac(DigestType.CRC32C, PW, 3, 0)
        assert (await bookie.write_lac(3, 0, KEY, lac_body)).status is StatusCode.EOK
        both = await bookie.read_lac(3)
        assert both.lac_body is not None
        assert verify_lac(both.lac_body, DigestType.CRC32C, PW).lac == 0


@async_test()
async def test_misc_operations(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        assert (await bookie.force_ledger(4)).status is StatusCode.EOK
        info = await bookie.get_bookie_info()
        assert info.status is StatusCode.EOK
        assert info.total_disk_capacity and info.free_disk_space
        assert info.total_disk_capacity >= info.free_disk_space
        auth = await bookie.auth()
        assert (auth.status, auth.plugin_name, auth.payload) == (
            StatusCode.EOK, "AuthDisabledPlugin", b"",
        )  # fmt: skip


@async_test()
async def test_v2_adds_reads_and_fencing(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await V2BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        assert (await bookie.add(KEY, entry(8, 0))).status is StatusCode.EOK
        read = await bookie.read(8, 0)
        assert (read.status, read.body, read.max_lac) == (StatusCode.EOK, entry(8, 0), None)
        assert (await bookie.read(8, 1)).status is StatusCode.ENOENTRY
        assert (await bookie.read(9, 0)).status is StatusCode.ENOLEDGER
        fence = await bookie.read(8, -1, fence=True, master_key=KEY)
        assert (fence.status, fence.body) == (StatusCode.EOK, entry(8, 0))
        assert (await bookie.add(KEY, entry(8, 1))).status is StatusCode.EFENCED
        recovery = await bookie.add(KEY, entry(8, 1), recovery=True, high_priority=True)
        assert recovery.status is StatusCode.EOK
        assert (await bookie.add(OTHER_KEY, entry(8, 2))).status is StatusCode.EUA


@async_test()
async def test_pipelined_adds_and_reads_on_one_connection(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        adds = [bookie.add(1, e, KEY, entry(1, e)) for e in range(200)]
        results = await asyncio.gather(*adds)
        assert all(r.status is StatusCode.EOK for r in results)
        reads = await asyncio.gather(*(bookie.read(1, e) for e in range(200)))
        assert [r.body for r in reads] == [entry(1, e) for e in range(200)]


@async_test()
async def test_undecodable_frames_reset_the_connection(tmp_path: Path) -> None:
    async with (
        running_bookie(tmp_path) as server,
        await BookieClient.connect("127.0.0.1", server.port) as bookie,
    ):
        # Header version 4 is not in the enum (golden bad-version-undefined-enum).
        payload = bytes.fromhex("0a070804100118ef07a206050896011000")
        try:
            await bookie.send_payload(payload, txn_id=1007, timeout=5)
        except ConnectionClosed as exc:
            assert exc.reason in (CloseReason.PEER_CLOSED, CloseReason.CONNECTION_BROKEN)
        else:
            raise AssertionError("the bookie answered an undecodable frame")


async def _add_racing_a_fence(server_port: int) -> tuple[StatusCode, bytes | None]:
    """e1 (LAC 0) added on one connection while a fence read arrives on another, just after
    the add: the add's answer and the last entry the fence read returns."""
    async with (
        await BookieClient.connect("127.0.0.1", server_port) as writer,
        await BookieClient.connect("127.0.0.1", server_port) as recovery,
    ):
        assert (await writer.add(8, 0, KEY, entry(8, 0))).status is StatusCode.EOK
        add = asyncio.ensure_future(writer.add(8, 1, KEY, entry(8, 1)))
        await asyncio.sleep(0.001)  # the add is in; the fence comes within its window
        fence = await recovery.read(8, -1, fence=True, master_key=KEY)
        added = await add
        return added.status, fence.body


@async_test()
async def test_a_fence_read_and_an_add_are_atomic_to_each_other(tmp_path: Path) -> None:
    async with running_bookie(tmp_path) as server:
        status, last = await _add_racing_a_fence(server.port)
    # The add came first: it is stored, and the fence read returns it.
    assert (status, last) == (StatusCode.EOK, entry(8, 1))


@async_test()
async def test_the_racy_faulty_mode_adds_after_a_fence_read_missed_the_entry(
    tmp_path: Path,
) -> None:
    async with running_bookie(tmp_path, **{"refbookie.faultyMode": "racy-fence-add"}) as server:
        status, last = await _add_racing_a_fence(server.port)
    # Faulty on purpose: the fence read answered with e0, and the add still succeeded: no
    # serial order of the two gives both answers.
    assert (status, last) == (StatusCode.EOK, entry(8, 0))

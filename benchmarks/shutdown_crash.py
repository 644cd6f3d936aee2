"""The bookie host's shutdown crash, reproduced: a real bookie restarted inside its JVM again
and again, with or without the host's workaround, JVM deaths counted.

Closing 4.17.3's ``DataIntegrityService`` cancels its check without waiting for it; a check
still running when the bookie's storage closes reads the closed RocksDB (``RocksDB.get`` from
``EntryLocationIndex.getLocation`` as it looks for entries to copy, or from
``LedgerMetadataIndex.getStorageStateFlags`` as it clears its flag) and the JVM dies of
SIGSEGV. The bookie host
(``adapters/cluster/java_sources/bkconform/BookieHost.java``) works around it by closing the
data-integrity service, its scheduler and its client first and waiting for the check's thread;
``--no-workaround`` turns that off (the host's configuration key
``bkconform.host.integrityQuiesce=false``), so the bookie is closed in BookKeeper's own order.
docs/findings/bookie-shutdown-sigsegv-4.17.3.md.

The cluster is the limbo configuration of ``benchmarks/bookie_restart.py``: real ZooKeeper,
two real bookies of the release under the bookie host, DbLedgerStorage, data-integrity
checking, missing cookies stamped. ``--ledgers`` ledgers of ``--entries`` entries are written
on both bookies once, at the start. Then one bookie loses its disks (``DataLoss.WIPE``) and
restarts inside its JVM ``--restarts`` times. Every new bookie runs a full integrity check as
it starts (its cookie validation found the disks empty and set the storage's
``NEEDS_INTEGRITY_CHECK`` flag): it recovers the ledgers (the first time) and copies their
entries back from the other bookie. The default 16 x 50 entries make that check long enough
for restarts to land in it: since the test bookies' JIT compiles early
(``-XX:CompileThresholdScaling=0.05``), the former 4 x 20 gave 0 to 2 deaths in 100 restarts
without the workaround, 16 x 50 gave 17, 33 and 40 (2026-11-28). Each restart comes a random 0 to
``--spread`` seconds (seeded) after the host logged that the bookie started, so that restarts
land anywhere in the check; with restarts spread over 0.5 s most come after the check and
hardly any crashes (0 in 100 on 4.17.3). A host
that dies (it exits, is killed by a signal, or writes an ``hs_err_pid*.log``) is counted and
started again as a new process; the count goes on. The JVM's fatal-error files go to the run's
work directory (``-XX:ErrorFile`` through ``BOOKIE_EXTRA_OPTS``; no core file: the JVM then
exits with 1 after writing it).

Printed: the release, restarts, crashes, the crash rate, and each crash's thread, problematic
frame and top frames. Exit 0 without a crash, 1 with one, 2 when the run could not be done.

    python benchmarks/shutdown_crash.py [--bookkeeper 4.17.3] [--restarts 100] [--no-workaround]
        [--ledgers 16] [--entries 50] [--spread 0.05] [--seed 1] [--work-dir DIR] [--quiet]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from random import Random

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import package_entry
from adapters.cluster import (
    BookieSettings,
    DataLoss,
    LedgerStorage,
    LocalCluster,
    LocalClusterOptions,
    Node,
    bookie_host,
)
from adapters.cluster.errors import ClusterError
from adapters.installations.bookkeeper import BookKeeperInstallError, resolve_bookkeeper
from adapters.installations.errors import BookKeeperNotFound
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, Segment
from conformance.targets.cluster_target import DIGEST, KEY, PASSWORD

LIMBO = BookieSettings(
    ledger_storage=LedgerStorage.DB,
    data_integrity_checking=True,
    stamp_missing_cookies=True,
    in_jvm_restarts=True,
)
#: Frames worth printing from an hs_err file: the crash's path.
INTERESTING = re.compile(
    r"rocksdb|RocksDB|LedgerMetadataIndex|DbLedgerStorage|DataIntegrity|datainteg"
)
REQUEST_TIMEOUT_S = 10.0


@dataclasses.dataclass
class Crash:
    restart: int
    returncode: int | None
    hs_err: Path | None
    thread: str = ""
    problematic: str = ""
    frames: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Result:
    version: str
    workaround: bool
    restarts: int = 0
    crashes: list[Crash] = dataclasses.field(default_factory=list)
    #: Restarts of a bookie that was the first of its JVM (the run's first, and each one after
    #: a crash): its JIT is cold and its check slower.
    first_in_jvm: int = 0
    first_in_jvm_crashes: int = 0
    seconds: float = 0.0


def read_hs_err(path: Path, frames: int = 12) -> tuple[str, str, list[str]]:
    """The crashing thread, the problematic frame and the top frames of interest (native then
    Java) of a JVM fatal-error file."""
    lines = path.read_text(errors="replace").splitlines()
    thread = problematic = ""
    picked: list[str] = []
    section = ""
    for index, line in enumerate(lines):
        if line.startswith("# Problematic frame:") and index + 1 < len(lines):
            problematic = lines[index + 1].lstrip("# ").strip()
        elif line.startswith("Current thread"):
            match = re.search(r'JavaThread "([^"]+)"', line)
            thread = match.group(1) if match else line
        elif line.startswith("Native frames:"):
            section = "native"
        elif line.startswith("Java frames:"):
            section = "java"
        elif not line.strip():
            section = ""
        elif section and INTERESTING.search(line) and len(picked) < frames:
            picked.append(line.strip())
    return thread, problematic, picked


STARTED = re.compile(rb"bkconform-bookie-host: bookie generation \d+ started")


def log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


def wait_started(log: Path, offset: int, timeout: float = 30.0) -> None:
    """Until the host logs, past ``offset``, that a bookie generation started: its last
    component, the data-integrity service, has started and with it the first check (the
    cluster's readiness comes earlier, when the bookie serves)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with log.open("rb") as stream:
            stream.seek(offset)
            if STARTED.search(stream.read()):
                return
        time.sleep(0.01)


def hs_err_files(directory: Path) -> set[Path]:
    return set(directory.glob("hs_err_pid*.log"))


def _entry(ledger: int, entry: int) -> bytes:
    payload = b"shutdown-crash %d" % entry
    return package_entry(DIGEST, PASSWORD, ledger, entry, entry - 1, len(payload), payload)


async def _write(addresses: list[tuple[str, int]], ledger: int, entries: int) -> None:
    clients = [
        await BookieClient.connect(*address, request_timeout=REQUEST_TIMEOUT_S)
        for address in addresses
    ]
    try:
        for entry in range(entries):
            await asyncio.gather(
                *(c.add(ledger, entry, KEY, _entry(ledger, entry)) for c in clients)
            )
    finally:
        for client in clients:
            await client.close()


def write_ledgers(cluster: LocalCluster, count: int, entries: int) -> None:
    """``count`` ledgers of ``entries`` entries on every bookie (metadata first, as the Java
    client does), left open. The first check of a wiped bookie finds them in limbo and
    recovers (closes) them; every later one copies their entries back from the other bookie:
    each new bookie's check has the same work to do."""
    if count <= 0:
        return
    bookies = cluster.endpoints().bookies
    ensemble = tuple(sorted(bookies))
    store = LedgerStore(cluster.zookeeper_client, cluster.options.ledgers_root)
    for _ in range(count):
        ledger = store.allocate_ledger_id()
        metadata = LedgerMetadata(
            ensemble_size=len(ensemble),
            write_quorum_size=len(ensemble),
            ack_quorum_size=len(ensemble),
            digest_type=DigestType.CRC32,
            password=PASSWORD,
            segments=(Segment(0, ensemble),),
        )
        store.create(ledger, metadata)
        asyncio.run(_write([bookies[b] for b in ensemble], ledger, entries))


def run(
    home: Path,
    version: str,
    *,
    restarts: int,
    workaround: bool,
    ledgers: int,
    entries: int,
    spread: float,
    seed: int,
    work: Path,
    quiet: bool,
) -> Result:
    errors = work / "hs_err"
    errors.mkdir(parents=True, exist_ok=True)
    # The launcher passes BOOKIE_EXTRA_OPTS to the JVM (a word list: no spaces in the path).
    extra = os.environ.get("BOOKIE_EXTRA_OPTS", "")
    os.environ["BOOKIE_EXTRA_OPTS"] = (
        f"{extra} -XX:ErrorFile={errors}/hs_err_pid%p.log -XX:-CreateCoredumpOnCrash".strip()
    )
    settings = dataclasses.replace(
        LIMBO, extra=bookie_host.host_entries(integrity_quiesce=workaround)
    )
    options = LocalClusterOptions(
        bookies=2,
        bookkeeper_home=home,
        use_bookkeeper_home_env=False,
        bookie_settings=settings,
        work_dir=work / "cluster",
        start_timeout=120.0,
    )
    result = Result(version=version, workaround=workaround)
    began = time.monotonic()
    with LocalCluster(options) as cluster:
        node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        bookie = cluster.bookie(node.id)
        seen = hs_err_files(errors)
        write_ledgers(cluster, ledgers, entries)
        random = Random(seed)
        log = bookie.process.log_path
        started = time.monotonic()
        fresh = True
        # Each restart lands anywhere in the first ``spread`` seconds after the bookie's start,
        # where its integrity check runs.
        restart_at = started + random.uniform(0.0, spread)
        for number in range(1, restarts + 1):
            time.sleep(max(0.0, restart_at - time.monotonic()))
            pid = bookie.process.pid
            offset = log_size(log)
            failure = ""
            try:
                cluster.restart_with_data_loss(node, DataLoss.WIPE)
                wait_started(log, offset)
            except ClusterError as exc:
                failure = str(exc).splitlines()[0]
            started = time.monotonic()
            result.restarts = number
            result.first_in_jvm += fresh
            first, fresh = fresh, False
            # A death during the restart, or just after it while the old bookie's last
            # threads ran: the host is gone, or a new process runs in its place. Looked for
            # when the next restart is due (a fixed wait here, 50 ms, put every restart past
            # the spread; a later death shows in the next restart, and counts the same).
            restart_at = started + random.uniform(0.0, spread)
            time.sleep(max(0.0, restart_at - time.monotonic()))
            died = bookie.process.pid != pid or not bookie.process.is_running()
            code = bookie.process.returncode if not bookie.process.is_running() else None
            new = sorted(hs_err_files(errors) - seen)
            seen |= set(new)
            if died or new or failure:
                crash = Crash(number, code, new[0] if new else None)
                if crash.hs_err is not None:
                    crash.thread, crash.problematic, crash.frames = read_hs_err(crash.hs_err)
                result.crashes.append(crash)
                result.first_in_jvm_crashes += first
                if not quiet:
                    print(
                        f"  restart {number}: the host died (exit {code}, "
                        f"{crash.hs_err.name if crash.hs_err else 'no hs_err'}"
                        f"{'; ' + failure if failure else ''}); thread {crash.thread!r}: "
                        f"{crash.problematic}",
                        flush=True,
                    )
                if not bookie.process.is_running():
                    # Start the host again (a new process, disks wiped) and go on counting.
                    offset = log_size(log)
                    cluster.restart_with_data_loss(node, DataLoss.WIPE)
                    wait_started(log, offset)
                    started = time.monotonic()
                    restart_at = started + random.uniform(0.0, spread)
                    fresh = True
            elif not quiet and number % 10 == 0:
                print(f"  {number} restarts, {len(result.crashes)} crashes", flush=True)
    result.seconds = time.monotonic() - began
    return result


def report(result: Result) -> None:
    crashes = len(result.crashes)
    rate = crashes / result.restarts if result.restarts else 0.0
    print(
        f"BookKeeper {result.version}, workaround {'on' if result.workaround else 'OFF'}: "
        f"{result.restarts} in-JVM restarts, {crashes} crashes ({rate:.1%}; "
        f"{result.seconds:.0f} s)"
    )
    later = result.restarts - result.first_in_jvm
    print(
        f"  of the first bookie of a JVM: {result.first_in_jvm_crashes} crashes in "
        f"{result.first_in_jvm} restarts; of later ones: "
        f"{crashes - result.first_in_jvm_crashes} in {later}"
    )
    for crash in result.crashes:
        where = crash.hs_err.name if crash.hs_err else "no hs_err file"
        print(f"crash at restart {crash.restart}: exit {crash.returncode}, {where}")
        if crash.thread:
            print(f"  thread: {crash.thread}")
        if crash.problematic:
            print(f"  problematic frame: {crash.problematic}")
        for frame in crash.frames:
            print(f"    {frame}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bookkeeper", default="4.17.3", help="a release or a home")
    parser.add_argument("--restarts", type=int, default=100)
    parser.add_argument(
        "--no-workaround",
        action="store_true",
        help="close the bookie in BookKeeper's order (the host's integrity quiescing off)",
    )
    parser.add_argument(
        "--ledgers", type=int, default=16, help="ledgers on both bookies, for the check to copy"
    )
    parser.add_argument("--entries", type=int, default=50, help="entries per ledger")
    parser.add_argument(
        "--spread",
        type=float,
        default=0.05,
        help="each restart comes a random 0 to SPREAD seconds after the bookie started",
    )
    parser.add_argument("--seed", type=int, default=1, help="of the restarts' delays")
    parser.add_argument(
        "--work-dir", type=Path, help="kept (the hs_err files, the logs); default: a temporary one"
    )
    parser.add_argument("--quiet", action="store_true", help="only the summary")
    args = parser.parse_args(argv)
    try:
        home = resolve_bookkeeper(args.bookkeeper)
    except (BookKeeperInstallError, BookKeeperNotFound) as exc:
        print(f"shutdown_crash: {exc}", file=sys.stderr)
        return 2
    version = args.bookkeeper if not Path(args.bookkeeper).is_dir() else home.name

    def go(work: Path) -> Result:
        return run(
            home,
            version,
            restarts=args.restarts,
            workaround=not args.no_workaround,
            ledgers=args.ledgers,
            entries=args.entries,
            spread=args.spread,
            seed=args.seed,
            work=work,
            quiet=args.quiet,
        )

    if args.work_dir is not None:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        result = go(args.work_dir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="bkconform-shutdown-crash-") as work:
            result = go(Path(work))
    report(result)
    return 1 if result.crashes else 0


if __name__ == "__main__":
    sys.exit(main())

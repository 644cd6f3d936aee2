"""The suite's mark on the ledgers it creates on a cluster it does not own, and their clean-up.

A run registers itself in ZooKeeper before it creates a ledger (:meth:`SuiteRun.register`)::

    /bkconform/runs/<run id>           persistent; JSON: the ledgers root, the run's state
                                       ("running", then "ended"), its process (pid, start
                                       time, host, boot id: adapters.process_records), when
                                       it started
    /bkconform/runs/<run id>/alive     ephemeral: held by the run's ZooKeeper session
    /bkconform/runs/<run id>/L<id>     the journal: one per ledger, requested before the
                                       ledger's own create on the same session (ZooKeeper
                                       applies a session's requests in order); data "kept"
                                       for a ledger kept on purpose

and every ledger it creates carries two custom-metadata entries (BookKeeper's
``customMetadata``, which ``bookkeeper shell ledgermetadata`` prints): ``application`` =
``bkconform`` and ``bkconform-run`` = the run id. A ledger is the suite's only when its
metadata carries ``bkconform-run``: nothing else is ever deleted. A marked ledger is deleted by
its run when the run ends (:meth:`SuiteRun.finish`), or later by :func:`clean` once its run is
*dead*, always at the znode version at which its mark was read, as BookKeeper deletes
(:meth:`LedgerStore.remove_many`: the znode and its emptied parents; the bookies' garbage
collection frees the entries).

A run is *alive* while it has not ended and its process runs: on this machine the process
itself says (pid, start time, boot id), so a run killed a moment ago is dead at once, although
its session outlives it by a session timeout; elsewhere its ``alive`` znode (its session) says.
A run that ended keeping ledgers (``--keep-ledgers``, a finding's) leaves its node with only the
kept ledgers journaled, flagged ``kept``: :func:`clean` leaves them unless told otherwise.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError

from adapters.process_records import describe_self, liveness
from adapters.zookeeper.client import DEFAULT_TIMEOUT, AsyncResult, wait
from adapters.zookeeper.errors import MetadataError, MetadataVersionMismatch, NoSuchLedger
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import LedgerMetadata

#: Where runs register (outside every ledgers root: BookKeeper walks those).
RUNS_ROOT: Final = "/bkconform/runs"
ALIVE_NODE: Final = "alive"
JOURNAL_PREFIX: Final = "L"
#: The custom-metadata key that names the run a ledger belongs to: the mark.
RUN_KEY: Final = "bkconform-run"
#: BookKeeper's applications name themselves under this key (Pulsar's managed ledgers do).
APPLICATION_KEY: Final = "application"
APPLICATION: Final = b"bkconform"
#: A run node's ``state``.
RUNNING: Final = "running"
ENDED: Final = "ended"
#: A journal entry's data for a ledger kept on purpose.
KEPT: Final = b"kept"

#: ``"alive"``, ``"dead"`` or ``"unknown"`` for a process record (``describe_self``'s).
Liveness = Callable[[Mapping[str, Any]], str]


def new_run_id() -> str:
    """A run id, unique and readable: ``<UTC time>-<12 hex digits>``."""
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{uuid.uuid4().hex[:12]}"


def mark(run_id: str) -> tuple[tuple[str, bytes], ...]:
    """The custom metadata that marks a ledger as ``run_id``'s."""
    return ((APPLICATION_KEY, APPLICATION), (RUN_KEY, run_id.encode("utf-8")))


def mark_of(metadata: LedgerMetadata) -> str | None:
    """The run a ledger's metadata names (None: not the suite's)."""
    value = metadata.custom_metadata_dict().get(RUN_KEY)
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass
class Removal:
    """What deleting marked ledgers did, ledger by ledger."""

    #: Their znodes deleted (and their emptied parents).
    deleted: list[int] = field(default_factory=list)
    #: No znode: never created (a create that failed or never came), or deleted already.
    absent: list[int] = field(default_factory=list)
    #: Their metadata does not carry the run's mark (or does not parse): left alone.
    foreign: list[int] = field(default_factory=list)
    #: Could not be deleted, and why.
    failed: dict[int, str] = field(default_factory=dict)

    def merge(self, other: Removal) -> None:
        self.deleted += other.deleted
        self.absent += other.absent
        self.foreign += other.foreign
        self.failed.update(other.failed)


def remove_marked(store: LedgerStore, run_id: str, ledger_ids: Iterable[int]) -> Removal:
    """Delete those of ``ledger_ids`` whose metadata carries ``run_id``'s mark, each at the
    version at which the mark was read (a ledger changed since is read and checked again,
    once). Unmarked ledgers, and ledgers of other runs, are left alone.

    :raises ZooKeeperError: ZooKeeper did not answer.
    """
    removal = Removal()
    todo = list(dict.fromkeys(ledger_ids))
    for attempt in range(2):
        versions: dict[int, int] = {}
        for ledger_id, read in store.read_many(todo).items():
            if isinstance(read, NoSuchLedger):
                removal.absent.append(ledger_id)
            elif isinstance(read, MetadataError) or mark_of(read[0]) != run_id:
                removal.foreign.append(ledger_id)
            else:
                versions[ledger_id] = read[1]
        todo = []
        for ledger_id, done in store.remove_many(versions).items():
            if done is True:
                removal.deleted.append(ledger_id)
            elif done is False:
                removal.absent.append(ledger_id)
            elif isinstance(done, MetadataVersionMismatch) and attempt == 0:
                todo.append(ledger_id)  # changed since it was read: read it again
            else:
                removal.failed[ledger_id] = str(done)
        if not todo:
            break
    return removal


class SuiteRun:
    """A run registered in ZooKeeper: its mark, its journal, its end (module docstring)."""

    def __init__(
        self,
        zk: KazooClient,
        ledgers_root: str,
        run_id: str,
        *,
        runs_root: str = RUNS_ROOT,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.zk = zk
        self.ledgers_root = ledgers_root
        self.run_id = run_id
        self.runs_root = runs_root
        self.timeout = timeout
        #: The ledgers journaled (each before its create), in order.
        self.created: list[int] = []
        self._pending: list[tuple[int, AsyncResult[Any]]] = []
        #: Journal entries that could not be written (the ledger is still deleted at the end
        #: of the run; after a kill, only a scan finds it).
        self.journal_errors: dict[int, str] = {}

    @classmethod
    def register(
        cls,
        zk: KazooClient,
        ledgers_root: str,
        *,
        runs_root: str = RUNS_ROOT,
        run_id: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        about: Mapping[str, Any] | None = None,
    ) -> SuiteRun:
        """Register a new run: its node (with ``about`` in its data) and its ``alive`` znode.

        :raises ZooKeeperError: ZooKeeper did not answer.
        :raises kazoo.exceptions.KazooException: ZooKeeper refused (an ACL, say).
        """
        run = cls(zk, ledgers_root, run_id or new_run_id(), runs_root=runs_root, timeout=timeout)
        data = {
            "run": run.run_id,
            "ledgers_root": ledgers_root,
            "state": RUNNING,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "process": describe_self(),
            **(about or {}),
        }
        # The node and its alive znode together: a cleaner never sees the one without the
        # other. A cleaner may delete an emptied runs root meanwhile: then again.
        for _attempt in range(3):
            wait(zk.ensure_path_async(runs_root), timeout=timeout, operation=runs_root)
            transaction = zk.transaction()
            transaction.create(run.path, json.dumps(data).encode())
            transaction.create(f"{run.path}/{ALIVE_NODE}", b"", ephemeral=True)
            results = wait(
                transaction.commit_async(), timeout=timeout, operation=f"register {run.path}"
            )
            failures = [r for r in results if isinstance(r, Exception)]
            if not failures:
                return run
            if not isinstance(failures[0], NoNodeError):
                raise failures[0]
        raise failures[0]

    @property
    def path(self) -> str:
        return f"{self.runs_root}/{self.run_id}"

    @property
    def custom_metadata(self) -> tuple[tuple[str, bytes], ...]:
        """What every ledger of the run carries (:func:`mark`)."""
        return mark(self.run_id)

    def journal(self, ledger_id: int) -> None:
        """Journal ``ledger_id`` before its create: the request goes out now, unanswered yet
        (ZooKeeper applies it before the create that follows on the same session); its answer
        is taken at :meth:`finish`."""
        self.created.append(ledger_id)
        try:
            self._pending.append((ledger_id, self.zk.create_async(self._entry(ledger_id), b"")))
        except Exception as exc:  # the journal is best effort; the ledger is still deleted
            self.journal_errors[ledger_id] = f"{type(exc).__name__}: {exc}"

    def finish(self, store: LedgerStore, *, keep: Collection[int] = ()) -> Removal:
        """The run ends: its ledgers are deleted but those of ``keep`` (flagged kept in the
        journal), their journal entries removed, and the run's node too unless it still
        journals a ledger (kept, or not deleted: :func:`clean` retries those).

        :raises ZooKeeperError: ZooKeeper did not answer (the run's node stays: the run is
        dead once its process is, and :func:`clean` finishes the job).
        """
        self._settle_journal()
        kept = [i for i in dict.fromkeys(self.created) if i in keep]
        removal = remove_marked(store, self.run_id, [i for i in self.created if i not in keep])
        done = [*removal.deleted, *removal.absent, *removal.foreign]
        _delete_all(self.zk, [self._entry(i) for i in done], self.timeout)
        # A kept ledger is journaled kept (its entry written now if it could not be before):
        # no clean-up deletes it unless told to.
        flags = [(i, self.zk.set_async(self._entry(i), KEPT)) for i in kept]
        for ledger_id, result in flags:
            try:
                wait(result, timeout=self.timeout, operation=f"keep {ledger_id}")
            except NoNodeError:
                entry = self._entry(ledger_id)
                with contextlib.suppress(NodeExistsError):
                    wait(self.zk.create_async(entry, KEPT), timeout=self.timeout, operation=entry)
        _end_run(self.zk, self.path, self.timeout)
        return removal

    def _entry(self, ledger_id: int) -> str:
        return f"{self.path}/{JOURNAL_PREFIX}{ledger_id}"

    def _settle_journal(self) -> None:
        pending, self._pending = self._pending, []
        for ledger_id, result in pending:
            try:
                wait(result, timeout=self.timeout, operation=f"journal {ledger_id}")
            except NodeExistsError:
                pass
            except Exception as exc:  # the journal is best effort; the ledger is still deleted
                self.journal_errors[ledger_id] = f"{type(exc).__name__}: {exc}"


def _end_run(zk: KazooClient, path: str, timeout: float) -> None:
    """The run's ``alive`` znode goes; so does its node if no journal entry is left, else its
    state says ended."""
    _delete_all(zk, [f"{path}/{ALIVE_NODE}"], timeout)
    try:
        wait(zk.delete_async(path), timeout=timeout, operation=f"delete {path}")
    except NoNodeError:
        pass
    except NotEmptyError:
        try:
            data, stat = wait(zk.get_async(path), timeout=timeout, operation=f"get {path}")
            about = json.loads(data) if data else {}
            if isinstance(about, dict) and about.get("state") != ENDED:
                about["state"] = ENDED
                wait(
                    zk.set_async(path, json.dumps(about).encode(), version=stat.version),
                    timeout=timeout,
                    operation=f"set {path}",
                )
        except (NoNodeError, BadVersionError, ValueError):
            pass  # gone, or changed by a cleaner meanwhile
    _delete_parent_if_empty(zk, path, timeout)


def _delete_parent_if_empty(zk: KazooClient, path: str, timeout: float) -> None:
    """``/bkconform/runs`` and ``/bkconform`` go when the last run's node goes."""
    parent = path.rsplit("/", 1)[0]
    while parent:
        try:
            wait(zk.delete_async(parent), timeout=timeout, operation=f"delete {parent}")
        except (NoNodeError, NotEmptyError):
            return
        parent = parent.rsplit("/", 1)[0]


def _delete_all(zk: KazooClient, paths: list[str], timeout: float) -> None:
    """Delete each of ``paths`` (pipelined); a missing one is no error."""
    pending = [(path, zk.delete_async(path)) for path in paths]
    for path, result in pending:
        with contextlib.suppress(NoNodeError):
            wait(result, timeout=timeout, operation=f"delete {path}")


# Cleaning up after dead runs -----------------------------------------------------------------


@dataclass(frozen=True)
class RunNode:
    """A registered run as :func:`list_runs` reads it."""

    run_id: str
    about: Mapping[str, Any]
    #: Ledger id -> kept on purpose.
    journal: Mapping[int, bool]
    has_alive_node: bool

    @property
    def ledgers_root(self) -> str | None:
        root = self.about.get("ledgers_root")
        return root if isinstance(root, str) else None

    def status(self, process_liveness: Liveness | None = None) -> str:
        """``"alive"`` or ``"dead"`` (module docstring). ``process_liveness``: how a process
        record reads (default: :func:`adapters.process_records.liveness`)."""
        if self.about.get("state") != RUNNING:
            return "dead"
        process = self.about.get("process")
        read = process_liveness if process_liveness is not None else liveness
        said = read(process) if isinstance(process, Mapping) else "unknown"
        if said != "unknown":
            return said
        return "alive" if self.has_alive_node else "dead"


def list_runs(
    zk: KazooClient, *, runs_root: str = RUNS_ROOT, timeout: float = DEFAULT_TIMEOUT
) -> list[RunNode]:
    """Every registered run (a node whose data does not parse reads as a run about nothing:
    it names no ledgers root, and nothing of it is touched)."""
    try:
        names = wait(zk.get_children_async(runs_root), timeout=timeout, operation=runs_root)
    except NoNodeError:
        return []
    runs = []
    for name in sorted(names):
        path = f"{runs_root}/{name}"
        try:
            data, _ = wait(zk.get_async(path), timeout=timeout, operation=f"get {path}")
            children = wait(zk.get_children_async(path), timeout=timeout, operation=path)
        except NoNodeError:
            continue  # its run ended meanwhile
        try:
            about = json.loads(data) if data else {}
        except ValueError:
            about = {}
        if not isinstance(about, dict):
            about = {}
        entries = [c for c in children if _journal_id(c) is not None]
        pending = [(c, zk.get_async(f"{path}/{c}")) for c in entries]
        journal: dict[int, bool] = {}
        for child, result in pending:
            try:
                value, _ = wait(result, timeout=timeout, operation=f"get {path}/{child}")
            except NoNodeError:
                continue
            ledger_id = _journal_id(child)
            if ledger_id is not None:
                journal[ledger_id] = value == KEPT
        runs.append(RunNode(name, about, journal, ALIVE_NODE in children))
    return runs


def _journal_id(name: str) -> int | None:
    digits = name[len(JOURNAL_PREFIX) :]
    if name.startswith(JOURNAL_PREFIX) and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


@dataclass
class CleanReport:
    """What :func:`clean` found and did."""

    #: Runs that died or ended, whose journaled ledgers were deleted (but the kept ones).
    dead_runs: list[str] = field(default_factory=list)
    #: How many ledgers of each run were deleted (the journals' and the scan's).
    deleted_by_run: dict[str, int] = field(default_factory=dict)
    removal: Removal = field(default_factory=Removal)
    #: Runs still alive, and how many ledgers they journal: left alone.
    live_runs: dict[str, int] = field(default_factory=dict)
    #: Ledgers kept on purpose by ended runs, left (unless ``include_kept``).
    kept: list[int] = field(default_factory=list)
    #: Ledgers read by the scan (None: no scan), and marked ones it found that no journal had.
    scanned: int | None = None
    found_by_scan: int = 0

    def describe(self) -> list[str]:
        """The report in lines, for a console."""
        removal = self.removal
        runs = len([r for r, n in self.deleted_by_run.items() if n])
        lines = [
            f"deleted {_n(len(removal.deleted), 'ledger')} of {_n(runs, 'run')} that died or ended"
            if removal.deleted
            else "deleted no ledger: no run that died or ended left one"
        ]
        if removal.absent:
            lines.append(
                f"{_n(len(removal.absent), 'journaled ledger')} had no znode (never created)"
            )
        if self.scanned is not None:
            lines.append(
                f"scanned {_n(self.scanned, 'ledger')}: "
                f"{_n(self.found_by_scan, 'marked ledger')} no journal listed"
            )
        if self.live_runs:
            count = sum(self.live_runs.values())
            lines.append(
                f"left alone {_n(count, 'ledger')} of {_n(len(self.live_runs), 'live run')} "
                f"({', '.join(sorted(self.live_runs))})"
            )
        if self.kept:
            lines.append(
                f"left {_n(len(self.kept), 'ledger')} kept on purpose (--include-kept deletes "
                f"them): {', '.join(str(i) for i in sorted(self.kept))}"
            )
        if removal.foreign:
            lines.append(
                f"left alone {_n(len(removal.foreign), 'journaled ledger')} that do not carry "
                f"their run's mark: {', '.join(str(i) for i in sorted(removal.foreign))}"
            )
        for ledger_id, why in sorted(removal.failed.items()):
            lines.append(f"could not delete ledger {ledger_id}: {why}")
        return lines


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def clean(
    store: LedgerStore,
    *,
    runs_root: str = RUNS_ROOT,
    include_kept: bool = False,
    scan: bool = False,
    process_liveness: Liveness | None = None,
) -> CleanReport:
    """Delete the marked ledgers of ``store``'s cluster whose runs are dead (module
    docstring), as their journals list them; with ``scan``, also every other marked ledger of
    a dead or unregistered run, found by reading every ledger's metadata. Ledgers kept on
    purpose stay unless ``include_kept``; ledgers of live runs, and unmarked ledgers, always.

    :raises ZooKeeperError: ZooKeeper did not answer.
    """
    zk, timeout = store.zk, store.timeout
    report = CleanReport()
    for run in list_runs(zk, runs_root=runs_root, timeout=timeout):
        if run.ledgers_root != store.ledgers_root:
            continue  # another cluster's run (or a node that says nothing)
        if run.status(process_liveness) == "alive":
            report.live_runs[run.run_id] = len(run.journal)
            continue
        report.dead_runs.append(run.run_id)
        ours = [i for i, k in run.journal.items() if include_kept or not k]
        report.kept += [i for i, k in run.journal.items() if k and not include_kept]
        removal = remove_marked(store, run.run_id, ours)
        report.removal.merge(removal)
        report.deleted_by_run[run.run_id] = len(removal.deleted)
        path = f"{runs_root}/{run.run_id}"
        done = [*removal.deleted, *removal.absent, *removal.foreign]
        _delete_all(zk, [f"{path}/{JOURNAL_PREFIX}{i}" for i in done], timeout)
        _end_run(zk, path, timeout)
    if scan:
        handled = set(report.removal.deleted)
        ids = store.list_ledgers()
        report.scanned = len(ids)
        marked: dict[str, list[int]] = {}
        for ledger_id, read in store.read_many(ids).items():
            owner = None if isinstance(read, MetadataError) else mark_of(read[0])
            if owner is not None and ledger_id not in handled:
                marked.setdefault(owner, []).append(ledger_id)
        # The runs as they are now, after the reads: a run registers before it creates a
        # ledger, so the run of every marked ledger read is listed now unless it is gone.
        runs = {r.run_id: r for r in list_runs(zk, runs_root=runs_root, timeout=timeout)}
        by_run: dict[str, list[int]] = {}
        for owner, ledger_ids in marked.items():
            registered = runs.get(owner)
            if registered is not None and registered.status(process_liveness) == "alive":
                continue
            journal = registered.journal if registered is not None else {}
            kept = {i for i, k in journal.items() if k}
            left = [i for i in ledger_ids if include_kept or i not in kept]
            report.kept += [i for i in ledger_ids if i not in left and i not in report.kept]
            if left:
                by_run[owner] = left
        for owner, ledger_ids in sorted(by_run.items()):
            removal = remove_marked(store, owner, ledger_ids)
            report.found_by_scan += len(removal.deleted)
            deleted = report.deleted_by_run.get(owner, 0) + len(removal.deleted)
            report.deleted_by_run[owner] = deleted
            report.removal.merge(removal)
    return report


__all__ = [
    "APPLICATION",
    "APPLICATION_KEY",
    "RUNS_ROOT",
    "RUN_KEY",
    "CleanReport",
    "Removal",
    "RunNode",
    "SuiteRun",
    "clean",
    "list_runs",
    "mark",
    "mark_of",
    "new_run_id",
    "remove_marked",
]

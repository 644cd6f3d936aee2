"""The ``external`` target: an existing cluster, reached through its ZooKeeper.

Nothing is started or stopped. Each example writes a ledger of its own (ids from the cluster's
id generator), so a run never touches other ledgers. The bookies' configuration is the
cluster's: the model's switches (limbo, fencing on unclean shutdown) must be given to match it.
Crash faults go through fault agents (``adapters/agent``) next to the bookies, keyed by the
bookie's registered id, and only when the caller says it understands that they destroy data
(``destroy_data=True``): otherwise configurations with crashes are refused before anything is
written. The agents check the cluster's INSTANCEID (read from ZooKeeper and sent with every
destructive call) against their own, and refuse a mismatch without touching the bookie.

Ledgers: the cluster is someone else's, so the target leaves it as it found it. It registers
its run in ZooKeeper when it opens and marks every ledger it creates with the run's id in the
ledger's custom metadata (``adapters/zookeeper/ledger_marks.py``); when it closes (every exit
path: the commands close it in ``finally``) it deletes them as BookKeeper's own delete does
(the metadata; the bookies' garbage collection frees the entries), says how many, and keeps
them with ``keep_ledgers`` (``--keep-ledgers``), or only a finding's
(:meth:`ExternalTarget.keep_finding_ledgers`). Opening also deletes what runs that died
(``kill -9``) left. Only ledgers carrying the suite's mark are ever deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from typing import Any

from kazoo.exceptions import KazooException

from adapters.agent.client import AgentClient
from adapters.agent.errors import AgentError
from adapters.cluster.external import ExternalCluster
from adapters.cluster.provider import ClusterProvider
from adapters.installations.system import MODEL_CLIENT, SystemUnderTest
from adapters.zookeeper.errors import MetadataError
from adapters.zookeeper.ledger_marks import RUNS_ROOT, CleanReport, Removal, SuiteRun, clean
from adapters.zookeeper.ledger_store import LedgerStore
from conformance.operations import CreateLedger
from conformance.targets.base import TargetError, UnsupportedConfiguration
from conformance.targets.cluster_target import ClusterTarget
from model.bookkeeper.config import ModelConfig

#: Why ledgers were kept, as the record says it.
KEPT_BY_OPTION = "--keep-ledgers"
KEPT_FOR_FINDING = "finding"


class ExternalTarget(ClusterTarget):
    name = "external"
    prunes_ledgers = False  # the run's ledgers go when it ends, or stay (--keep-ledgers)

    def __init__(
        self,
        zookeeper_connect: str,
        *,
        ledgers_root: str = "/ledgers",
        allow_remote: bool = False,
        request_timeout: float = 10.0,
        agents: Mapping[str, AgentClient] | None = None,
        destroy_data: bool = False,
        keep_ledgers: bool = False,
        notify: Callable[[str], None] | None = None,
        runs_root: str = RUNS_ROOT,
    ) -> None:
        """``keep_ledgers``: leave every ledger the run created on the cluster (else only a
        finding's). ``notify``: where the lines saying what became of them go (default: the
        standard output). ``runs_root``: where runs register (``ledger_marks.RUNS_ROOT``)."""
        super().__init__(request_timeout=request_timeout)
        self.agents = dict(agents or {})
        self.destroy_data = destroy_data
        self.zookeeper_connect = zookeeper_connect
        self.ledgers_root = ledgers_root
        self.allow_remote = allow_remote
        self.keep_ledgers = keep_ledgers
        self.runs_root = runs_root
        self._notify = notify if notify is not None else _print
        self._external: ExternalCluster | None = None
        self._suite_run: SuiteRun | None = None
        self._finding_ledgers: list[int] = []
        self._earlier: CleanReport | None = None
        #: What became of the ledgers of the run that ended last (None before): the run
        #: directory's ``ledgers`` record (:meth:`_record`).
        self.ledger_record: dict[str, Any] | None = None

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        if cfg.max_crashes and not self.destroy_data:
            raise UnsupportedConfiguration(
                "refusing to crash bookies of a running cluster: the crash wipes the bookie's "
                "data. Pass --i-understand-this-destroys-data (and --agent for each bookie)"
            )
        if cfg.max_crashes:
            for bookie_id, agent in self.agents.items():
                try:
                    agent.status()
                except AgentError as exc:
                    raise TargetError(
                        f"the agent of bookie {bookie_id}: {exc}", retriable=exc.retriable
                    ) from exc
        self._external = ExternalCluster(
            self.zookeeper_connect,
            self.ledgers_root,
            timeout=self.request_timeout,
            allow_remote=self.allow_remote,
            agents=self.agents if cfg.max_crashes else None,
            delete_cookie_on_wipe=not cfg.limbo_on_unclean_shutdown,
        )
        self._external.start()
        try:
            self._begin_ledgers(self._external)
        except BaseException:
            self._external.stop()  # open() closes the target, but knows no cluster yet
            raise
        return self._external

    def _choose_bookies(self, registered: list[str], cfg: ModelConfig) -> list[str]:
        if not cfg.max_crashes:
            return super()._choose_bookies(registered, cfg)
        unknown = sorted(set(self.agents) - set(registered))
        if unknown:
            raise UnsupportedConfiguration(
                f"agents were given for bookies that are not registered: {unknown} "
                f"(registered: {registered})"
            )
        return super()._choose_bookies(sorted(self.agents), cfg)

    def close(self) -> None:
        try:
            self._end_ledgers()
        finally:
            try:
                super().close()
            finally:
                for agent in self.agents.values():
                    agent.close()

    # The run's ledgers ----------------------------------------------------------------------

    def keep_finding_ledgers(self, ledger_ids: Iterable[int]) -> None:
        """Keep these ledgers when the run ends (a finding's: its evidence on the cluster)."""
        self._finding_ledgers += [i for i in ledger_ids if i not in self._finding_ledgers]

    @property
    def run_id(self) -> str | None:
        """The id that marks this run's ledgers (None unless open)."""
        return None if self._suite_run is None else self._suite_run.run_id

    def _store(self) -> LedgerStore:
        assert self._external is not None
        return LedgerStore(
            self._external.zookeeper_client, self.ledgers_root, timeout=self.request_timeout
        )

    def _begin_ledgers(self, cluster: ExternalCluster) -> None:
        """Delete what dead runs left (by their journals), then register this run."""
        self._finding_ledgers = []
        self.ledger_record = None
        try:
            self._earlier = clean(self._store(), runs_root=self.runs_root)
            removal = self._earlier.removal
            if removal.deleted or removal.failed:
                for line in self._earlier.describe():
                    self._notify(f"Ledgers of earlier runs: {line}")
            version = _version()
            self._suite_run = SuiteRun.register(
                cluster.zookeeper_client,
                self.ledgers_root,
                runs_root=self.runs_root,
                timeout=self.request_timeout,
                about={"bkconform": version, "zookeeper": self.zookeeper_connect},
            )
        except KazooException as exc:
            raise TargetError(
                f"ZooKeeper refused to register the run under {self.runs_root} (where bkconform "
                f"marks the ledgers it creates, to delete them): {exc!r}",
                retriable=False,
            ) from exc

    def _custom_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return () if self._suite_run is None else self._suite_run.custom_metadata

    def _create(self, op: CreateLedger) -> None:
        if self._suite_run is not None:
            self._suite_run.journal(self.ledger_id)  # before the create, on the same session
        super()._create(op)

    def _end_ledgers(self) -> None:
        """The run ends: delete its ledgers, or keep them; say so, and record it."""
        run, self._suite_run = self._suite_run, None
        if run is None or self._external is None:
            return
        created = list(dict.fromkeys(run.created))
        if self.keep_ledgers:
            keep, why = created, KEPT_BY_OPTION
        else:
            keep, why = [i for i in self._finding_ledgers if i in created], KEPT_FOR_FINDING
        try:
            removal = run.finish(self._store(), keep=keep)
        except (MetadataError, KazooException) as exc:
            self.ledger_record = self._record(run, Removal(), [], None, error=str(exc))
            self._notify(
                f"Ledgers: could not delete the {len(created)} ledgers this run created "
                f"({exc}); `bkconform cluster clean --zk {self.zookeeper_connect}` deletes them"
            )
            return
        self.ledger_record = self._record(run, removal, keep, why if keep else None)
        self._notify(self._describe(run, removal, keep, why))

    def _record(
        self,
        run: SuiteRun,
        removal: Removal,
        kept: list[int],
        why: str | None,
        *,
        error: str | None = None,
    ) -> dict[str, Any]:
        created = len(removal.deleted) + len(removal.failed) + len(kept)
        record: dict[str, Any] = {
            "run_id": run.run_id,
            "created": created if error is None else len(set(run.created)),
            "deleted": len(removal.deleted),
            "kept": sorted(kept),
            "kept_because": why,
            "finding_ledgers": sorted(i for i in self._finding_ledgers if i in run.created),
            "not_deleted": {str(i): reason for i, reason in sorted(removal.failed.items())},
            "left_alone": sorted(removal.foreign),
        }
        if error is not None:
            record["error"] = error
        earlier = self._earlier
        if earlier is not None:
            record["earlier_runs"] = {
                "runs": sorted(r for r, n in earlier.deleted_by_run.items() if n),
                "deleted": len(earlier.removal.deleted),
            }
        return record

    def _describe(self, run: SuiteRun, removal: Removal, kept: list[int], why: str) -> str:
        ids = ", ".join(str(i) for i in sorted(kept))
        created = len(removal.deleted) + len(removal.failed) + len(kept)
        line = (
            f"Ledgers: this run ({run.run_id}) created {created} on the cluster and deleted "
            f"{len(removal.deleted)} (their metadata, as BookKeeper deletes a ledger; the "
            "bookies' garbage collection frees their entries)"
        )
        clean_kept = f"bkconform cluster clean --zk {self.zookeeper_connect} --include-kept"
        if kept and why == KEPT_BY_OPTION:
            line += f"; kept {len(kept)} ({KEPT_BY_OPTION}): {ids}. `{clean_kept}` deletes them"
        elif kept:
            line += f"; kept the finding's: {ids}. `{clean_kept}` deletes them"
        for ledger_id, reason in sorted(removal.failed.items()):
            line += f"\nLedgers: could not delete ledger {ledger_id}: {reason}"
        if removal.failed:
            line += f"; `bkconform cluster clean --zk {self.zookeeper_connect}` retries"
        return line

    def _zookeeper_client(self) -> Any:
        assert self._external is not None
        return self._external.zookeeper_client

    def describe(self) -> dict[str, str]:
        described = {**super().describe(), "zookeeper": self.zookeeper_connect}
        if self.run_id is not None:
            described["bkconform_run"] = self.run_id
        return described

    def system_under_test(self) -> SystemUnderTest:
        at = self.zookeeper_connect
        return SystemUnderTest(
            f"the bookies registered at {at}{self.ledgers_root} (not identified)",
            MODEL_CLIENT,
            f"ZooKeeper at {at} (version not asked)",
        )


def _print(line: str) -> None:
    print(line, flush=True)


def _version() -> str:
    try:
        return metadata.version("bkconform")
    except metadata.PackageNotFoundError:
        return "unknown"

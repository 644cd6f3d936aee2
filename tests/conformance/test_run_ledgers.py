"""What becomes of a run's ledgers on a cluster that outlives it: the ledger each example ran
on (a finding's is kept), and the record the run directory gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.run_ledgers import FindingLedgers, ledger_record, record_ledgers


class _Target:
    """Stands for the external target: its ledger now, and what it was asked to keep."""

    name = "external"

    def __init__(self) -> None:
        self.ledger = -1
        self.kept: list[int] = []
        self.ledger_record: dict[str, Any] | None = None

    def describe(self) -> dict[str, str]:
        return {"ledger_id": str(self.ledger)}

    def keep_finding_ledgers(self, ids: list[int]) -> None:
        self.kept += ids


class _Run:
    """Stands for an ExampleRun (any object a weak reference can name)."""


def test_the_findings_ledger_is_the_one_its_example_ran_on() -> None:
    target = _Target()
    ledgers = FindingLedgers(target)  # type: ignore[arg-type]
    runs: list[Any] = [object.__new__(_Run) for _ in range(3)]
    for ledger, run in zip((10, 11, 12), runs, strict=True):
        target.ledger = ledger
        ledgers.remember("hypothesis", run)
    ledgers.keep(runs[1])
    assert target.kept == [11]
    ledgers.keep(object.__new__(_Run))  # not seen: nothing kept
    assert target.kept == [11]
    ledgers.keep(object.__new__(_Run), just_ran=True)  # a replay: the target's ledger now
    assert target.kept == [11, 12]
    ledgers.keep_current()  # a scenario: its one ledger
    assert target.kept == [11, 12, 12]


def test_no_ledger_yet_is_not_kept() -> None:
    target = _Target()
    ledgers = FindingLedgers(target)  # type: ignore[arg-type]
    ledgers.keep_current()
    ledgers.keep(object.__new__(_Run), just_ran=True)
    assert target.kept == []


class _LocalTarget:
    """A target whose cluster goes with the run: nothing to keep, nothing to record."""

    name = "local"

    def describe(self) -> dict[str, str]:
        raise AssertionError("a target that keeps no ledgers is never asked for its ledger")


def test_a_target_whose_cluster_goes_with_the_run_keeps_and_records_nothing(
    tmp_path: Path,
) -> None:
    target = _LocalTarget()
    ledgers = FindingLedgers(target)  # type: ignore[arg-type]
    run: Any = object.__new__(_Run)
    ledgers.remember("hypothesis", run)
    ledgers.keep(run)
    ledgers.keep_current()
    assert ledger_record(target) is None  # type: ignore[arg-type]

    class _Writer:
        def __init__(self) -> None:
            self.extra: dict[str, Any] = {}

        def record(self, key: str, value: Any) -> None:
            self.extra[key] = value

    writer = _Writer()
    record_ledgers(writer, target)  # type: ignore[arg-type]
    assert writer.extra == {}
    external = _Target()
    external.ledger_record = {"created": 2, "deleted": 2}
    record_ledgers(writer, external)  # type: ignore[arg-type]
    assert writer.extra == {"ledgers": {"created": 2, "deleted": 2}}

"""``--ledger-storage`` and ``--settings-profile`` on every command that starts bookies: how they
are read, what is refused before anything starts, and where a run records them (the system
line, results.json, the qualification's rows, report and console)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from adapters.cluster.bookie_profiles import BOOKKEEPER, PULSAR, SUITE, LedgerStorage
from adapters.cluster.bookies import BookieSettings
from conformance.cli import build_parser, main
from conformance.commands.options import (
    bookie_settings_from_args,
    storages_from_text,
    target_spec_from_args,
)
from conformance.javaclient.run import _target, java_client_system
from conformance.targets.base import TargetError
from conformance.targets.cluster_target import ClusterTarget
from conformance.targets.spec import TargetSpec
from tests.adapters.installations.test_system import distribution
from tests.conformance.lying_target import LyingTarget

QUICK = ["--max-examples", "2", "--steps", "10", "--seconds", "2", "--no-explore"]


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--target", "local"],
        ["replay", "AA==", "--target", "local"],
        ["scenario", "defect1-fencing", "--target", "local"],
        ["qualify", "--target", "docker"],
        ["run", "--client", "java", "--target", "local"],
        ["scenario", "defect1-java-client", "--target", "local"],
    ],
)
def test_every_command_that_starts_bookies_takes_both(command: list[str]) -> None:
    args = _parse(*command, "--ledger-storage", "db", "--settings-profile", "pulsar")
    spec = target_spec_from_args(args)
    assert (spec.ledger_storage, spec.settings_profile) == ("db", "pulsar")
    settings = bookie_settings_from_args(args)
    assert (settings.ledger_storage, settings.profile) == (LedgerStorage.DB, PULSAR)
    default = _parse(*command)
    assert (target_spec_from_args(default).ledger_storage, default.settings_profile) == (
        None,
        "suite",
    )
    # Without --ledger-storage, the profile's storage; the bookies hosted, with standby JVMs
    # for their restarts (a Java-client run's), unless --process-restarts.
    assert bookie_settings_from_args(default) == BookieSettings().with_standby_restarts()
    assert bookie_settings_from_args(_parse(*command, "--process-restarts")) == BookieSettings()
    bookkeeper = bookie_settings_from_args(_parse(*command, "--settings-profile", "bookkeeper"))
    assert (bookkeeper.ledger_storage, bookkeeper.profile) == (LedgerStorage.SORTED, BOOKKEEPER)


def test_a_list_of_storages_is_qualify_s() -> None:
    assert storages_from_text("sorted, db") == ("sorted", "db")
    assert storages_from_text(None) == ()
    with pytest.raises(ValueError, match="is no storage"):
        storages_from_text("sorted,lsm")
    with pytest.raises(ValueError, match="names a storage twice"):
        storages_from_text("db,db")
    with pytest.raises(ValueError, match="one storage per run"):
        target_spec_from_args(_parse("run", "--target", "local", "--ledger-storage", "sorted,db"))
    with pytest.raises(ValueError, match="one storage per run"):
        bookie_settings_from_args(
            _parse("run", "--client", "java", "--ledger-storage", "sorted,db")
        )
    with pytest.raises(SystemExit):
        _parse("run", "--settings-profile", "kafka")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--ledger-storage", "db"], "not model: the model has no bookies"),
        (
            ["run", "--target", "local", "--ledger-storage", "sorted", "--crash", "open"],
            "limbo (data integrity checking) needs DbLedgerStorage",
        ),
        (
            ["scenario", "limbo-crash", "--target", "local", "--ledger-storage", "sorted"],
            "limbo (data integrity checking) needs DbLedgerStorage",
        ),
        (
            [
                "run",
                "--target",
                "local",
                "--bookie-kind",
                "reference",
                "--settings-profile",
                "pulsar",
            ],
            "which has no ledger storage",
        ),
        (["run", "--target", "local", "--ledger-storage", "sorted,db"], "one storage per run"),
        (
            ["qualify", "--target", "model", "--ledger-storage", "sorted,db"],
            "of --target local or docker, not model",
        ),
        (
            [
                "qualify",
                "--target",
                "local",
                "--ledger-storage",
                "sorted",
                "--configs",
                "limbo-crash",
            ],
            "no configuration of limbo-crash can run on sorted",
        ),
        (["qualify", "--target", "local", "--ledger-storage", "sorted,lsm"], "is no storage"),
    ],
)
def test_what_cannot_run_is_refused_before_anything_starts(
    argv: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("BOOKKEEPER_HOME", str(distribution(tmp_path / "bk", "4.18.0")))
    runs = tmp_path / "runs"
    assert main([*argv, "--runs-dir", str(runs)]) == 2
    assert message in capsys.readouterr().err
    assert not runs.exists()  # refused before a run directory was made


def test_a_local_run_names_and_records_its_bookies_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOOKKEEPER_HOME", str(distribution(tmp_path / "bk", "4.18.0")))

    def unreachable(self: ClusterTarget, cfg: object) -> None:
        raise TargetError("not started in a fast test")

    monkeypatch.setattr(ClusterTarget, "open", unreachable)
    runs = tmp_path / "runs"
    for argv, line, recorded in (
        (
            ["run", "--crash", "open", "--settings-profile", "bookkeeper"],
            "DbLedgerStorage (limbo: data integrity checking needs it), settings profile "
            "bookkeeper",
            {"ledger_storage": "db", "settings_profile": "bookkeeper"},
        ),
        (
            ["scenario", "defect1-fencing", "--ledger-storage", "db"],
            "DbLedgerStorage, settings profile suite",
            {"ledger_storage": "db", "settings_profile": "suite"},
        ),
        (
            ["run", "--settings-profile", "pulsar", "--ledger-storage", "sorted"],
            "SortedLedgerStorage, settings profile pulsar",
            {"ledger_storage": "sorted", "settings_profile": "pulsar"},
        ),
    ):
        out = runs / argv[0] / argv[-1]
        assert main([*argv, "--target", "local", "--runs-dir", str(out)]) == 2
        (header,) = [x for x in capsys.readouterr().out.splitlines() if "under test" in x]
        assert header.endswith(f"; bookie settings: {line}")
        (run_dir,) = out.iterdir()
        results = json.loads((run_dir / "results.json").read_text())
        assert {k: results["target"][k] for k in recorded} == recorded
        assert results["system_under_test"]["bookie_settings"] == line


def test_a_qualification_over_two_storages_is_one_report_with_a_column_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BOOKKEEPER_HOME", str(distribution(tmp_path / "bk", "4.18.0")))
    built: list[tuple[str | None, object]] = []

    def build(self: TargetSpec, config: object = None) -> LyingTarget:
        built.append((self.ledger_storage, config))
        return LyingTarget()

    monkeypatch.setattr(TargetSpec, "build", build)
    run_dir = tmp_path / "q"
    argv = ["qualify", "--target", "local", "--master", "none", "--shards", "2", "--quiet"]
    argv += ["--configs", "fenced-recovery,limbo-crash", "--crash-time-share", "1"]
    argv += ["--ledger-storage", "sorted,db", "--settings-profile", "pulsar"]
    assert main([*argv, "--run-dir", str(run_dir), *QUICK]) == 0
    out = capsys.readouterr().out
    assert "  fenced-recovery on sorted: clean (1 shards" in out
    assert "  limbo-crash on sorted: not applicable: limbo (data integrity checking)" in out
    assert "  limbo-crash on db: clean (1 shards" in out
    # Each shard built its target on its own storage, with its configuration.
    shards = [(storage, config) for storage, config in built if config is not None]
    assert sorted(str(storage) for storage, _ in shards) == ["db", "db", "sorted"]
    rows = pq.read_table(run_dir / "shards").to_pylist()
    assert sorted(
        (r["configuration"], r["ledger_storage"], r["settings_profile"]) for r in rows
    ) == [
        ("fenced-recovery", "db", "pulsar"),
        ("fenced-recovery", "sorted", "pulsar"),
        ("limbo-crash", "db", "pulsar"),
    ]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["plan"]["ledger_storages"] == ["sorted", "db"]
    assert results["ledger_storages"] == {
        "sorted": {
            "fenced-recovery": "clean",
            "limbo-crash": "not applicable: limbo (data integrity checking) needs DbLedgerStorage",
        },
        "db": {"fenced-recovery": "clean", "limbo-crash": "clean"},
    }
    report = (run_dir / "report.html").read_text()
    assert "<h2>Verdict per ledger storage</h2>" in report
    assert "<th>sorted</th><th>db</th>" in report
    assert "n/a: not applicable: limbo" in report
    data = json.loads((run_dir / "report.json").read_text())
    assert {(c["configuration"], c["ledger_storage"]) for c in data["storages"]} == {
        ("fenced-recovery", "sorted"),
        ("fenced-recovery", "db"),
        ("limbo-crash", "sorted"),
        ("limbo-crash", "db"),
    }


def test_the_java_client_runs_name_and_record_them(tmp_path: Path) -> None:
    home = distribution(tmp_path / "bk", "4.18.0")
    settings = BookieSettings(ledger_storage=LedgerStorage.DB, profile=PULSAR)
    system = java_client_system(home, "4.18.0", bookie_settings=settings)
    assert system.bookie_settings == "DbLedgerStorage, settings profile pulsar"
    assert java_client_system(home, "4.18.0").bookie_settings == (
        "SortedLedgerStorage, settings profile suite"
    )
    from conformance.javaclient.roles import role_named

    target = _target(role_named("recovery"), "4.18.0", None, None, settings)
    assert (target["ledger_storage"], target["settings_profile"]) == ("db", "pulsar")
    assert SUITE.name == _target(role_named("recovery"), "4.18.0", None)["settings_profile"]

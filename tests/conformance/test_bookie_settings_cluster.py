"""Real bookies on DbLedgerStorage with the ``bookkeeper`` and the ``pulsar`` settings profiles:
the limbo-crash scenario (a bookie crashes, loses its disks and restarts) runs clean on each,
and the pulsar profile's 30 s ZooKeeper session is the one the bookies get, without a restart
waiting for the crashed bookie's session to expire."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from adapters.zookeeper.four_letter_words import four_letter_word
from conformance.cli import main
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.local_target import LocalTarget
from conformance.targets.spec import TargetSpec
from conformance.verdict import Verdict

pytestmark = pytest.mark.cluster

LIMBO_CRASH = SCENARIOS["limbo-crash"]
#: The scripted limbo story's release: 4.17.3's restarted bookie recovers a limbo ledger about a
#: second after it registers, 4.18.0's at once, before the story's own recovery (the script
#: then ends undecided; tests/conformance/targets/test_docker_target.py says more).
SCRIPTED_LIMBO_RELEASE = "4.17.3"


def test_limbo_crash_on_db_with_bookkeeper_s_own_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    argv = ["scenario", "limbo-crash", "--target", "local", "--runs-dir", str(runs)]
    argv += ["--bookkeeper", SCRIPTED_LIMBO_RELEASE]
    assert main([*argv, "--ledger-storage", "db", "--settings-profile", "bookkeeper"]) == 0
    out = capsys.readouterr().out
    assert "; bookie settings: DbLedgerStorage, settings profile bookkeeper" in out
    assert "Verdict: clean." in out
    (run_dir,) = runs.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["target"]["ledger_storage"] == "db"
    assert results["target"]["settings_profile"] == "bookkeeper"


def test_limbo_crash_with_pulsar_s_settings_and_its_30_s_sessions() -> None:
    cfg = LIMBO_CRASH.config(protected=True)
    # A crash kills the bookie's JVM here (no in-JVM restart): its ZooKeeper session, and so
    # its registration, would outlive it by the profile's 30 s; the provider deletes it.
    spec = TargetSpec(
        kind="local",
        bookkeeper=SCRIPTED_LIMBO_RELEASE,
        settings_profile="pulsar",
        in_jvm_restarts=False,
    )
    target = spec.build(cfg)
    assert isinstance(target, LocalTarget)
    target.open(cfg)
    try:
        assert target._local is not None
        host, port = target._local.endpoints().zookeeper_connect.split(",")[0].rsplit(":", 1)
        started = time.monotonic()
        outcome = run_scenario(LIMBO_CRASH, target, protected=True)
        took = time.monotonic() - started
        connections = four_letter_word(host, int(port), "cons") or ""
        described = target.describe()
        system = target.system_under_test()
    finally:
        target.close()
    assert outcome.verdict is Verdict.CLEAN, outcome.error or outcome.violations
    assert any(r.action == "BookieRestartsEmpty" for r in outcome.steps)
    # Every bookie (the restarted one too) holds the 30 s session it asked for: ZooKeeper's
    # maxSessionTimeout was raised for it (20 ticks of 250 ms would have cut it to 5 s).
    assert connections.count("to=30000") >= cfg.bookies, connections
    assert took < 25.0, f"the scenario took {took:.1f} s: a restart waited for a session"
    assert described["ledger_storage"] == "db" and described["settings_profile"] == "pulsar"
    assert system.bookie_settings == "DbLedgerStorage, settings profile pulsar"

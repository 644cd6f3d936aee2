"""Live-cluster reproduction: the seed 001 limbo scenario on an "external" cluster whose
bookies run under fault agents, as an operator would set it up; and the guards that refuse
before anything is destroyed."""

from __future__ import annotations

import secrets
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.agent.client import AgentClient
from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.cluster.bookies import BookieConfig
from adapters.cluster.network import free_ports
from adapters.zookeeper.layout import read_instance_id
from adapters.zookeeper.registration import list_bookies
from conformance.cli import main
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.base import UnsupportedConfiguration
from conformance.targets.cluster_target import bookie_settings_for
from conformance.targets.external_target import ExternalTarget
from tests.adapters.agent.conftest import AgentUnderTest
from tests.bookkeeper_fixtures import installed_home

LIMBO = SCENARIOS["limbo-crash"]
SCRIPTED_LIMBO_RELEASE = "4.17.3"


class LiveCluster:
    """ZooKeeper from the local provider; each bookie started and owned by its own fault agent
    subprocess (so only the agents can break them): real BookKeeper from ``bookkeeper_home``
    (its bin/bookkeeper, with the configuration in BOOKIE_CONF), or the reference bookie."""

    def __init__(self, root: Path, *, limbo: bool, bookkeeper_home: Path | None) -> None:
        self.zookeeper = LocalCluster(
            LocalClusterOptions(bookies=0, work_dir=root / "zk", use_bookkeeper_home_env=False)
        )
        self.zookeeper.start()
        self.agents: list[AgentUnderTest] = []
        endpoints = self.zookeeper.endpoints()
        # As the cluster targets configure their own bookies (DbLedgerStorage with limbo).
        settings = bookie_settings_for(LIMBO.config(protected=limbo), {})
        self.instance_id = read_instance_id(self.zookeeper.zookeeper_client, "/ledgers")
        self.bookie_ids: list[str] = []
        count = LIMBO.config(protected=True).bookies
        for n, port in enumerate(free_ports(count)):
            config = BookieConfig(
                f"bookie{n + 1}",
                port,
                root / f"bookie{n + 1}",
                endpoints.zookeeper_connect,
                endpoints.ledgers_root,
                endpoints.metadata_service_uri,
                settings,
            )
            config.directory.mkdir(parents=True)
            config.config_path.write_text(config.render())
            if bookkeeper_home is None:
                command = [
                    sys.executable,
                    "-m",
                    "adapters.refbookie",
                    "--conf",
                    str(config.config_path),
                ]
                env: list[str] = []
            else:
                command = [str(bookkeeper_home / "bin" / "bookkeeper"), "bookie"]
                env = ["--env", f"BOOKIE_CONF={config.config_path}"]
            agent_dir = root / f"agent{n + 1}"
            agent_dir.mkdir()
            self.agents.append(
                AgentUnderTest(
                    agent_dir,
                    [
                        *env,
                        "--listen",
                        "127.0.0.1:0",
                        "--allow-destructive",
                        "--command",
                        shlex.join(command),
                        "--data-dir",
                        str(config.journal_dir),
                        "--data-dir",
                        str(config.ledger_dir),
                        "--zookeeper",
                        endpoints.zookeeper_connect,
                        "--log-file",
                        str(agent_dir / "bookie.log"),
                    ],
                )
            )
            self.bookie_ids.append(config.bookie_id)
        self._wait_registered()

    def _wait_registered(self) -> None:
        # A poll, capped at the 60 s the local provider gives a bookie to start (start_timeout).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if set(self.bookie_ids) <= set(
                list_bookies(self.zookeeper.zookeeper_client, "/ledgers")
            ):
                return
            time.sleep(0.2)
        raise AssertionError("the agents' bookies did not register")

    def agent_clients(self) -> dict[str, AgentClient]:
        return {b: a.client() for b, a in zip(self.bookie_ids, self.agents, strict=True)}

    def connect(self) -> str:
        return self.zookeeper.endpoints().zookeeper_connect

    def stop(self) -> None:
        try:
            for agent in self.agents:
                agent.stop()
        finally:
            self.zookeeper.stop()


@pytest.fixture(params=[True, False], ids=["limbo", "no-limbo"])
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[LiveCluster, bool]]:
    # Real BookKeeper started outside the suite, as an operator runs it: 4.17.3, whose
    # restarted bookie recovers a limbo ledger about a second after it registers; 4.18.0 does
    # at once, before the scripted story's own recovery (tests/conformance/targets/
    # test_docker_target.py says more).
    home = installed_home(SCRIPTED_LIMBO_RELEASE)
    cluster = LiveCluster(tmp_path, limbo=request.param, bookkeeper_home=home)
    try:
        yield cluster, request.param
    finally:
        cluster.stop()


@pytest.mark.cluster
@pytest.mark.slow
def test_limbo_crash_on_a_live_cluster_through_its_agents(live: tuple[LiveCluster, bool]) -> None:
    cluster, protected = live
    target = ExternalTarget(cluster.connect(), agents=cluster.agent_clients(), destroy_data=True)
    target.open(LIMBO.config(protected=protected))
    try:
        outcome = run_scenario(LIMBO, target, protected=protected)
    finally:
        target.close()
    assert outcome.divergences == [], outcome.divergences
    assert outcome.verdict == LIMBO.expected_verdict(protected), (outcome.error, outcome.note)
    crashed = [r for r in outcome.steps if r.action == "BookieRestartsEmpty"]
    assert crashed and all(r.error is None for r in crashed)
    unknown = [
        r for r in outcome.steps if r.observed and r.observed["status"] == "EUNKNOWNLEDGERSTATE"
    ]
    assert len(unknown) == (3 if protected else 0)  # the fencing read and both recovery reads
    assert sum(a.client().status().starts for a in cluster.agents) == len(cluster.agents) + 1


@pytest.mark.cluster
def test_without_the_flag_nothing_is_written_or_broken(tmp_path: Path) -> None:
    cluster = LiveCluster(tmp_path, limbo=True, bookkeeper_home=None)
    try:
        target = ExternalTarget(cluster.connect(), agents=cluster.agent_clients())
        with pytest.raises(UnsupportedConfiguration, match="i-understand-this-destroys-data"):
            target.open(LIMBO.config(protected=True))
        target.close()
        assert not cluster.zookeeper.zookeeper_client.exists("/ledgers/00")  # no ledger
        assert all(a.client().status().starts == 1 for a in cluster.agents)
    finally:
        cluster.stop()


@pytest.mark.cluster
def test_an_agent_of_another_cluster_refuses_the_crash(tmp_path: Path) -> None:
    cluster = LiveCluster(tmp_path, limbo=True, bookkeeper_home=None)
    try:
        # The agents read this cluster's INSTANCEID; ours is made to differ.
        target = ExternalTarget(
            cluster.connect(), agents=cluster.agent_clients(), destroy_data=True
        )
        target.open(LIMBO.config(protected=True))
        try:
            assert target._external is not None
            target._external.instance_id = secrets.token_hex(16)
            outcome = run_scenario(LIMBO, target, protected=True)
        finally:
            target.close()
        assert outcome.verdict == "undecided"
        assert outcome.error is not None and "INSTANCEID" in outcome.error.upper()
        assert all(a.client().status().starts == 1 for a in cluster.agents)
    finally:
        cluster.stop()


@pytest.mark.cluster
def test_the_command_refuses_crashes_on_a_live_cluster_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = LiveCluster(tmp_path, limbo=True, bookkeeper_home=None)
    try:
        token = tmp_path / "token"
        token.write_text(secrets.token_urlsafe(24))
        agents = [
            f"{bookie}=127.0.0.1:{agent.port}"
            for bookie, agent in zip(cluster.bookie_ids, cluster.agents, strict=True)
        ]
        argv = ["scenario", "limbo-crash", "--target", "external", "--zk", cluster.connect()]
        for agent in agents:
            argv += ["--agent", agent]
        argv += ["--agent-token-file", str(token), "--runs-dir", str(tmp_path / "runs")]
        assert main(argv) == 2
        assert "i-understand-this-destroys-data" in capsys.readouterr().err
        # With the flag, a token the agents do not know is refused before any step.
        assert main([*argv, "--i-understand-this-destroys-data"]) == 2
        assert "wrong token" in capsys.readouterr().err
        assert all(a.client().status().starts == 1 for a in cluster.agents)
    finally:
        cluster.stop()

"""The ``docker`` target: the seed 001 limbo scenario on containerized ZooKeeper and reference
bookies, with both expected outcomes, and nothing left behind."""

from __future__ import annotations

import pytest

from adapters.cluster.container_engine import ContainerEngine
from adapters.cluster.containers import CLUSTER_LABEL, labelled_resources
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.docker_target import DockerTarget

LIMBO = SCENARIOS["limbo-crash"]


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("protected", [True, False], ids=["limbo", "no-limbo"])
def test_limbo_crash_on_containers(container_engine: ContainerEngine, protected: bool) -> None:
    target = DockerTarget()
    target.open(LIMBO.config(protected=protected))
    try:
        outcome = run_scenario(LIMBO, target, protected=protected)
        assert target._containers is not None
        cluster_id = target._containers.cluster_id
    finally:
        target.close()
    assert outcome.divergences == [], outcome.divergences
    assert outcome.verdict == LIMBO.expected_verdict(protected), outcome.violations
    assert any(r.action == "BookieRestartsEmpty" for r in outcome.steps)
    client = container_engine.client()
    try:
        left = labelled_resources(client, {CLUSTER_LABEL: cluster_id})
    finally:
        client.close()
    assert not any(left.values()), left

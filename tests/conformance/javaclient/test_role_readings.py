"""Each role's guidance and judge read the spec alike (issue 48).

A role's guidance (the model's explorer proposing its plans) and its judge each build a model
configuration; both must be the role's reading (``Role.reading``, one of
:mod:`model.bookkeeper.readings`), or the plans are proposed from another model than the one
that judges them. The configurations are caught where each explorer starts and where each
judge ends, so a switch set by hand on either side fails here.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.javaclient import guidance, writer_guidance
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.role import Role
from conformance.javaclient.roles import role_of_plan
from conformance.javaclient.writer_role import WriterRole
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import FAILOVER, JAVA_RECOVERY, JAVA_WRITER, reading_of
from model.bookkeeper.records import State
from tests.conformance.javaclient.recorded import defect1_record

RECORDED = Path(__file__).parent / "recorded_runs"


class _Started(Exception):
    """An explorer started: its configuration is caught, the exploration not needed."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__(cfg.describe())
        self.cfg = cfg


def _first_run(name: str) -> tuple[Role[Any, Any], Any]:
    with gzip.open(RECORDED / name, "rt") as f:
        row = json.loads(f.readline())
    role = role_of_plan(row["plan"], row.get("role_settings", {}))
    return role, role.record_from_json(row["record"])


def _recovery() -> tuple[Role[Any, Any], Any]:
    return RecoveryRole(), defect1_record(reads_fence=True)


def _writer() -> tuple[Role[Any, Any], Any]:
    return _first_run("bookkeeper-4.17.3-writer-runs.jsonl.gz")


def _failover() -> tuple[Role[Any, Any], Any]:
    return _first_run("bookkeeper-4.17.3-failover-runs.jsonl.gz")


ROLES = {"recovery": _recovery, "writer": _writer, "both": _failover}


def _guidance_config(role: Role[Any, Any], monkeypatch: pytest.MonkeyPatch) -> ModelConfig:
    def started(cfg: ModelConfig) -> State:
        raise _Started(cfg)

    monkeypatch.setattr(guidance, "init_state", started)
    monkeypatch.setattr(writer_guidance, "init_state", started)
    with pytest.raises(_Started) as caught:
        role.guided_plans(seed=0, budget_s=60.0)
    return caught.value.cfg


@pytest.mark.parametrize("name", sorted(ROLES))
def test_a_role_s_guidance_and_judge_take_the_role_s_reading(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    role, record = ROLES[name]()
    assert role.name == name
    judged = reading_of(role.judge(record).cfg)
    proposed = reading_of(_guidance_config(role, monkeypatch))
    assert judged is role.reading, f"the judge reads the spec as {judged.describe()}"
    assert proposed is role.reading, f"the guidance reads the spec as {proposed.describe()}"


def test_each_role_has_its_own_reading() -> None:
    assert RecoveryRole.reading is JAVA_RECOVERY
    assert WriterRole.reading is JAVA_WRITER
    assert FailoverRole.reading is FAILOVER

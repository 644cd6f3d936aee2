"""The ``model`` target: the model's own bookie semantics, in process. Fast, for searching;
by construction it never diverges from the model."""

from __future__ import annotations

from adapters.installations.system import MODEL_SYSTEM, SystemUnderTest
from conformance.observations import Observation, predicted
from conformance.targets.base import TargetSnapshot
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import Message, State


class ModelTarget:
    name = "model"

    def open(self, cfg: ModelConfig) -> None:
        return None

    def new_ledger(self) -> None:
        return None

    def deliver(self, request: Message, predicted_reply: Message) -> Observation:
        return predicted(predicted_reply)

    def metadata(self, label: Label, before: State, after: State) -> Observation | None:
        return None

    def crash(self, bookie: int, state_after: State) -> None:
        return None

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot | None:
        return None

    def describe(self) -> dict[str, str]:
        return {"target": "model"}

    def system_under_test(self) -> SystemUnderTest:
        return MODEL_SYSTEM

    def close(self) -> None:
        return None

"""The roles the real Java client plays, by name, and the model's plans for them in a process
of their own.

``python -m conformance.javaclient.roles --role writer --shape 3/2/2 --seed 0 --budget 10``
prints the role's model-guided plans as JSON: a search starts it while its cluster and JVM
start (in a thread the explorer would hold this interpreter's lock for most of its budget, and
on a loaded machine the ZooKeeper client's heartbeats then came too late: sessions expired).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.plans import PlanError
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.role import Role
from conformance.javaclient.writer_plans import DEFAULT_SHAPES, WriterShape
from conformance.javaclient.writer_role import FaultSet, WriterRole

#: The roles a run can ask for, by name.
ROLE_NAMES: tuple[str, ...] = (RecoveryRole.name, WriterRole.name, FailoverRole.name)
#: What a role is when the command line does not say.
DEFAULT_ROLE = RecoveryRole.name


def role_named(
    name: str, shape: WriterShape | None = None, faults: FaultSet | None = None
) -> Role[Any, Any]:
    """The role of that name (``shape``: the writer's ledger; default the first of
    ``DEFAULT_SHAPES``); :class:`PlanError` for a name that is none, or a shape given to a
    role that has none."""
    if name == RecoveryRole.name:
        if faults is not None and faults is not FaultSet.REQUESTS:
            raise PlanError(
                "the recovering role's search draws requests' fates only (--java-faults requests)"
            )
        if shape is not None:
            raise PlanError(
                "the recovering role runs E=WQ=3 AQ=2 (Defect 1's ledger); it takes no shape"
            )
        return RecoveryRole()
    if name == WriterRole.name:
        return WriterRole(shape or DEFAULT_SHAPES[0], faults=faults or FaultSet.EXTENDED)
    if name == FailoverRole.name:
        return FailoverRole(shape or DEFAULT_SHAPES[0], faults=faults or FaultSet.EXTENDED)
    raise PlanError(f"no role {name!r}: the roles are {', '.join(ROLE_NAMES)}")


def role_of_plan(data: Any, settings: Mapping[str, Any] | None = None) -> Role[Any, Any]:
    """The role a recorded plan is for (plans before roles were recorded are recovery plans),
    with the role's recorded ``settings`` (a run directory's ``role_settings``: the writer's
    add timeout) where given."""
    if not isinstance(data, dict):
        raise PlanError(f"not a plan: {data!r}")
    name = data.get("role", RecoveryRole.name)
    shape = WriterShape.parse(str(data["shape"])) if "shape" in data else None
    role = role_named(str(name), shape)
    recorded = settings or {}
    if isinstance(role, WriterRole):
        entry_bytes = recorded.get("entry_bytes")
        return type(role)(
            role.shape,
            add_entry_timeout_s=int(recorded.get("add_entry_timeout_s", role.add_entry_timeout_s)),
            faults=FaultSet(recorded.get("faults", role.faults.value)),
            client_properties={
                str(key): str(value)
                for key, value in dict(recorded.get("client_properties", {})).items()
            },
            entry_bytes=None if entry_bytes is None else int(entry_bytes),
        )
    return role


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a role's model-guided plans, as JSON")
    parser.add_argument("--role", choices=ROLE_NAMES, default=DEFAULT_ROLE)
    parser.add_argument("--shape", type=WriterShape.parse, default=None, help="E/WQ/AQ")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=None, help="seconds")
    parser.add_argument(
        "--settings",
        default=None,
        help="the role's settings as JSON (Role.settings: its faults...)",
    )
    args = parser.parse_args(argv)
    if args.settings is not None:
        settings = json.loads(args.settings)
        role = role_of_plan({**settings, "role": args.role}, settings)
    else:
        role = role_named(args.role, args.shape)
    budget = role.guidance_budget_s if args.budget is None else args.budget
    plans = role.guided_plans(args.seed, budget)
    json.dump([plan.to_json() for plan in plans], sys.stdout)
    return 0


__all__ = ["DEFAULT_ROLE", "ROLE_NAMES", "role_named", "role_of_plan"]


if __name__ == "__main__":
    raise SystemExit(main())

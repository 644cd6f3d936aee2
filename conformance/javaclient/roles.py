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
from typing import Any, Protocol

from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.plans import PlanError
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.role import Role
from conformance.javaclient.writer_plans import WriterShape
from conformance.javaclient.writer_role import FaultSet, WriterRole


class RoleClass(Protocol):
    """A role's class, before a role is built: what the commands and the version matrix ask
    of it. Classmethods of the role classes rather than :class:`Role`'s own: the role is built
    from them, and what a run asks of a built role is :class:`Role`'s."""

    def from_settings(self, settings: Mapping[str, Any]) -> Role[Any, Any]:
        """The role the settings describe (:meth:`Role.settings`' keys, a command's options
        too); :class:`PlanError` for settings the role refuses."""
        ...

    def matrix_columns(self, shapes: Sequence[WriterShape]) -> dict[str, dict[str, Any]]:
        """The role's columns in the version matrix, given the writers' ledger ``shapes``: a
        configuration's name -> the settings that build the role for it."""
        ...


#: The roles a run can ask for, by name (the name each role's class gives itself).
ROLE_CLASSES: dict[str, RoleClass] = {
    RecoveryRole.name: RecoveryRole,
    WriterRole.name: WriterRole,
    FailoverRole.name: FailoverRole,
}
ROLE_NAMES: tuple[str, ...] = tuple(ROLE_CLASSES)
#: What a role is when the command line does not say, and what a plan recorded before roles
#: were recorded is for.
DEFAULT_ROLE = RecoveryRole.name


def role_class(name: str) -> RoleClass:
    """The class of the role ``name``; :class:`PlanError` for a name that is none."""
    try:
        return ROLE_CLASSES[name]
    except KeyError:
        raise PlanError(f"no role {name!r}: the roles are {', '.join(ROLE_NAMES)}") from None


def role_from_settings(settings: Mapping[str, Any]) -> Role[Any, Any]:
    """The role ``settings["role"]`` names (default :data:`DEFAULT_ROLE`), built by its class
    from the rest; :class:`PlanError` for a role that is none or settings it refuses."""
    return role_class(str(settings.get("role", DEFAULT_ROLE))).from_settings(settings)


def role_named(
    name: str, shape: WriterShape | None = None, faults: FaultSet | None = None
) -> Role[Any, Any]:
    """The role of that name with its own defaults, or the writer's ledger ``shape`` and
    ``faults`` (each refused by a role that cannot take it: :class:`PlanError`)."""
    settings: dict[str, Any] = {"role": name}
    if shape is not None:
        settings["shape"] = shape.key()
    if faults is not None:
        settings["faults"] = faults.value
    return role_from_settings(settings)


def role_of_plan(data: Any, settings: Mapping[str, Any] | None = None) -> Role[Any, Any]:
    """The role a recorded plan is for (plans before roles were recorded are
    :data:`DEFAULT_ROLE`'s), with the role's recorded ``settings`` (a run directory's
    ``role_settings``: the writer's add timeout...) where given; the plan's own role and shape
    win over them."""
    if not isinstance(data, dict):
        raise PlanError(f"not a plan: {data!r}")
    planned = {key: data[key] for key in ("shape",) if key in data}
    return role_from_settings(
        {**(settings or {}), "role": data.get("role", DEFAULT_ROLE), **planned}
    )


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
    settings = {} if args.settings is None else json.loads(args.settings)
    if args.shape is not None:
        settings["shape"] = args.shape.key()
    role = role_from_settings({**settings, "role": args.role})
    budget = role.guidance_budget_s if args.budget is None else args.budget
    plans = role.guided_plans(args.seed, budget)
    json.dump([plan.to_json() for plan in plans], sys.stdout)
    return 0


__all__ = [
    "DEFAULT_ROLE",
    "ROLE_CLASSES",
    "ROLE_NAMES",
    "RoleClass",
    "role_class",
    "role_from_settings",
    "role_named",
    "role_of_plan",
]


if __name__ == "__main__":
    raise SystemExit(main())

"""The roles by name: each role's class builds it from settings (a command's, a recorded
run's), refuses what it cannot run and names its columns of the version matrix; the modules
around the roles ask the roles and test no role's name or type themselves."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from adapters.javaclient import BookKeeperVersion
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.plans import PlanError
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.roles import (
    DEFAULT_ROLE,
    ROLE_CLASSES,
    ROLE_NAMES,
    role_class,
    role_from_settings,
    role_named,
    role_of_plan,
)
from conformance.javaclient.writer_plans import DEFAULT_SHAPES, WriterRunPlan, WriterShape
from conformance.javaclient.writer_role import FaultSet, WriterRole

ROOT = Path(__file__).resolve().parents[3]
#: The modules that use the roles without being one: they ask a role, never test which it is.
AROUND_THE_ROLES = (
    "conformance/javaclient/roles.py",
    "conformance/commands/java_client_run.py",
    "conformance/distributed/java_matrix.py",
)
ROLE_TYPES = {"RecoveryRole", "WriterRole", "FailoverRole"}


def test_every_role_is_registered_by_its_own_name() -> None:
    assert ROLE_NAMES == ("recovery", "writer", "both")
    for name in ROLE_NAMES:
        assert role_from_settings({"role": name}).name == name
    assert DEFAULT_ROLE == "recovery"
    assert isinstance(role_from_settings({}), RecoveryRole)
    with pytest.raises(PlanError, match="no role 'reader': the roles are recovery, writer, both"):
        role_class("reader")


@pytest.mark.parametrize("name", ROLE_NAMES)
def test_each_role_builds_again_from_its_own_settings(name: str) -> None:
    role = role_from_settings({"role": name})
    again = ROLE_CLASSES[name].from_settings(role.settings())
    assert type(again) is type(role) and again.settings() == role.settings()


@pytest.mark.parametrize("cls", [WriterRole, FailoverRole])
def test_a_writer_builds_from_every_setting_it_records(cls: type[WriterRole]) -> None:
    settings: dict[str, Any] = {
        "role": cls.name,
        "shape": "4/2/2+2",
        "add_entry_timeout_s": 3,
        "faults": "requests",
        "client_properties": {"throttle": 5},
        "entry_bytes": 1024,
    }
    role = cls.from_settings(settings)
    assert type(role) is cls
    assert role.shape == WriterShape(4, 2, 2, spares=2)
    assert (role.add_entry_timeout_s, role.faults, role.entry_bytes) == (3, FaultSet.REQUESTS, 1024)
    assert role.client_properties == {"throttle": "5"}
    assert role.settings() == {**settings, "client_properties": {"throttle": "5"}}
    # What a command line says besides: the model's bookies and clients are not a writer's.
    plain = cls.from_settings({"bookies": 7, "clients": 9})
    assert (plain.shape, plain.faults) == (DEFAULT_SHAPES[0], FaultSet.EXTENDED)
    with pytest.raises(PlanError, match="no fault set 'all'"):
        cls.from_settings({"faults": "all"})
    with pytest.raises(PlanError, match="E >= WQ >= AQ"):
        cls.from_settings({"shape": "2/3/1"})


def test_the_recovering_role_refuses_what_it_cannot_run() -> None:
    own = {"shape": "3/3/2", "bookies": 3, "clients": 2, "faults": "requests"}
    assert isinstance(RecoveryRole.from_settings(own), RecoveryRole)
    for other in ({"shape": "3/2/2"}, {"bookies": 4}, {"clients": 3}):
        with pytest.raises(PlanError, match="runs E=WQ=3, AQ=2 on 3 bookies with 2 clients"):
            RecoveryRole.from_settings({**own, **other})
    with pytest.raises(PlanError, match="requests only"):
        RecoveryRole.from_settings({**own, "faults": "extended"})
    with pytest.raises(PlanError, match="runs E=WQ=3"):
        role_named("recovery", WriterShape(3, 2, 2))


def test_each_role_names_its_matrix_columns() -> None:
    shapes = [WriterShape(3, 2, 2), WriterShape(4, 2, 2, spares=2)]
    assert RecoveryRole.matrix_columns(shapes) == {"E3-WQ3-AQ2": {"role": "recovery"}}
    for cls in (WriterRole, FailoverRole):
        columns = cls.matrix_columns(shapes)
        # The spares are the column's too: a cluster of 4 + 2 bookies is not one of 4 + 1.
        assert columns == {
            "E3-WQ2-AQ2": {"role": cls.name, "shape": "3/2/2"},
            "E4-WQ2-AQ2+2": {"role": cls.name, "shape": "4/2/2+2"},
        }
        built = [role_from_settings(settings) for settings in columns.values()]
        assert [type(role) for role in built] == [cls, cls]
        assert [role.shape for role in built] == shapes  # type: ignore[attr-defined]
        with pytest.raises(PlanError, match=f"--role {cls.name} needs at least one ledger shape"):
            cls.matrix_columns([])


def test_each_role_says_which_releases_cannot_play_it() -> None:
    old, new = BookKeeperVersion.parse("4.11.1"), BookKeeperVersion.parse("4.17.3")
    assert role_named("recovery").refusal(old) is None
    for name in ("writer", "both"):
        refusal = role_named(name).refusal(old)
        assert refusal is not None and "(BookKeeper >= 4.12.0)" in refusal
        assert role_named(name).refusal(new) is None


def test_a_recorded_plan_names_its_role_and_the_recorded_settings_the_rest() -> None:
    plan = WriterRunPlan(WriterShape(2, 1, 1), 2)
    role = role_of_plan(plan.to_json(), {"role": "writer", "shape": "3/2/2", "faults": "requests"})
    assert isinstance(role, WriterRole) and role.shape == WriterShape(2, 1, 1)
    assert role.faults is FaultSet.REQUESTS
    with pytest.raises(PlanError, match="not a plan"):
        role_of_plan(["writer"])


def _role_tests(path: Path) -> list[str]:
    """Where ``path`` tests a role's name (a comparison with one, or a role name as a dict key
    or match case) or a role's type (``isinstance`` with a role class)."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            named = [o.value for o in operands if isinstance(o, ast.Constant)]
            found += [f"{path.name}:{node.lineno}: == {n!r}" for n in named if n in ROLE_NAMES]
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant):
            if node.value.value in ROLE_NAMES:
                found.append(f"{path.name}:{node.lineno}: case {node.value.value!r}")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
            "isinstance",
            "issubclass",
        ):
            types = ast.walk(node.args[1]) if len(node.args) > 1 else ()
            found += [
                f"{path.name}:{node.lineno}: isinstance {t.id}"
                for t in types
                if isinstance(t, ast.Name) and t.id in ROLE_TYPES
            ]
        elif isinstance(node, ast.Constant) and node.value in ROLE_NAMES:
            found.append(f"{path.name}:{node.lineno}: the name {node.value!r}")
    return found


def test_no_role_name_or_type_is_tested_outside_the_roles() -> None:
    found = [hit for module in AROUND_THE_ROLES for hit in _role_tests(ROOT / module)]
    assert found == []


def test_the_check_sees_a_role_tested_by_name_or_by_type(tmp_path: Path) -> None:
    module = tmp_path / "around.py"
    module.write_text(
        "def f(role, name):\n"
        "    if name == 'writer':\n"
        "        return 1\n"
        "    return isinstance(role, (WriterRole, int))\n"
    )
    assert _role_tests(module) == [
        "around.py:2: == 'writer'",
        "around.py:4: isinstance WriterRole",
        "around.py:2: the name 'writer'",
    ]

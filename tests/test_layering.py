"""The import layering, read from the source (``tools/layering.py``): ``model`` imports nothing
of ours, ``adapters`` never imports ``conformance``, and the sub-packages of each import each
other without cycles. Imports inside functions and under ``TYPE_CHECKING`` count: a lazy import
only hides a dependency, and a cycle through annotations is still a cycle."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.layering import check

ROOT = Path(__file__).resolve().parent.parent

#: Cycles not broken yet: the children of one package that reach each other, and what breaks
#: the cycle. Any other cycle fails the test, and so does an entry here that no longer occurs
#: (delete it then): the list only shrinks.
KNOWN_CYCLES: dict[frozenset[str], str] = {}


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_no_layer_imports_a_layer_above_it() -> None:
    report = check(ROOT)
    assert not report.upward, "\n".join(found.describe(ROOT) for found in report.upward)


def test_sub_packages_import_each_other_without_new_cycles() -> None:
    cycles = {frozenset(cycle.component): cycle for cycle in check(ROOT).cycles}
    new = [cycle.describe(ROOT) for members, cycle in cycles.items() if members not in KNOWN_CYCLES]
    assert not new, "import cycles:\n" + "\n".join(new)
    gone = [sorted(members) for members in KNOWN_CYCLES if members not in cycles]
    assert not gone, f"no longer cycles, delete them from KNOWN_CYCLES: {gone}"


def test_the_checker_reports_an_upward_import_and_cycles(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "model/__init__.py": "",
            "model/core.py": "import os\n\nfrom adapters.a import thing\n",
            "adapters/__init__.py": "",
            "adapters/a/__init__.py": "from adapters.b import helper\n\nthing = 1\n",
            # A lazy import inside a function closes the cycle a -> b -> a.
            "adapters/b/__init__.py": """\
                def helper() -> int:
                    from adapters.a import thing

                    return thing
                """,
            # A relative import under TYPE_CHECKING closes the cycle a -> c -> a.
            "adapters/a/uses_c.py": "from adapters import c\n",
            "adapters/c/__init__.py": "",
            "adapters/c/types.py": """\
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from ..a import thing
                """,
            # Downward only: no cycle.
            "adapters/d/__init__.py": "import adapters.a\n",
            "conformance/__init__.py": "import model.core\nimport adapters.d\n",
        },
    )
    report = check(tmp_path)

    assert [found.site.where(tmp_path) for found in report.upward] == ["model/core.py:3"]
    assert "model.core (model) imports adapters.a (adapters)" in report.upward[0].describe(tmp_path)
    [cycle] = report.cycles
    assert cycle.component == ("adapters.a", "adapters.b", "adapters.c")
    assert set(cycle.paths) == {
        ("adapters.a", "adapters.b", "adapters.a"),
        ("adapters.a", "adapters.c", "adapters.a"),
    }
    text = cycle.describe(tmp_path)
    assert "adapters/b/__init__.py:2: adapters.b imports adapters.a" in text
    assert "adapters/c/types.py:4: adapters.c.types imports adapters.a" in text
    assert "adapters/a/uses_c.py:1: adapters.a.uses_c imports adapters.c" in text
    assert "adapters.d" not in text


def test_an_acyclic_downward_tree_passes(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "model/__init__.py": "",
            "model/x/__init__.py": "",
            "model/y.py": "from model.x import z\n",
            "adapters/__init__.py": "from model import y\n",
            "adapters/low/__init__.py": "",
            "adapters/high/__init__.py": "from ..low import something\n",
            "conformance/__init__.py": "from adapters.high import anything\n",
        },
    )
    report = check(tmp_path)
    assert not report.upward and not report.cycles
    assert report.describe(tmp_path) == "no upward imports, no cycles"


def test_a_root_without_the_packages_is_an_error_not_a_pass(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="model"):
        check(tmp_path)

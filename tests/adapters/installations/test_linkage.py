"""The link check of a release's own classes (:mod:`adapters.installations.linkage`), on jars
compiled here: it starts a JVM, so it is a cluster test (real processes)."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from adapters.installations import linkage
from adapters.installations.java import find_javac

pytestmark = pytest.mark.cluster


def _jar(classes: Path, names: list[str], jar: Path) -> Path:
    with zipfile.ZipFile(jar, "w") as archive:
        for name in names:
            archive.write(classes / name, name)
    return jar


@pytest.fixture
def jars(tmp_path: Path) -> tuple[Path, Path]:
    """``own.jar`` (``own.Uses``, whose method takes a ``dep.Needed``) and ``dep.jar``."""
    src = tmp_path / "src"
    (src / "own").mkdir(parents=True)
    (src / "dep").mkdir()
    (src / "dep" / "Needed.java").write_text("package dep; public class Needed {}\n")
    (src / "own" / "Uses.java").write_text(
        "package own; public class Uses { public void take(dep.Needed n) {} }\n"
    )
    out = tmp_path / "classes"
    subprocess.run(
        [find_javac(), "-d", str(out), str(src / "dep/Needed.java"), str(src / "own/Uses.java")],
        check=True,
        timeout=120,
    )
    own = _jar(out, ["own/Uses.class"], tmp_path / "own.jar")
    dep = _jar(out, ["dep/Needed.class"], tmp_path / "dep.jar")
    return own, dep


def test_classes_that_link_against_the_class_path_are_complete(
    jars: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "home"))
    own, dep = jars
    linked = linkage.check([own], [own, dep])
    assert linked.complete and linked.classes == 1


def test_a_type_no_jar_holds_is_named_with_the_classes_that_need_it(
    jars: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "home"))
    own, _dep = jars
    linked = linkage.check([own], [own])
    assert not linked.complete
    assert linked.missing == {"dep.Needed": ("own.Uses",)}
    assert linked.describe() == "dep.Needed (needed by 1 class, e.g. own.Uses)"


def test_the_probe_s_output_is_read_back() -> None:
    text = "classes 3\nunlinked a.B c.D\nunlinked a.E c.D\n"
    assert linkage.parse(text) == linkage.Linkage(3, {"c.D": ("a.B", "a.E")})
    with pytest.raises(linkage.LinkCheckError):
        linkage.parse("Exception in thread main")

"""Java classes compiled once per session with javac: the lifecycle probe and a stand-in for
the BookKeeper client API (same class and method names, in-memory ledgers), so the JVM
handling and the adapter's calls are tested without a BookKeeper distribution."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from adapters.installations.jacoco import JacocoInstallation

JAVA_SOURCES = Path(__file__).parent / "java"


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    javac = shutil.which("javac")
    if javac is None:
        pytest.fail("javac is not on PATH: install a JDK 17 (openjdk-17-jdk-headless)")
    out = tmp_path_factory.mktemp("java-classes")
    sources = sorted(str(path) for path in JAVA_SOURCES.rglob("*.java"))
    compiled = subprocess.run(
        [javac, "-d", str(out), *sources], capture_output=True, text=True, timeout=120
    )
    assert compiled.returncode == 0, compiled.stderr
    return out


@pytest.fixture
def fake_jacoco(tmp_path: Path) -> JacocoInstallation:
    """A JaCoCo installation whose jars are placeholders (nothing here runs them)."""
    install = JacocoInstallation("0.8.15", tmp_path / "jacoco", "t")
    install.home.mkdir()
    install.agent_jar.write_bytes(b"PK")
    install.cli_jar.write_bytes(b"PK")
    return install

"""Finding the JDK's tools: ``JAVA_HOME`` first, then ``PATH``; what a ``JAVA_HOME`` without the
tool means differs between ``java`` (an error) and ``javac`` (look on ``PATH``: a JRE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.installations.errors import JavaNotFound
from adapters.installations.java import find_java, find_javac, find_jdk_tool


def tool(directory: Path, name: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_java_home_comes_first(tmp_path: Path) -> None:
    java = tool(tmp_path / "jdk" / "bin", "java")
    tool(tmp_path / "path", "java")
    environ = {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": str(tmp_path / "path")}
    assert find_java(environ) == str(java)


def test_without_java_home_java_comes_from_path(tmp_path: Path) -> None:
    java = tool(tmp_path / "path", "java")
    assert find_java({"PATH": str(tmp_path / "path")}) == str(java)
    assert find_java({"JAVA_HOME": "", "PATH": str(tmp_path / "path")}) == str(java)


def test_a_java_home_without_java_is_an_error_even_with_java_on_path(tmp_path: Path) -> None:
    tool(tmp_path / "path", "java")
    (tmp_path / "jre" / "bin").mkdir(parents=True)
    environ = {"JAVA_HOME": str(tmp_path / "jre"), "PATH": str(tmp_path / "path")}
    with pytest.raises(JavaNotFound, match=r"has no executable bin/java; point JAVA_HOME"):
        find_java(environ)


def test_no_java_anywhere_says_what_to_install(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFound) as raised:
        find_java({"PATH": str(tmp_path)})
    assert str(raised.value) == (
        "no java on PATH and JAVA_HOME is unset; install a JDK 17 "
        "(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
    )


def test_a_java_home_without_javac_falls_back_to_path(tmp_path: Path) -> None:
    tool(tmp_path / "jre" / "bin", "java")
    javac = tool(tmp_path / "path", "javac")
    environ = {"JAVA_HOME": str(tmp_path / "jre"), "PATH": str(tmp_path / "path")}
    assert find_javac(environ) == str(javac)


def test_javac_comes_from_java_home_first(tmp_path: Path) -> None:
    javac = tool(tmp_path / "jdk" / "bin", "javac")
    tool(tmp_path / "path", "javac")
    environ = {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": str(tmp_path / "path")}
    assert find_javac(environ) == str(javac)


def test_no_javac_anywhere_names_the_jdk_package_and_the_java_home(tmp_path: Path) -> None:
    (tmp_path / "jre" / "bin").mkdir(parents=True)
    with pytest.raises(JavaNotFound, match=r"JAVA_HOME=.*jre has no bin/javac.*jdk-headless"):
        find_javac({"JAVA_HOME": str(tmp_path / "jre"), "PATH": str(tmp_path)})


def test_any_jdk_tool_is_found_the_same_way(tmp_path: Path) -> None:
    jar = tool(tmp_path / "jdk" / "bin", "jar")
    assert find_jdk_tool("jar", {"JAVA_HOME": str(tmp_path / "jdk"), "PATH": ""}) == str(jar)

"""JaCoCo's command-line interface: the XML report of some execution data on some class files.

Lines and branches need the class files' analysis, which only JaCoCo does: :func:`run_report`
runs ``java -jar jacococli.jar report`` (bounded) and returns its XML; :func:`extract_classes`
copies the class files the report is about out of a jar (the CLI analyses those alone). What the
report means is the caller's (``conformance/javaclient/coverage.py``).
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path

from adapters.installations.jacoco import JacocoInstallation
from adapters.installations.java import find_java
from adapters.javaclient.errors import JacocoError

#: The CLI analyses a few dozen classes: about 0.3 s; the bound is for a machine under load.
DEFAULT_CLI_TIMEOUT = 120.0


def extract_classes(jar: Path, dest: Path, which: Callable[[str], bool]) -> Path:
    """The class files ``which`` selects, copied from ``jar`` under ``dest`` (the CLI analyses
    these alone: about 0.3 s, where the whole server jar takes 4 s). Returns ``dest``."""
    try:
        with zipfile.ZipFile(jar) as archive:
            for entry in archive.namelist():
                if entry.endswith(".class") and which(entry.removesuffix(".class")):
                    archive.extract(entry, dest)
    except (OSError, zipfile.BadZipFile) as exc:
        raise JacocoError(f"cannot read the class files of {jar}: {exc}") from exc
    dest.mkdir(parents=True, exist_ok=True)
    return dest


_MISMATCH = re.compile(r"Execution data for class (\S+) does not match")


def run_report(
    exec_path: Path,
    classfiles: Path,
    xml_path: Path,
    jacoco: JacocoInstallation,
    *,
    java: str | None = None,
    timeout: float = DEFAULT_CLI_TIMEOUT,
) -> str:
    """``java -jar <cli> report <exec> --classfiles <classfiles> --xml <xml_path>`` (bounded);
    the XML's text. :class:`JacocoError` if it fails, times out, or finds the class files are
    not those the JVM ran (JaCoCo would count those classes as never run)."""
    command = [
        java or find_java(),
        "-jar", str(jacoco.cli_jar), "report", str(exec_path),
        "--classfiles", str(classfiles), "--xml", str(xml_path), "--name", "bkconform",
    ]  # fmt: skip
    try:
        ran = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise JacocoError(f"JaCoCo's CLI did not finish within {timeout:.0f}s (killed)") from exc
    except OSError as exc:
        raise JacocoError(f"JaCoCo's CLI could not start: {exc}") from exc
    said = ran.stdout + ran.stderr
    if ran.returncode != 0:
        tail = "\n".join(said.strip().splitlines()[-10:])
        raise JacocoError(f"JaCoCo's CLI failed (exit {ran.returncode}):\n{tail}")
    mismatched = _MISMATCH.findall(said)
    if mismatched:
        raise JacocoError(
            f"the class files {classfiles} are not the ones the client's JVM ran "
            f"({', '.join(sorted(mismatched)[:3])} differ): use the same release's "
            "bookkeeper-server jar"
        )
    try:
        return xml_path.read_text()
    except OSError as exc:
        raise JacocoError(f"JaCoCo's CLI wrote no XML report: {exc}") from exc


__all__ = ["DEFAULT_CLI_TIMEOUT", "extract_classes", "run_report"]

"""JaCoCo's CLI: the class files a report is about extracted from a jar, and the CLI's report
and failures, with a fake ``java`` (no JVM)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from adapters.installations.jacoco import JacocoInstallation
from adapters.javaclient.errors import JacocoError
from adapters.javaclient.jacoco_cli import extract_classes, run_report

LH = "org/apache/bookkeeper/client/LedgerHandle"
PAO = "org/apache/bookkeeper/client/PendingAddOp"

REPORT = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<report name="bkconform"><sessioninfo id="vm-1" start="1" dump="2"/></report>"""


def test_the_selected_class_files_are_extracted(tmp_path: Path) -> None:
    jar = tmp_path / "server.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for name in [f"{LH}.class", f"{LH}$1.class", f"{LH}Adv.class", f"{PAO}.class", "x.txt"]:
            archive.writestr(name, b"\xca\xfe")
    out = extract_classes(jar, tmp_path / "classes", lambda name: not name.endswith("Adv"))
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*.class"))
    assert found == [f"{LH}$1.class", f"{LH}.class", f"{PAO}.class"]
    with pytest.raises(JacocoError, match="cannot read the class files"):
        extract_classes(tmp_path / "x.txt", tmp_path / "none", lambda name: True)


FAKE_JAVA = """\
#!{python}
import os, sys, time
from pathlib import Path
args = sys.argv[1:]
mode = os.environ["FAKE_JAVA_MODE"]
if mode == "hang":
    time.sleep(60)
if mode == "fail":
    print("Exception in thread main java.io.FileNotFoundException: x.exec", file=sys.stderr)
    sys.exit(1)
if mode == "mismatch":
    print("[WARN] Execution data for class", {lh!r}, "does not match.")
if mode != "no-xml":
    Path(args[args.index("--xml") + 1]).write_text({report!r})
"""


def fake_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> Path:
    java = tmp_path / "java"
    java.write_text(FAKE_JAVA.format(python=sys.executable, report=REPORT, lh=LH))
    java.chmod(0o755)
    monkeypatch.setenv("FAKE_JAVA_MODE", mode)
    return java


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("fail", r"CLI failed \(exit 1\):\nException in thread main"),
        ("mismatch", "not the ones the client's JVM ran .*LedgerHandle differ"),
        ("no-xml", "wrote no XML report"),
        ("hang", r"did not finish within 1s \(killed\)"),
    ],
)
def test_the_cli_s_failures_are_clear(
    fake_jacoco: JacocoInstallation,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    message: str,
) -> None:
    java = fake_java(tmp_path, monkeypatch, mode)
    with pytest.raises(JacocoError, match=message):
        run_report(
            tmp_path / "a.exec", tmp_path, tmp_path / "r.xml", fake_jacoco, java=str(java),
            timeout=1.0,
        )  # fmt: skip


def test_the_cli_s_report_is_returned(
    fake_jacoco: JacocoInstallation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = fake_java(tmp_path, monkeypatch, "ok")
    xml = run_report(tmp_path / "a.exec", tmp_path, tmp_path / "r.xml", fake_jacoco, java=str(java))
    assert xml == REPORT

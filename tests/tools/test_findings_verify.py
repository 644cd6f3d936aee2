"""tools/findings_verify.py's pure parts: the options (releases, bad ones refused before
anything runs), the expected results (FAIL on a release, PASS with the fix) and the exit code
they make, the table, surefire's reports read into an outcome, and the Maven calls (the
reproducers' own repository, a fix build's version that never shadows a release). The
BookKeeper reproducers: their options, a row per finding x release with every run counted
(FAIL expected in every run), each finding's outcome read from its own class's report, their
Maven call and build directories, and main running only what ``--only`` asks for."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tools import findings_verify
from tools.findings_verify import (
    ERROR,
    FAIL,
    PASS,
    Outcome,
    Row,
    exit_code,
    parse_versions,
    read_surefire_reports,
    render_table,
)


def test_versions_are_release_numbers_in_order_without_repeats() -> None:
    assert parse_versions("3.9.5") == ("3.9.5",)
    assert parse_versions(" 3.9.5, release-3.8.4 ,3.9.5,") == ("3.9.5", "3.8.4")
    for bad in ("", ",", "3.9", "3.9.5-SNAPSHOT", "latest"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_versions(bad)


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path))
    monkeypatch.delenv("BKCONFORM_ZOOKEEPER_MIRROR", raising=False)
    args = findings_verify.parser().parse_args([])
    assert args.versions == ("3.9.5",)
    assert not args.with_fix and not args.reuse_build
    assert args.mirror == findings_verify.DEFAULT_MIRROR
    assert findings_verify.maven_repo(args) == tmp_path / "m2-reproducers"
    assert args.timeout > 0 and args.build_timeout > 0
    args = findings_verify.parser().parse_args(
        ["--versions", "3.8.4,3.9.5", "--with-fix", "--maven-repo", str(tmp_path / "m2")]
    )
    assert args.versions == ("3.8.4", "3.9.5") and args.with_fix
    assert findings_verify.maven_repo(args) == tmp_path / "m2"


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any Maven, git or tar call fails the test."""

    def no_run(*args: object, **kwargs: object) -> int:
        raise AssertionError("nothing may run")

    monkeypatch.setattr(findings_verify, "run", no_run)


@pytest.mark.usefixtures("nothing_runs")
def test_bad_options_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path / "out")]
    assert findings_verify.main(["--versions", "3.9", *out]) == 2
    assert findings_verify.main(["--timeout", "0", *out]) == 2
    assert findings_verify.main(["--reuse-build", *out]) == 2
    assert "--reuse-build needs --with-fix" in capsys.readouterr().err
    assert findings_verify.main(["--mvn", str(tmp_path / "no-mvn"), *out]) == 2
    assert "mvn not found" in capsys.readouterr().err
    mirror = ["--mirror", str(tmp_path / "no-mirror")]
    assert findings_verify.main(["--mvn", "true", "--with-fix", *mirror, *out]) == 2
    assert "no ZooKeeper git mirror" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _row(released: str, fix: str | None = None) -> Row:
    return Row("3.9.5", Outcome(released), None if fix is None else Outcome(fix))


def test_expected_results_fail_on_the_release_and_pass_with_the_fix() -> None:
    assert _row(FAIL).as_expected()
    assert _row(FAIL, PASS).as_expected()
    assert not _row(PASS).as_expected()  # the release does not show the finding
    assert not _row(FAIL, FAIL).as_expected()  # the fix does not remove it
    assert not _row(PASS, PASS).as_expected()
    assert not _row(ERROR, PASS).as_expected()
    assert not _row(FAIL, ERROR).as_expected()


def test_exit_code_is_zero_only_when_every_result_is_as_expected() -> None:
    assert exit_code([_row(FAIL, PASS), Row("3.8.4", Outcome(FAIL))]) == 0
    assert exit_code([_row(FAIL, PASS), Row("3.8.4", Outcome(PASS))]) == 1
    assert exit_code([_row(FAIL, FAIL)]) == 1
    assert exit_code([_row(FAIL, ERROR)]) == 2  # an ERROR wins: nothing was decided there
    assert exit_code([_row(PASS), _row(ERROR)]) == 2


def test_the_table_has_a_line_per_release_and_says_what_was_expected() -> None:
    table = render_table([_row(FAIL, PASS), Row("3.8.4", Outcome(PASS))])
    lines = table.splitlines()
    assert lines[0] == "| release | released | with fix | as expected |"
    assert lines[2] == "| 3.9.5 | FAIL (as expected) | PASS (as expected) | yes |"
    assert lines[3] == "| 3.8.4 | PASS (expected FAIL) | not run | no |"


def _report(directory: Path, name: str, cases: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"TEST-{name}.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="{name}">{cases}</testsuite>\n'
    )


def test_surefire_reports_make_an_outcome(tmp_path: Path) -> None:
    assert read_surefire_reports(tmp_path / "none") is None
    failed = tmp_path / "failed"
    _report(
        failed,
        "T",
        '<testcase name="a(File)"><failure message="it holds /uncommitted" type="X"/></testcase>'
        '<testcase name="b"/>',
    )
    outcome = read_surefire_reports(failed)
    assert outcome is not None and outcome.result == FAIL
    assert outcome.failures == {"a": "it holds /uncommitted"}
    assert outcome.detail == "1 of 2 tests failed"

    passed = tmp_path / "passed"
    _report(passed, "T", '<testcase name="a"/><testcase name="b"><skipped/></testcase>')
    outcome = read_surefire_reports(passed)
    assert outcome is not None and outcome.result == PASS and outcome.detail == "1 tests passed"

    errored = tmp_path / "errored"
    _report(errored, "T", '<testcase name="a"><error message="NoClassDefFound"/></testcase>')
    outcome = read_surefire_reports(errored)
    assert outcome is not None and outcome.result == ERROR and "NoClassDefFound" in outcome.detail

    empty = tmp_path / "empty"
    _report(empty, "T", "")
    outcome = read_surefire_reports(empty)
    assert outcome is not None and outcome.result == ERROR

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "TEST-T.xml").write_text("<testsuite")
    outcome = read_surefire_reports(broken)
    assert outcome is not None and outcome.result == ERROR


def test_maven_calls_use_the_reproducers_repository_and_a_fix_version(tmp_path: Path) -> None:
    repo = tmp_path / "m2"
    fixed = findings_verify.fix_version("3.9.5")
    assert fixed == "3.9.5-bkconform-fix"

    run = findings_verify.reproducer_command("mvn", repo, tmp_path / "t", fixed, "3.9.5")
    assert f"-Dmaven.repo.local={repo}" in run
    assert f"-Dzookeeper.version={fixed}" in run
    assert "-Dzookeeper.tests.version=3.9.5" in run
    assert f"-Dreproducers.build.dir={tmp_path / 't'}" in run
    assert run[-1] == "test"

    set_version = findings_verify.set_version_command("mvn", repo, fixed)
    assert f"-DnewVersion={fixed}" in set_version and f"-Dmaven.repo.local={repo}" in set_version

    build = findings_verify.build_command("mvn", repo)
    assert build[build.index("-pl") + 1] == "zookeeper-server" and "-am" in build
    assert "install" in build and "-DskipTests" in build
    assert f"-Dmaven.repo.local={repo}" in build

    jar = findings_verify.installed_jar(repo, fixed)
    assert jar == repo / "org/apache/zookeeper/zookeeper" / fixed / f"zookeeper-{fixed}.jar"


def test_every_default_release_has_its_patch() -> None:
    for version in findings_verify.DEFAULT_VERSIONS:
        patch = findings_verify.patch_for(version)
        assert patch.is_file(), patch
        assert "diff --git a/zookeeper-server/" in patch.read_text()


def test_main_runs_with_an_absolute_out_and_exits_with_the_table_s_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[argparse.Namespace] = []

    def verify(args: argparse.Namespace) -> list[Row]:
        seen.append(args)
        return [_row(FAIL, PASS if args.with_fix else None)]

    monkeypatch.setattr(findings_verify, "check_tools", lambda args, with_fix: None)
    monkeypatch.setattr(findings_verify, "verify", verify)
    monkeypatch.setattr(findings_verify, "verify_bookkeeper", lambda args: [])
    monkeypatch.setattr(findings_verify, "verify_bookkeeper_fixes", lambda args: [])
    monkeypatch.chdir(tmp_path)
    assert findings_verify.main(["--with-fix", "--out", "relative"]) == 0
    assert seen[-1].out == tmp_path / "relative"  # Maven runs elsewhere: the path is absolute
    assert "| 3.9.5 | FAIL (as expected) | PASS (as expected) | yes |" in capsys.readouterr().out

    monkeypatch.setattr(findings_verify, "verify", lambda args: [_row(PASS)])
    assert findings_verify.main(["--out", "relative"]) == 1


# BookKeeper reproducers -----------------------------------------------------------------------

BK = findings_verify.BOOKKEEPER_FINDINGS


def test_bookkeeper_defaults_and_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path))
    args = findings_verify.parser().parse_args([])
    assert args.bookkeeper_versions == ("4.18.0",) and args.bookkeeper_runs == 1
    assert args.only is None
    assert findings_verify.runs_zookeeper(args) and findings_verify.runs_bookkeeper(args)
    args = findings_verify.parser().parse_args(
        ["--bookkeeper-versions", "4.18.0,release-4.17.3", "--bookkeeper-runs", "3"]
    )
    assert args.bookkeeper_versions == ("4.18.0", "4.17.3") and args.bookkeeper_runs == 3
    args = findings_verify.parser().parse_args(["--only", "bookkeeper"])
    assert findings_verify.runs_bookkeeper(args) and not findings_verify.runs_zookeeper(args)
    args = findings_verify.parser().parse_args(["--only", "zookeeper"])
    assert findings_verify.runs_zookeeper(args) and not findings_verify.runs_bookkeeper(args)


@pytest.mark.usefixtures("nothing_runs")
def test_bad_bookkeeper_options_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path / "out")]
    assert findings_verify.main(["--bookkeeper-versions", "4.18", *out]) == 2
    assert findings_verify.main(["--bookkeeper-runs", "0", *out]) == 2
    assert findings_verify.main(["--only", "hbase", *out]) == 2
    capsys.readouterr()
    mirror = ["--bookkeeper-mirror", str(tmp_path / "no-mirror")]
    assert (
        findings_verify.main(["--mvn", "true", "--only", "bookkeeper", "--with-fix", *mirror, *out])
        == 2
    )
    assert "no BookKeeper git mirror" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_every_bookkeeper_finding_has_its_doc_and_its_test_class() -> None:
    root = findings_verify.ROOT
    assert len({f.name for f in BK}) == len(BK)
    for finding in BK:
        assert (root / finding.doc).is_file(), finding.doc
        source = (
            findings_verify.BOOKKEEPER_REPRODUCER
            / "src/test/java"
            / (finding.test_class.replace(".", "/") + ".java")
        )
        assert source.is_file(), source
        text = source.read_text()
        # JUnit in BookKeeper's own test framework: its cluster test case, or (a storage-level
        # test) its test configuration and test bookie
        assert f"public class {finding.simple_name}" in text and "@Test" in text
        assert f"class {finding.simple_name} extends BookKeeperClusterTestCase" in text or (
            "TestBKConfiguration" in text and "TestBookieImpl" in text
        )


def _bk_row(*results: str) -> findings_verify.FindingRow:
    return findings_verify.FindingRow(
        "fence-lost-on-restart", "4.18.0", tuple(map(Outcome, results))
    )


def test_a_bookkeeper_finding_is_as_expected_only_when_every_run_fails() -> None:
    assert _bk_row(FAIL).as_expected() and _bk_row(FAIL, FAIL, FAIL).as_expected()
    assert not _bk_row(FAIL, PASS, FAIL).as_expected()  # flaky: not a reproducer
    assert not _bk_row(PASS).as_expected()
    assert not _bk_row().as_expected() and _bk_row().has_error()
    assert _bk_row(FAIL, ERROR).has_error() and not _bk_row(FAIL, PASS).has_error()
    assert _bk_row(FAIL, FAIL, FAIL).counts() == "FAIL 3/3"
    assert _bk_row(PASS, FAIL, ERROR).counts() == "FAIL 1/3, PASS 1/3, ERROR 1/3"
    assert _bk_row().counts() == "not run"


def test_the_exit_code_counts_the_bookkeeper_rows() -> None:
    assert exit_code([_row(FAIL, PASS)], [_bk_row(FAIL, FAIL)]) == 0
    assert exit_code([], [_bk_row(FAIL)]) == 0
    assert exit_code([_row(FAIL, PASS)], [_bk_row(FAIL, PASS)]) == 1
    assert exit_code([_row(FAIL)], [_bk_row(FAIL, ERROR)]) == 2
    assert exit_code([_row(ERROR)], [_bk_row(FAIL)]) == 2


def test_the_bookkeeper_table_has_a_line_per_finding_and_release() -> None:
    rows = [
        _bk_row(FAIL, FAIL, FAIL),
        findings_verify.FindingRow("bk-3005", "4.17.3", (Outcome(FAIL), Outcome(PASS))),
    ]
    lines = findings_verify.render_bookkeeper_table(rows).splitlines()
    assert lines[0] == "| finding | BookKeeper release | runs | result | as expected |"
    assert lines[2] == "| fence-lost-on-restart | 4.18.0 | 3 | FAIL 3/3 (as expected) | yes |"
    assert lines[3] == (
        "| bk-3005 | 4.17.3 | 2 | FAIL 1/2, PASS 1/2 (expected FAIL in every run) | no |"
    )
    both = findings_verify.render_tables([_row(FAIL)], rows)
    assert both.index("ZooKeeper:") < both.index("| 3.9.5 |") < both.index("BookKeeper:")
    assert findings_verify.render_tables([_row(FAIL)], []) == render_table([_row(FAIL)])
    assert findings_verify.render_tables([], rows).startswith("BookKeeper:")


def test_each_bookkeeper_finding_is_read_from_its_own_class_report(tmp_path: Path) -> None:
    fence, throttle, bk3005, sigsegv = (f.test_class for f in BK)
    reports = tmp_path / "surefire-reports"
    _report(
        reports,
        fence,
        '<testcase name="testSorted"><failure message="b3 lost the fence"/></testcase>'
        '<testcase name="testControl"/>',
    )
    _report(reports, throttle, '<testcase name="t"><skipped message="not reached"/></testcase>')
    log = tmp_path / "mvn.log"
    outcomes = findings_verify.bookkeeper_outcomes(reports, 1, log, 900)
    assert outcomes[BK[0].name].result == FAIL
    assert outcomes[BK[0].name].failures == {"testSorted": "b3 lost the fence"}
    assert outcomes[BK[1].name].result == ERROR  # its one test was skipped: nothing decided
    assert outcomes[BK[2].name].result == ERROR and "no report of" in outcomes[BK[2].name].detail
    assert bk3005.endswith("AckedEntryReadableAfterEnsembleChangeTest")
    assert sigsegv.endswith("ReadAfterStorageShutdownTest")
    assert outcomes[BK[3].name].result == ERROR  # no report of it either
    timed_out = findings_verify.bookkeeper_outcomes(reports, None, log, 900)
    assert all(o.result == ERROR and "timed out" in o.detail for o in timed_out.values())
    # the whole directory, as for ZooKeeper, when no class is named
    whole = read_surefire_reports(reports)
    assert whole is not None and whole.result == FAIL


def test_the_bookkeeper_maven_call(tmp_path: Path) -> None:
    repo = tmp_path / "m2"
    command = findings_verify.bookkeeper_command("mvn", repo, tmp_path / "t", "4.17.3")
    assert command[command.index("-f") + 1] == str(
        findings_verify.BOOKKEEPER_REPRODUCER / "pom.xml"
    )
    assert f"-Dmaven.repo.local={repo}" in command
    assert "-Dbookkeeper.version=4.17.3" in command
    assert f"-Dreproducers.build.dir={tmp_path / 't'}" in command
    tests = next(a for a in command if a.startswith("-Dtest=")).removeprefix("-Dtest=")
    assert tests.split(",") == [f.simple_name for f in BK]
    assert command[-1] == "test"


def test_bookkeeper_runs_each_in_its_own_directory_and_make_a_row_per_finding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[tuple[list[str], Path]] = []

    def fake_run(
        command: list[str],
        *,
        cwd: Path,
        log: Path,
        timeout: float,
        env: dict[str, str] | None = None,
    ) -> int:
        calls.append((command, log))
        build = Path(
            next(a for a in command if a.startswith("-Dreproducers.build.dir=")).split("=", 1)[1]
        )
        for finding in BK:
            _report(
                build / "surefire-reports",
                finding.test_class,
                '<testcase name="t"><failure message="shown"/></testcase>',
            )
        return 1

    monkeypatch.setattr(findings_verify, "run", fake_run)
    monkeypatch.setattr(findings_verify, "check_tools", lambda args, with_fix: None)
    out = tmp_path / "out"
    code = findings_verify.main(
        [
            "--only",
            "bookkeeper",
            "--bookkeeper-versions",
            "4.18.0,4.17.3",
            "--bookkeeper-runs",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert len(calls) == 4
    assert [log.parent.name for _, log in calls] == [
        "bookkeeper-4.18.0-run1",
        "bookkeeper-4.18.0-run2",
        "bookkeeper-4.17.3-run1",
        "bookkeeper-4.17.3-run2",
    ]
    assert all("-Dbookkeeper.version=4.17.3" in command for command, _ in calls[2:])
    table = (out / "table.md").read_text()
    assert table.startswith("BookKeeper:")
    for finding in BK:
        for version in ("4.18.0", "4.17.3"):
            assert f"| {finding.name} | {version} | 2 | FAIL 2/2 (as expected) | yes |" in table
    assert (out / "table-bookkeeper.json").is_file()


# BookKeeper candidate fixes ------------------------------------------------------------------


def test_every_bookkeeper_patch_is_a_finding_s_fix_on_bookkeeper_server() -> None:
    """A patch named for no finding would never be built; each patches bookkeeper-server only."""
    names = {f.name for f in BK}
    patches = sorted(findings_verify.BOOKKEEPER_PATCHES.glob("*.patch"))
    assert patches, "no BookKeeper candidate fix"
    for patch in patches:
        version, finding = patch.stem.removeprefix("release-").split("-", 1)
        assert findings_verify.VERSION_PATTERN.match(version), patch.name
        assert finding in names, patch.name
        text = patch.read_text()
        files = [line.split()[2] for line in text.splitlines() if line.startswith("diff --git ")]
        assert files and all(f.startswith("a/bookkeeper-server/src/main/") for f in files), files
    assert [f.name for f in findings_verify.bookkeeper_fixes("4.18.0")] == [f.name for f in BK]
    # 4.16.6's KeyValueStorageRocksDB has no closedLock to guard with: no shutdown-crash fix
    assert BK[3] not in findings_verify.bookkeeper_fixes("4.16.6")
    assert findings_verify.bookkeeper_fixes("4.11.1") == []


def test_a_bookkeeper_fix_build_has_a_version_per_finding_and_runs_on_the_release_framework(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path))
    args = findings_verify.parser().parse_args(["--bookkeeper-mirror", str(tmp_path / "bk.git")])
    repo = findings_verify.maven_repo(args)
    fix = findings_verify.bookkeeper_fix(args, "4.18.0", "fence-lost-on-restart")
    assert fix.patched_version == "4.18.0-bkconform-fix-fence-lost-on-restart"
    assert fix.patch == findings_verify.bookkeeper_patch_for("4.18.0", "fence-lost-on-restart")
    assert fix.mirror == tmp_path / "bk.git"
    version = fix.patched_version
    assert fix.jar == (
        repo
        / "org/apache/bookkeeper/bookkeeper-server"
        / version
        / f"bookkeeper-server-{version}.jar"
    )
    build = list(fix.build)
    assert build[build.index("-pl") + 1] == "bookkeeper-server" and "-am" in build
    assert "install" in build and "-DskipTests" in build and f"-Dmaven.repo.local={repo}" in build
    # test jars other modules resolve must be built: tests compiled, not run
    assert not any(a.startswith("-Dmaven.test.skip") for a in build)
    pure = findings_verify.bookkeeper_build_command("mvn", repo, pure_rust=True)
    assert pure[-1] == "-Dnative.io.pure.rust=true"
    assert "-Dnative.io.pure.rust=true" not in findings_verify.bookkeeper_build_command(
        "mvn", repo, pure_rust=False
    )
    # the property only where the release's native-io has it
    source = tmp_path / "source"
    (source / "native-io").mkdir(parents=True)
    (source / "native-io" / "pom.xml").write_text("<project/>")
    assert "-Dnative.io.pure.rust=true" not in findings_verify._native_io_options(source, pure)
    (source / "native-io" / "pom.xml").write_text("<p>native.io.pure.rust</p>")
    assert findings_verify._native_io_options(source, pure) == pure

    command = findings_verify.bookkeeper_command("mvn", repo, tmp_path / "t", "4.18.0", version)
    assert "-Dbookkeeper.version=4.18.0" in command  # the release's test framework
    assert f"-Dbookkeeper.server.version={version}" in command
    assert not any(
        a.startswith("-Dbookkeeper.server.version")
        for a in findings_verify.bookkeeper_command("mvn", repo, tmp_path / "t", "4.18.0")
    )


def _fix_row(finding: str, **results: str) -> findings_verify.FixRow:
    return findings_verify.FixRow(
        finding,
        "4.18.0",
        f"release-4.18.0-{finding}.patch",
        {n: Outcome(r) for n, r in results.items()},
    )


def test_a_fix_row_is_as_expected_when_its_own_reproducer_passes() -> None:
    fence, throttle = BK[0].name, BK[1].name
    row = _fix_row(fence, **{fence: PASS, throttle: FAIL})
    assert row.as_expected() and not row.has_error()
    assert row.others() == f"{throttle} FAIL"
    assert not _fix_row(fence, **{fence: FAIL, throttle: PASS}).as_expected()
    errored = _fix_row(fence, **{fence: ERROR, throttle: FAIL})
    assert errored.has_error() and not errored.as_expected()
    assert _fix_row(fence, **{throttle: PASS}).has_error()  # its own outcome missing
    # another reproducer's error does not decide this fix's row
    assert not _fix_row(fence, **{fence: PASS, throttle: ERROR}).has_error()
    assert exit_code([], [], [row]) == 0
    assert exit_code([], [], [row, _fix_row(fence, **{fence: FAIL})]) == 1
    assert exit_code([], [], [row, errored]) == 2
    table = findings_verify.render_bookkeeper_fix_table([row])
    assert f"| {fence} | 4.18.0 | release-4.18.0-{fence}.patch | PASS (as expected) " in table
    assert f"| {throttle} FAIL | yes |" in table


def test_with_fix_builds_each_bookkeeper_finding_s_fix_on_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built: list[str] = []
    runs: list[list[str]] = []

    def fake_build(args: argparse.Namespace, fix: findings_verify.FixBuild, log: Path) -> str:
        built.append(fix.patched_version)
        if "throttled" in fix.patched_version:
            raise findings_verify.VerifyError("build failed")
        return fix.patched_version

    def fake_run(
        command: list[str], *, cwd: Path, log: Path, timeout: float, env: object = None
    ) -> int:
        runs.append(command)
        build = Path(
            next(a for a in command if a.startswith("-Dreproducers.build.dir=")).split("=", 1)[1]
        )
        server = next((a for a in command if a.startswith("-Dbookkeeper.server.version=")), "")
        for finding in BK:
            fixed = server.endswith(finding.name)
            body = "" if fixed else '<failure message="shown"/>'
            _report(
                build / "surefire-reports",
                finding.test_class,
                f'<testcase name="t">{body}</testcase>',
            )
        return 1

    monkeypatch.setattr(findings_verify, "build_patched", fake_build)
    monkeypatch.setattr(findings_verify, "run", fake_run)
    monkeypatch.setattr(findings_verify, "check_tools", lambda args, with_fix: None)
    out = tmp_path / "out"
    code = findings_verify.main(["--only", "bookkeeper", "--with-fix", "--out", str(out)])
    assert built == [f"4.18.0-bkconform-fix-{f.name}" for f in BK]
    assert len(runs) == 1 + len(BK) - 1  # the release once, then the fixes that built
    table = (out / "table.md").read_text()
    assert "BookKeeper, each candidate fix on its own:" in table
    assert (
        f"| {BK[0].name} | 4.18.0 | release-4.18.0-{BK[0].name}.patch | PASS (as expected) "
        in table
    )
    assert (
        f"| {BK[1].name} | 4.18.0 | release-4.18.0-{BK[1].name}.patch | ERROR (expected PASS) "
        in table
    )
    assert code == 2  # a fix that could not be built decides nothing
    assert (out / "table-bookkeeper-fixes.json").is_file()


def test_zookeeper_with_fix_runs_the_reproducer_on_the_build_or_says_why_it_could_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    built: list[str] = []
    ran: list[tuple[str, str]] = []

    def fake_build(args: argparse.Namespace, fix: findings_verify.FixBuild, log: Path) -> str:
        assert log.parent.is_dir() and fix.product == "ZooKeeper"
        built.append(fix.version)
        if fix.version == "3.8.4":
            raise findings_verify.VerifyError("the patch does not apply")
        return fix.patched_version

    def fake_reproducer(
        args: argparse.Namespace, version: str, tests_version: str, variant: str
    ) -> Outcome:
        ran.append((version, variant))
        return Outcome(PASS if variant == "fix" else FAIL)

    monkeypatch.setattr(findings_verify, "build_patched", fake_build)
    monkeypatch.setattr(findings_verify, "run_reproducer", fake_reproducer)
    args = findings_verify.parser().parse_args(
        ["--versions", "3.9.5,3.8.4", "--with-fix", "--out", str(tmp_path / "out")]
    )
    rows = findings_verify.verify(args)
    assert built == ["3.9.5", "3.8.4"]
    assert ran == [("3.9.5", "released"), ("3.9.5-bkconform-fix", "fix"), ("3.8.4", "released")]
    assert rows[0].as_expected() and rows[0].fix is not None and rows[0].fix.result == PASS
    assert rows[1].fix is not None and rows[1].fix.result == ERROR
    assert "the patch does not apply" in rows[1].fix.detail
    assert exit_code(rows) == 2

"""The findings' upstream-style reproducers, run against released ZooKeeper (and a patched
build) and released BookKeeper: each must fail on the releases the finding affects, and the
ZooKeeper one pass with the candidate fix.

The reproducer is a JUnit test in ZooKeeper's own framework (``reproducers/zookeeper``,
``LeaderStartupSnapshotTest``: docs/findings/zookeeper-uncommitted-write-survives-trunc.md),
run by Maven on the released ``org.apache.zookeeper:zookeeper`` jar and its ``tests`` jar.

With ``--with-fix``, for each release the source is exported from a git mirror of ZooKeeper
(``git archive release-<v>``) into a temporary directory, the candidate fix
(``reproducers/zookeeper/patches/release-<v>-no-startup-snapshot.patch``) is applied, the
version is set to ``<v>-bkconform-fix`` (so the build never shadows the released artifact),
``zookeeper-server`` is built and installed (``-pl zookeeper-server -am install``, no tests)
and the reproducer runs again on that build (with the release's ``tests`` jar: the framework
does not change with the patch). The temporary directory is removed after.

The BookKeeper reproducers (``reproducers/bookkeeper``: JUnit tests on BookKeeper's own
``BookKeeperClusterTestCase``, one class a finding, ``BOOKKEEPER_FINDINGS``) run with
``mvn -f reproducers/bookkeeper/pom.xml -Dbookkeeper.version=<v> test`` on each release of
``--bookkeeper-versions`` (default 4.18.0), ``--bookkeeper-runs`` times (default 1), each run
building in its own directory ``<out>/bookkeeper-<v>-run<n>``; each finding's outcome is read
from its class's surefire report. With ``--with-fix``, each finding's candidate fix
(``reproducers/bookkeeper/patches/release-<v>-<finding>.patch``, where one exists for the
release) is built on its own, as for ZooKeeper: ``release-<v>`` exported from BookKeeper's git
mirror (``--bookkeeper-mirror``), the patch applied, the version set to
``<v>-bkconform-fix-<finding>``, ``bookkeeper-server`` and what it needs installed (tests
compiled, not run: other modules' builds resolve their test jars); then every reproducer
run once on that bookkeeper-server jar (``-Dbookkeeper.server.version``) with the release's
test framework: the fixed finding's must PASS, the others show what else the patch changed.

Every Maven call uses the reproducers' own local repository (``--maven-repo``, default
``$BKCONFORM_HOME/m2-reproducers``), runs in its own process group, and is stopped (the group
killed) after its timeout or when this script is interrupted. Maven calls run one at a time.

    python tools/findings_verify.py [--versions 3.9.5,3.8.4] [--with-fix] [--reuse-build]
        [--bookkeeper-versions 4.18.0,4.17.3] [--bookkeeper-runs 3] [--only bookkeeper]
        [--mirror /work/.mirror/apache+zookeeper/repo]
        [--bookkeeper-mirror /work/.mirror/apache+bookkeeper/repo] [--maven-repo DIR]
        [--out runs/findings-verify] [--timeout 900] [--build-timeout 2400]

Output: a table, release x {released, with fix}, each cell PASS (every reproducer test
passed), FAIL (a reproducer test failed: the finding is shown) or ERROR (the reproducer could
not run: build, resolution, compilation, timeout, or a test that ended in an exception or was
skipped because its schedule was not reached), also written to ``<out>/table.md`` and
``<out>/table.json``; Maven's output of each run is in ``<out>/<release>-<variant>/mvn.log``.
The BookKeeper table has a row per finding x release, with the outcome of each run; it follows
the ZooKeeper one in ``<out>/table.md``, and is in ``<out>/table-bookkeeper.json``.

The fixes' table (finding x release: its reproducer, the others) follows, also in
``<out>/table-bookkeeper-fixes.md`` and ``.json``; each fix's build log is
``<out>/<v>-bkconform-fix-<finding>-build/build.log``.

Exit 0 when every result is as expected (FAIL on the release in every run, PASS with the fix),
1 when a result is not, 2 when a result could not be had (ERROR) or the options are bad.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's packages come from the tree
    sys.path.insert(0, str(ROOT))

from adapters.installations import source_builds  # noqa: E402
from adapters.process_group import run_in_process_group  # noqa: E402
from adapters.user_state import bkconform_home  # noqa: E402

REPRODUCER = ROOT / "reproducers" / "zookeeper"
PATCHES = REPRODUCER / "patches"
PATCH_NAME = "release-{version}-no-startup-snapshot.patch"
#: The reproducer's test class (surefire's ``-Dtest``).
TEST_CLASS = "LeaderStartupSnapshotTest"
DEFAULT_VERSIONS = ("3.9.5",)
DEFAULT_MIRROR = Path("/work/.mirror/apache+zookeeper/repo")
#: The version a patched build is installed under: never a released one.
FIX_SUFFIX = "bkconform-fix"
#: What a fix build is allowed to skip: tests, and what checks or documents the sources.
BUILD_SKIPS = (
    "-DskipTests",
    "-Dmaven.test.skip=true",
    "-Dcheckstyle.skip=true",
    "-Dspotbugs.skip=true",
    "-Drat.skip=true",
    "-Dmaven.javadoc.skip=true",
    "-Dmaven.source.skip=true",
    "-Dcyclonedx.skip=true",
    "-Dgpg.skip=true",
    "-Ddependency-check.skip=true",
)
VERSIONS_PLUGIN = "org.codehaus.mojo:versions-maven-plugin:2.16.2"
VERSION_PATTERN = re.compile(r"^\d+\.\d+\.\d+$")

BOOKKEEPER_REPRODUCER = ROOT / "reproducers" / "bookkeeper"
BOOKKEEPER_PATCHES = BOOKKEEPER_REPRODUCER / "patches"
#: A BookKeeper finding's candidate fix on a release: ``release-4.18.0-<finding>.patch``.
BOOKKEEPER_PATCH_NAME = "release-{version}-{finding}.patch"
BOOKKEEPER_DEFAULT_VERSIONS = ("4.18.0",)
DEFAULT_BOOKKEEPER_MIRROR = Path("/work/.mirror/apache+bookkeeper/repo")
#: What a BookKeeper fix build skips: what a source checkout's build skips
#: (adapters.installations.source_builds: its tests compiled, not run, since other modules'
#: builds resolve their test jars; no lint), and signing.
BOOKKEEPER_BUILD_SKIPS = (*source_builds.BUILD_OPTIONS, "-Dgpg.skip=true")
#: native-io's property for a build without cargo-zigbuild (4.18.0's native-io builds Rust).
PURE_RUST_PROPERTY = source_builds.PURE_RUST_PROPERTY
PROJECTS = ("zookeeper", "bookkeeper")


@dataclass(frozen=True)
class BookKeeperFinding:
    """A BookKeeper finding and its reproducer: a test class in ``reproducers/bookkeeper``."""

    name: str
    #: The finding's page, under docs/findings.
    doc: str
    #: The reproducer's class, fully qualified (its surefire report is ``TEST-<class>.xml``).
    test_class: str

    @property
    def simple_name(self) -> str:
        return self.test_class.rsplit(".", 1)[-1]


BOOKKEEPER_FINDINGS = (
    BookKeeperFinding(
        "fence-lost-on-restart",
        "docs/findings/fence-lost-on-restart.md",
        "org.apache.bookkeeper.client.FenceWithoutEntriesSurvivesRestartTest",
    ),
    BookKeeperFinding(
        "throttled-add-goes-to-the-replaced-bookie",
        "docs/findings/throttled-add-goes-to-the-replaced-bookie.md",
        "org.apache.bookkeeper.client.ThrottledAddAcrossEnsembleChangeTest",
    ),
    BookKeeperFinding(
        "bk-3005-acknowledged-entry-unreadable",
        "docs/findings/bk-3005-acknowledged-entry-unreadable.md",
        "org.apache.bookkeeper.client.AckedEntryReadableAfterEnsembleChangeTest",
    ),
    BookKeeperFinding(
        "bookie-shutdown-sigsegv",
        "docs/findings/bookie-shutdown-sigsegv-4.17.3.md",
        "org.apache.bookkeeper.bookie.storage.ldb.ReadAfterStorageShutdownTest",
    ),
)

PASS = "PASS"
FAIL = "FAIL"
ERROR = "ERROR"
#: What each variant's run must give: the release reproduces the finding, the fix removes it.
EXPECTED = {"released": FAIL, "fix": PASS}


class VerifyError(Exception):
    """A step could not be run (no mirror, no mvn, no patch, a build that failed)."""


# Options ----------------------------------------------------------------------------------


def parse_versions(text: str) -> tuple[str, ...]:
    """``3.9.5,3.8.4`` -> ("3.9.5", "3.8.4"): each a release number, no repeats."""
    versions: list[str] = []
    for part in text.split(","):
        version = part.strip().removeprefix("release-")
        if not version:
            continue
        if not VERSION_PATTERN.match(version):
            raise argparse.ArgumentTypeError(f"not a release number: {part.strip()!r}")
        if version not in versions:
            versions.append(version)
    if not versions:
        raise argparse.ArgumentTypeError("no release given")
    return tuple(versions)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


def runs_zookeeper(args: argparse.Namespace) -> bool:
    return args.only in (None, "zookeeper")


def runs_bookkeeper(args: argparse.Namespace) -> bool:
    return args.only in (None, "bookkeeper")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="findings_verify",
        description="Run the ZooKeeper reproducer against releases, and with the candidate fix, "
        "and the BookKeeper reproducers against releases.",
    )
    p.add_argument(
        "--versions",
        type=parse_versions,
        default=DEFAULT_VERSIONS,
        help="comma-separated ZooKeeper releases (default: %(default)s)",
    )
    p.add_argument(
        "--bookkeeper-versions",
        type=parse_versions,
        default=BOOKKEEPER_DEFAULT_VERSIONS,
        help="comma-separated BookKeeper releases for the BookKeeper reproducers "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--bookkeeper-runs",
        type=_count,
        default=1,
        help="how many times the BookKeeper reproducers run on each release (default: %(default)s)",
    )
    p.add_argument(
        "--only",
        choices=PROJECTS,
        default=None,
        help="run only the ZooKeeper or only the BookKeeper reproducers (default: both)",
    )
    p.add_argument(
        "--with-fix",
        action="store_true",
        help="also build each release with its candidate fix and run the reproducer on it; "
        "for BookKeeper, each finding's fix (reproducers/bookkeeper/patches) on its own",
    )
    p.add_argument(
        "--reuse-build",
        action="store_true",
        help="with --with-fix: reuse a patched build installed from the same patch",
    )
    p.add_argument(
        "--mirror",
        type=Path,
        default=Path(os.environ.get("BKCONFORM_ZOOKEEPER_MIRROR", str(DEFAULT_MIRROR))),
        help="ZooKeeper's git directory, with its release tags (default: %(default)s)",
    )
    p.add_argument(
        "--bookkeeper-mirror",
        type=Path,
        default=Path(os.environ.get("BKCONFORM_BOOKKEEPER_MIRROR", str(DEFAULT_BOOKKEEPER_MIRROR))),
        help="BookKeeper's git directory, with its release tags, for --with-fix "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--maven-repo",
        type=Path,
        default=None,
        help="Maven's local repository (default: $BKCONFORM_HOME/m2-reproducers)",
    )
    p.add_argument("--mvn", default="mvn", help="the mvn command (default: %(default)s)")
    p.add_argument(
        "--out",
        type=Path,
        default=ROOT / "runs" / "findings-verify",
        help="where the runs' logs and the table go (default: runs/findings-verify)",
    )
    p.add_argument(
        "--timeout",
        type=_positive,
        default=900.0,
        help="seconds for one reproducer run (default: %(default)s)",
    )
    p.add_argument(
        "--build-timeout",
        type=_positive,
        default=2400.0,
        help="seconds for one Maven call of a fix build (default: %(default)s)",
    )
    return p


def maven_repo(args: argparse.Namespace) -> Path:
    repo: Path | None = args.maven_repo
    return repo if repo is not None else bkconform_home() / "m2-reproducers"


def patch_for(version: str) -> Path:
    return PATCHES / PATCH_NAME.format(version=version)


def fix_version(version: str) -> str:
    return f"{version}-{FIX_SUFFIX}"


# Results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One reproducer run: PASS, FAIL or ERROR, and what it said."""

    result: str
    detail: str = ""
    #: The failed tests' assertion messages (FAIL), by test name.
    failures: dict[str, str] = dataclasses.field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class Row:
    """A release's results: the released jars and (None: not run) the patched build."""

    version: str
    released: Outcome
    fix: Outcome | None = None

    def as_expected(self) -> bool:
        if self.released.result != EXPECTED["released"]:
            return False
        return self.fix is None or self.fix.result == EXPECTED["fix"]

    def has_error(self) -> bool:
        return ERROR in (self.released.result, self.fix.result if self.fix else None)


@dataclass(frozen=True)
class FindingRow:
    """A BookKeeper finding on a release: the outcome of each run of its reproducer."""

    finding: str
    version: str
    outcomes: tuple[Outcome, ...]

    def as_expected(self) -> bool:
        """Every run FAILs: the release shows the finding, every time."""
        return bool(self.outcomes) and all(o.result == FAIL for o in self.outcomes)

    def has_error(self) -> bool:
        return not self.outcomes or any(o.result == ERROR for o in self.outcomes)

    def counts(self) -> str:
        """``FAIL 3/3`` or ``FAIL 2/3, PASS 1/3``: each result's runs, in a fixed order."""
        total = len(self.outcomes)
        parts = []
        for result in (FAIL, PASS, ERROR):
            n = sum(1 for o in self.outcomes if o.result == result)
            if n:
                parts.append(f"{result} {n}/{total}")
        return ", ".join(parts) if parts else "not run"


def exit_code(
    rows: Sequence[Row],
    bookkeeper_rows: Sequence[FindingRow] = (),
    fix_rows: Sequence[FixRow] = (),
) -> int:
    """0: every result as expected; 2: a result is an ERROR; 1: a result is not as expected."""
    groups: list[Sequence[Row] | Sequence[FindingRow] | Sequence[FixRow]] = [
        rows,
        bookkeeper_rows,
        fix_rows,
    ]
    if any(r.has_error() for group in groups for r in group):
        return 2
    return 0 if all(r.as_expected() for group in groups for r in group) else 1


def _cell(outcome: Outcome | None, expected: str) -> str:
    if outcome is None:
        return "not run"
    if outcome.result == expected:
        return f"{outcome.result} (as expected)"
    return f"{outcome.result} (expected {expected})"


def render_table(rows: Sequence[Row]) -> str:
    """The markdown table: a line per release."""
    lines = [
        "| release | released | with fix | as expected |",
        "|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.version} | {_cell(row.released, EXPECTED['released'])} "
            f"| {_cell(row.fix, EXPECTED['fix'])} | {'yes' if row.as_expected() else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def render_bookkeeper_table(rows: Sequence[FindingRow]) -> str:
    """The BookKeeper reproducers' table: a line per finding x release, every run counted."""
    lines = [
        "| finding | BookKeeper release | runs | result | as expected |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        expected = "as expected" if row.as_expected() else f"expected {FAIL} in every run"
        lines.append(
            f"| {row.finding} | {row.version} | {len(row.outcomes)} | {row.counts()} ({expected}) "
            f"| {'yes' if row.as_expected() else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def read_surefire_reports(reports: Path, test_class: str | None = None) -> Outcome | None:
    """The outcome the reports in ``reports`` (surefire's ``TEST-*.xml``; only
    ``TEST-<test_class>.xml`` when a class is given) give: FAIL when a test failed (an
    assertion), ERROR when one ended in an exception or none ran (a skipped test does not count
    as run), else PASS. None when there is no report."""
    pattern = "TEST-*.xml" if test_class is None else f"TEST-{test_class}.xml"
    files = sorted(reports.glob(pattern)) if reports.is_dir() else []
    if not files:
        return None
    ran = 0
    failures: dict[str, str] = {}
    errors: dict[str, str] = {}
    for file in files:
        try:
            suite = ET.parse(file).getroot()
        except ET.ParseError as e:
            return Outcome(ERROR, f"unreadable report {file.name}: {e}")
        for case in suite.iter("testcase"):
            name = case.get("name", "?").split("(")[0]
            if case.find("skipped") is not None:
                continue
            ran += 1
            failure = case.find("failure")
            error = case.find("error")
            if failure is not None:
                failures[name] = (failure.get("message") or failure.get("type") or "").strip()
            elif error is not None:
                errors[name] = (error.get("message") or error.get("type") or "").strip()
    if errors:
        detail = "; ".join(f"{name}: {message}" for name, message in errors.items())
        return Outcome(ERROR, f"test error: {detail}", failures)
    if ran == 0:
        return Outcome(ERROR, "no test ran")
    if failures:
        return Outcome(FAIL, f"{len(failures)} of {ran} tests failed", failures)
    return Outcome(PASS, f"{ran} tests passed")


# Commands (pure) ---------------------------------------------------------------------------


def reproducer_command(
    mvn: str, repo: Path, build_dir: Path, version: str, tests_version: str
) -> list[str]:
    """The ``mvn`` call that runs the reproducer on ``version`` (framework from
    ``tests_version``'s tests jar), building in ``build_dir``."""
    return [
        mvn,
        "-B",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={repo}",
        "-f",
        str(REPRODUCER / "pom.xml"),
        f"-Dzookeeper.version={version}",
        f"-Dzookeeper.tests.version={tests_version}",
        f"-Dreproducers.build.dir={build_dir}",
        f"-Dtest={TEST_CLASS}",
        "-Dsurefire.failIfNoSpecifiedTests=false",
        "test",
    ]


def bookkeeper_command(
    mvn: str, repo: Path, build_dir: Path, version: str, server_version: str | None = None
) -> list[str]:
    """The ``mvn`` call that runs the BookKeeper reproducers on release ``version`` (its test
    framework; the bookkeeper-server jar of ``server_version``, a patched build, when given),
    building in ``build_dir``."""
    return [
        mvn,
        "-B",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={repo}",
        "-f",
        str(BOOKKEEPER_REPRODUCER / "pom.xml"),
        f"-Dbookkeeper.version={version}",
        *([f"-Dbookkeeper.server.version={server_version}"] if server_version else []),
        f"-Dreproducers.build.dir={build_dir}",
        "-Dtest=" + ",".join(f.simple_name for f in BOOKKEEPER_FINDINGS),
        "-Dsurefire.failIfNoSpecifiedTests=false",
        "test",
    ]


def set_version_command(mvn: str, repo: Path, version: str) -> list[str]:
    return [
        mvn,
        "-B",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={repo}",
        f"{VERSIONS_PLUGIN}:set",
        f"-DnewVersion={version}",
        "-DgenerateBackupPoms=false",
        "-DprocessAllModules=true",
    ]


def build_command(mvn: str, repo: Path) -> list[str]:
    """ZooKeeper's own build of zookeeper-server and what it needs."""
    return install_module_command(mvn, repo, "zookeeper-server", BUILD_SKIPS)


def install_module_command(mvn: str, repo: Path, module: str, options: Sequence[str]) -> list[str]:
    """``mvn install`` of ``module`` and the modules it needs, into ``repo``."""
    return [
        mvn,
        "-B",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={repo}",
        "-pl",
        module,
        "-am",
        "install",
        *options,
    ]


def installed_jar(repo: Path, version: str) -> Path:
    return (
        repo / "org" / "apache" / "zookeeper" / "zookeeper" / version / f"zookeeper-{version}.jar"
    )


def patch_digest(patch: Path) -> str:
    return hashlib.sha256(patch.read_bytes()).hexdigest()


# Running ----------------------------------------------------------------------------------


def run(
    command: Sequence[str],
    *,
    cwd: Path,
    log: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> int | None:
    """Run ``command`` in its own process group, its output appended to ``log``: its exit code,
    or None after ``timeout`` (the group killed). Interrupted, it kills the group too."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        out.write(f"$ {' '.join(command)}  (in {cwd})\n")
        out.flush()
        done = run_in_process_group(
            command,
            cwd=cwd,
            timeout=timeout,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=None if env is None else {**os.environ, **env},
        )
        if done.returncode is None:
            out.write(f"\n[findings_verify] stopped after {timeout:.0f} s\n")
        return done.returncode


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def run_reproducer(
    args: argparse.Namespace, version: str, tests_version: str, variant: str
) -> Outcome:
    """Run the reproducer on ``version``; its build directory and log under ``--out``."""
    where = args.out / f"{tests_version}-{variant}"
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    log = where / "mvn.log"
    command = reproducer_command(
        args.mvn, maven_repo(args), where / "target", version, tests_version
    )
    started = time.monotonic()
    code = run(command, cwd=REPRODUCER, log=log, timeout=args.timeout)
    seconds = time.monotonic() - started
    if code is None:
        return Outcome(ERROR, f"timed out after {args.timeout:.0f} s (log: {log})", seconds=seconds)
    outcome = read_surefire_reports(where / "target" / "surefire-reports")
    if outcome is None:
        return Outcome(
            ERROR,
            f"mvn exited {code} with no test report (log: {log}):\n{_tail(log)}",
            seconds=seconds,
        )
    if outcome.result == PASS and code != 0:
        outcome = Outcome(ERROR, f"tests passed but mvn exited {code} (log: {log})")
    return dataclasses.replace(outcome, seconds=seconds)


def bookkeeper_outcomes(
    reports: Path, code: int | None, log: Path, timeout: float
) -> dict[str, Outcome]:
    """Each BookKeeper finding's outcome from one Maven run (its exit code, None: timed out)
    and the surefire reports it left."""
    outcomes: dict[str, Outcome] = {}
    for finding in BOOKKEEPER_FINDINGS:
        if code is None:
            outcomes[finding.name] = Outcome(ERROR, f"timed out after {timeout:.0f} s (log: {log})")
            continue
        outcome = read_surefire_reports(reports, finding.test_class)
        if outcome is None:
            outcome = Outcome(
                ERROR,
                f"mvn exited {code} with no report of {finding.simple_name} (log: {log}):\n"
                f"{_tail(log)}",
            )
        outcomes[finding.name] = outcome
    return outcomes


def run_bookkeeper(
    args: argparse.Namespace, version: str, run_number: int, server_version: str | None = None
) -> dict[str, Outcome]:
    """One run of the BookKeeper reproducers on ``version`` (on ``server_version``'s
    bookkeeper-server, a patched build, when given): each finding's outcome. Its build
    directory and log are ``<out>/bookkeeper-<version>-run<n>`` (``<out>/<server version>``)."""
    name = server_version if server_version else f"bookkeeper-{version}-run{run_number}"
    where = args.out / name
    if where.exists():
        shutil.rmtree(where)
    where.mkdir(parents=True)
    log = where / "mvn.log"
    command = bookkeeper_command(
        args.mvn, maven_repo(args), where / "target", version, server_version
    )
    started = time.monotonic()
    code = run(command, cwd=BOOKKEEPER_REPRODUCER, log=log, timeout=args.timeout)
    seconds = time.monotonic() - started
    outcomes = bookkeeper_outcomes(where / "target" / "surefire-reports", code, log, args.timeout)
    return {name: dataclasses.replace(o, seconds=seconds) for name, o in outcomes.items()}


def verify_bookkeeper(args: argparse.Namespace) -> list[FindingRow]:
    """The BookKeeper reproducers on each release, ``--bookkeeper-runs`` times: a row per
    finding x release."""
    rows: list[FindingRow] = []
    for version in args.bookkeeper_versions:
        runs: list[dict[str, Outcome]] = []
        for number in range(1, args.bookkeeper_runs + 1):
            print(
                f"BookKeeper {version}: the reproducers, "
                f"run {number} of {args.bookkeeper_runs} ...",
                flush=True,
            )
            outcomes = run_bookkeeper(args, version, number)
            for name, outcome in outcomes.items():
                _say(f"BookKeeper {version}", f"{name} (run {number})", outcome)
            runs.append(outcomes)
        for finding in BOOKKEEPER_FINDINGS:
            rows.append(FindingRow(finding.name, version, tuple(run[finding.name] for run in runs)))
        write_bookkeeper_table(args.out, rows)
    return rows


@dataclass(frozen=True)
class FixRow:
    """A BookKeeper finding's candidate fix on a release: every reproducer's outcome on the
    patched build (the fixed finding's must PASS; the others show what else it changed)."""

    finding: str
    version: str
    patch: str
    outcomes: dict[str, Outcome]

    @property
    def fixed(self) -> Outcome:
        return self.outcomes.get(self.finding, Outcome(ERROR, "no outcome"))

    def as_expected(self) -> bool:
        return self.fixed.result == PASS

    def has_error(self) -> bool:
        return self.fixed.result == ERROR

    def others(self) -> str:
        """The other findings' results on this build: ``bk-3005 FAIL, ...``."""
        return ", ".join(
            f"{name} {outcome.result}"
            for name, outcome in self.outcomes.items()
            if name != self.finding
        )


def bookkeeper_fixes(version: str) -> list[BookKeeperFinding]:
    """The findings with a candidate fix for ``version`` (reproducers/bookkeeper/patches)."""
    return [f for f in BOOKKEEPER_FINDINGS if bookkeeper_patch_for(version, f.name).is_file()]


def build_into(args: argparse.Namespace, fix: FixBuild, log: Path, label: str) -> str | Outcome:
    """Build ``fix``, its log ``log`` (its directory made afresh): the patched version, or the
    ERROR outcome saying why it could not be built."""
    if log.parent.exists():
        shutil.rmtree(log.parent)
    log.parent.mkdir(parents=True)
    print(f"{label}: building {fix.patch.name} (log: {log}) ...", flush=True)
    started = time.monotonic()
    try:
        return build_patched(args, fix, log)
    except (VerifyError, OSError, subprocess.SubprocessError) as e:
        return Outcome(ERROR, str(e), seconds=time.monotonic() - started)


def verify_bookkeeper_fixes(args: argparse.Namespace) -> list[FixRow]:
    """Each finding's candidate fix on each release that has one, built on its own and the
    reproducers run on it once."""
    rows: list[FixRow] = []
    for version in args.bookkeeper_versions:
        findings = bookkeeper_fixes(version)
        if not findings:
            print(f"BookKeeper {version}: no candidate fix (no patch for it)", flush=True)
        for finding in findings:
            fix = bookkeeper_fix(args, version, finding.name)
            log = args.out / f"{fix.patched_version}-build" / "build.log"
            built = build_into(args, fix, log, f"BookKeeper {version}")
            if isinstance(built, Outcome):
                outcomes = {finding.name: built}
            else:
                print(f"BookKeeper {version}: the reproducers on {built} ...", flush=True)
                outcomes = run_bookkeeper(args, version, 1, built)
            for name, outcome in outcomes.items():
                _say(f"BookKeeper {version} + {finding.name} fix", name, outcome)
            rows.append(FixRow(finding.name, version, fix.patch.name, outcomes))
            write_bookkeeper_fix_table(args.out, rows)
    return rows


def render_bookkeeper_fix_table(rows: Sequence[FixRow]) -> str:
    """A line per finding's fix x release: the fixed finding's result, the others'."""
    lines = [
        "| finding | BookKeeper release | candidate fix | its reproducer | the other reproducers "
        "| as expected |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.finding} | {row.version} | {row.patch} "
            f"| {_cell(row.fixed, PASS)} | {row.others() or '-'} "
            f"| {'yes' if row.as_expected() else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def write_bookkeeper_fix_table(out: Path, rows: Sequence[FixRow]) -> None:
    records = [{**dataclasses.asdict(row), "as_expected": row.as_expected()} for row in rows]
    _write_tables(out, "table-bookkeeper-fixes", render_bookkeeper_fix_table(rows), records)


def _write_tables(out: Path, stem: str, markdown: str, records: list[dict[str, object]]) -> None:
    """``<out>/<stem>.md`` and ``<out>/<stem>.json``: a table as it reads and as data."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(markdown)
    (out / f"{stem}.json").write_text(json.dumps(records, indent=1) + "\n")


def check_tools(args: argparse.Namespace, with_fix: bool) -> None:
    """A clear error before anything runs when mvn, git or the mirror is missing."""
    if shutil.which(args.mvn) is None:
        raise VerifyError(f"mvn not found ({args.mvn!r}): install Maven or pass --mvn")
    if runs_zookeeper(args) and not (REPRODUCER / "pom.xml").is_file():
        raise VerifyError(f"the reproducer project is missing: {REPRODUCER / 'pom.xml'}")
    if runs_bookkeeper(args) and not (BOOKKEEPER_REPRODUCER / "pom.xml").is_file():
        raise VerifyError(
            f"the BookKeeper reproducer project is missing: {BOOKKEEPER_REPRODUCER / 'pom.xml'}"
        )
    if not with_fix:
        return
    if shutil.which("git") is None:
        raise VerifyError("git not found: needed to export a release's source (--with-fix)")
    if shutil.which("tar") is None:
        raise VerifyError("tar not found: needed to export a release's source (--with-fix)")
    if runs_zookeeper(args) and not args.mirror.is_dir():
        raise VerifyError(
            f"no ZooKeeper git mirror at {args.mirror}: pass --mirror (a bare clone or a .git "
            "directory with the release tags) or set BKCONFORM_ZOOKEEPER_MIRROR"
        )
    if runs_bookkeeper(args) and not args.bookkeeper_mirror.is_dir():
        raise VerifyError(
            f"no BookKeeper git mirror at {args.bookkeeper_mirror}: pass --bookkeeper-mirror "
            "(a bare clone or a .git directory with the release tags) or set "
            "BKCONFORM_BOOKKEEPER_MIRROR"
        )


def _git(mirror: Path, *argv: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", f"--git-dir={mirror}", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def scratch_directory() -> Iterator[Path]:
    """A temporary directory under ``$BKCONFORM_HOME/tmp`` (else /tmp), removed after."""
    base = bkconform_home() / "tmp"
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        base = Path(tempfile.gettempdir())
    path = Path(tempfile.mkdtemp(prefix="findings-verify-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class FixBuild:
    """A candidate fix to build: a release's source exported from a git mirror, a patch applied,
    the version set to one no release has, the server module installed into the reproducers'
    repository."""

    #: "ZooKeeper" or "BookKeeper": for messages.
    product: str
    version: str
    patch: Path
    #: The version the patched build is installed under.
    patched_version: str
    mirror: Path
    #: The jar whose presence says the build is installed; the marker goes next to it.
    jar: Path
    #: The Maven build of the server module (run in the source tree).
    build: tuple[str, ...]


def zookeeper_fix(args: argparse.Namespace, version: str) -> FixBuild:
    repo = maven_repo(args)
    patched = fix_version(version)
    return FixBuild(
        "ZooKeeper",
        version,
        patch_for(version),
        patched,
        args.mirror,
        installed_jar(repo, patched),
        tuple(build_command(args.mvn, repo)),
    )


def bookkeeper_patch_for(version: str, finding: str) -> Path:
    return BOOKKEEPER_PATCHES / BOOKKEEPER_PATCH_NAME.format(version=version, finding=finding)


def bookkeeper_fix_version(version: str, finding: str) -> str:
    """``4.18.0-bkconform-fix-<finding>``: a version per finding's fix, never a release's."""
    return f"{version}-{FIX_SUFFIX}-{finding}"


def bookkeeper_installed_jar(repo: Path, version: str) -> Path:
    return (
        repo
        / "org"
        / "apache"
        / "bookkeeper"
        / "bookkeeper-server"
        / version
        / f"bookkeeper-server-{version}.jar"
    )


def bookkeeper_build_command(mvn: str, repo: Path, pure_rust: bool) -> list[str]:
    """BookKeeper's own build of bookkeeper-server and what it needs, no test run
    (``pure_rust``: native-io without cargo-zigbuild)."""
    rust = [f"-D{PURE_RUST_PROPERTY}=true"] if pure_rust else []
    return install_module_command(mvn, repo, "bookkeeper-server", [*BOOKKEEPER_BUILD_SKIPS, *rust])


def bookkeeper_fix(args: argparse.Namespace, version: str, finding: str) -> FixBuild:
    repo = maven_repo(args)
    patched = bookkeeper_fix_version(version, finding)
    return FixBuild(
        "BookKeeper",
        version,
        bookkeeper_patch_for(version, finding),
        patched,
        args.bookkeeper_mirror,
        bookkeeper_installed_jar(repo, patched),
        # 4.18.0's native-io offers a pure-Rust build; cargo-zigbuild is rarely installed.
        tuple(bookkeeper_build_command(args.mvn, repo, shutil.which("cargo-zigbuild") is None)),
    )


def _native_io_options(source: Path, build: Sequence[str]) -> list[str]:
    """The build without the pure-Rust property when the release's native-io has none."""
    try:
        native_io = (source / "native-io" / "pom.xml").read_text(errors="replace")
    except OSError:
        native_io = ""
    flag = f"-D{PURE_RUST_PROPERTY}=true"
    return [part for part in build if part != flag or PURE_RUST_PROPERTY in native_io]


def build_patched(args: argparse.Namespace, fix: FixBuild, log: Path) -> str:
    """Export ``release-<version>`` from the mirror, apply the patch, install the server module
    as the fix's version into the reproducers' repository: that version."""
    version, patched = fix.version, fix.patched_version
    if not fix.patch.is_file():
        raise VerifyError(
            f"no candidate fix for {fix.product} {version}: {fix.patch.relative_to(ROOT)} "
            "is missing"
        )
    repo = maven_repo(args)
    digest = patch_digest(fix.patch)
    # next to the patched build's jar: the digest of the patch it was built from
    marker = fix.jar.parent / "bkconform-patch.sha256"
    if (
        args.reuse_build
        and fix.jar.is_file()
        and marker.is_file()
        and marker.read_text().strip() == digest
    ):
        with log.open("a") as out:
            out.write(f"reusing {fix.jar} (built from {fix.patch.name})\n")
        return patched
    if not fix.mirror.is_dir():
        raise VerifyError(f"no {fix.product} git mirror at {fix.mirror}")
    tag = f"release-{version}"
    found = _git(fix.mirror, "rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}")
    if found.returncode != 0:
        raise VerifyError(f"the mirror {fix.mirror} has no tag {tag}")
    with scratch_directory() as scratch:
        tar = scratch / "source.tar"
        source = scratch / "source"
        source.mkdir()
        steps: list[tuple[str, list[str], Path, float]] = [
            (
                "export",
                ["git", f"--git-dir={fix.mirror}", "archive", "-o", str(tar), tag],
                scratch,
                300.0,
            ),
            ("extract", ["tar", "-x", "-f", str(tar), "-C", str(source)], scratch, 300.0),
            ("patch", ["git", "apply", "--verbose", str(fix.patch)], source, 60.0),
            (
                "set version",
                set_version_command(args.mvn, repo, patched),
                source,
                args.build_timeout,
            ),
        ]
        # git apply in a directory inside another work tree would patch relative to that tree.
        alone = {"GIT_CEILING_DIRECTORIES": str(scratch)}
        for name, command, cwd, timeout in steps:
            _step(fix, name, command, cwd, log, timeout, alone)
        build = _native_io_options(source, fix.build)
        _step(fix, "build", build, source, log, args.build_timeout, alone)
    if not fix.jar.is_file():
        raise VerifyError(f"{fix.product} {version} fix build: no {fix.jar} after install")
    marker.write_text(digest + "\n")
    return patched


def _step(
    fix: FixBuild,
    name: str,
    command: Sequence[str],
    cwd: Path,
    log: Path,
    timeout: float,
    env: dict[str, str],
) -> None:
    code = run(command, cwd=cwd, log=log, timeout=timeout, env=env)
    if code != 0:
        why = f"timed out after {timeout:.0f} s" if code is None else f"exited {code}"
        raise VerifyError(
            f"{fix.product} {fix.version} fix build: {name} {why} (log: {log}):\n{_tail(log)}"
        )


def verify(args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    for version in args.versions:
        print(f"{version}: the reproducer on the released jars ...", flush=True)
        released = run_reproducer(args, version, version, "released")
        _say(version, "released", released)
        fix: Outcome | None = None
        if args.with_fix:
            log = args.out / f"{version}-fix-build" / "build.log"
            built = build_into(args, zookeeper_fix(args, version), log, version)
            if isinstance(built, Outcome):
                fix = built
            else:
                print(f"{version}: the reproducer on {built} ...", flush=True)
                fix = run_reproducer(args, built, version, "fix")
            _say(version, "with fix", fix)
        rows.append(Row(version, released, fix))
        write_table(args.out, rows)
    return rows


def _say(version: str, variant: str, outcome: Outcome) -> None:
    print(f"{version} {variant}: {outcome.result} ({outcome.seconds:.0f} s) {outcome.detail}")
    for name, message in outcome.failures.items():
        print(f"    {name}: {message}")


def write_bookkeeper_table(out: Path, rows: Sequence[FindingRow]) -> None:
    records = [
        {**dataclasses.asdict(row), "counts": row.counts(), "as_expected": row.as_expected()}
        for row in rows
    ]
    _write_tables(out, "table-bookkeeper", render_bookkeeper_table(rows), records)


def render_tables(
    rows: Sequence[Row],
    bookkeeper_rows: Sequence[FindingRow],
    fix_rows: Sequence[FixRow] = (),
) -> str:
    """The ZooKeeper table (when it ran), then the BookKeeper one and its fixes' (when they
    ran)."""
    parts = []
    if rows:
        parts.append(
            "ZooKeeper:\n\n" + render_table(rows) if bookkeeper_rows else render_table(rows)
        )
    if bookkeeper_rows:
        parts.append("BookKeeper:\n\n" + render_bookkeeper_table(bookkeeper_rows))
    if fix_rows:
        parts.append(
            "BookKeeper, each candidate fix on its own:\n\n" + render_bookkeeper_fix_table(fix_rows)
        )
    return "\n".join(parts)


def write_table(out: Path, rows: Sequence[Row]) -> None:
    records = [{**dataclasses.asdict(row), "as_expected": row.as_expected()} for row in rows]
    _write_tables(out, "table", render_table(rows), records)


def _stop_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as an interrupt: the running Maven call's group is killed on the way out."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # run as a script: a signal must not leave Maven and its JVMs behind
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        # started in the background by a shell, SIGINT would be ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # argparse's own exit: 2 on bad options, 0 on --help
        return int(e.code or 0)
    args.out = args.out.resolve()  # Maven runs in the reproducer's directory
    if args.reuse_build and not args.with_fix:
        print("findings_verify: --reuse-build needs --with-fix", file=sys.stderr)
        return 2
    try:
        check_tools(args, args.with_fix)
    except VerifyError as e:
        print(f"findings_verify: {e}", file=sys.stderr)
        return 2
    rows = verify(args) if runs_zookeeper(args) else []
    bookkeeper_rows = verify_bookkeeper(args) if runs_bookkeeper(args) else []
    fix_rows = verify_bookkeeper_fixes(args) if runs_bookkeeper(args) and args.with_fix else []
    tables = render_tables(rows, bookkeeper_rows, fix_rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.md").write_text(tables)
    print()
    print(tables, end="")
    print(f"(also in {args.out / 'table.md'})")
    return exit_code(rows, bookkeeper_rows, fix_rows)


if __name__ == "__main__":
    sys.exit(main())

"""Coverage of the real BookKeeper client, measured with JaCoCo (issue 29).

The client's JVM runs with JaCoCo's agent and its execution data is dumped once per example
(:mod:`adapters.javaclient.jacoco_agent`; the jars are installed from Maven Central by
:mod:`adapters.installations.jacoco`). That data, JaCoCo's exec format, is read and merged in
Python (:mod:`adapters.javaclient.jacoco_exec`), so the run's cumulative data costs no JVM.
Lines and branches need the class files' analysis, which only JaCoCo does: :func:`coverage_of`
runs JaCoCo's CLI (:mod:`adapters.javaclient.jacoco_cli`) on the classes of the release's
``bookkeeper-server`` jar that the coverage is about, and reads its XML into a
:class:`ClientCoverage`: line and branch counters per :data:`UNITS` (the source files of
``LedgerHandle``, ``PendingAddOp``, ``LedgerRecoveryOp``, ``ReadLastConfirmedOp``, and the
ensemble change) and in total. This module is what the coverage is about and what it means:
the units, the tracked classes, the report, what is new.

Counters are not mergeable (two examples covering 3 of 4 branches of one line may cover all
four together): merging is done on the execution data, and a :class:`ClientCoverage` is
always the report of some data. :class:`CoverageTracker` keeps the run's merged data and says
what each example covered **for the first time** (:class:`NewCoverage`, whose ``score`` the
search gives ``hypothesis.target()``): the probes of the tracked classes that no example hit
before, counted in the Python merge. Each of JaCoCo's probes marks an edge of a method's
control flow as taken, so a probe first hit is code first run; the CLI (a JVM, 0.2 s idle
and 0.5-1 s on a loaded machine, a run on the whole merged data) runs once per run, for its
report (:attr:`CoverageTracker.total`), not per example (the profile's item 5,
``benchmarks/profiles/java-client-example-2026-11-30.md``).

::

    jacoco = adapters.installations.jacoco.install()
    flag = jvm_agent_flag(jacoco)                    # JvmOptions(extra_flags=[..., flag])
    tracker = CoverageTracker(jacoco, server_jar(bookkeeper_home), work_dir=run_dir / "coverage")
    reset(gateway)                                   # the client's start-up is no example's
    new = tracker.add(dump(gateway))                 # after each example: probes first hit
    hypothesis.target(new.score, label="new client coverage")
    results["client_coverage"] = tracker.total.as_dict()   # the CLI, once
    (run_dir / "jacoco.exec").write_bytes(tracker.exec_bytes)

(``jvm_agent_flag``, ``dump`` and ``reset`` are :mod:`adapters.javaclient.jacoco_agent`'s.)
"""

from __future__ import annotations

import shutil
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.installations.jacoco import JacocoInstallation
from adapters.javaclient.distribution import distribution_version
from adapters.javaclient.jacoco_cli import DEFAULT_CLI_TIMEOUT, extract_classes, run_report
from adapters.javaclient.jacoco_exec import ExecData
from conformance.errors import ConformanceError

#: The package every tracked class is in (JVM form).
PACKAGE = "org/apache/bookkeeper/client"


class CoverageError(ConformanceError):
    """Coverage could not be measured: JaCoCo's XML report does not parse, or the distribution
    has no ``bookkeeper-server`` jar. (JaCoCo's own failures, an agent missing from the JVM,
    unreadable execution data, the CLI failing, are :class:`adapters.javaclient.errors.JacocoError`,
    a Java-client error, an infrastructure error as this is.)"""


# -- what is measured ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """A part of the client whose coverage is reported.

    ``sources``: whole source files of :data:`PACKAGE` (``"LedgerHandle.java"``: the class,
    its inner and anonymous classes and its lambdas). ``methods``: ``(class, method)`` pairs of
    :data:`PACKAGE` (``class`` a simple name, ``LedgerHandle``); a method ending in ``$`` is a
    prefix, for the lambdas javac names ``lambda$<method>$<n>``. A method's lines are JaCoCo's
    per-method counters, summed: a line shared by a one-line lambda and its method counts twice.
    """

    name: str
    sources: tuple[str, ...] = ()
    methods: tuple[tuple[str, str], ...] = ()

    def has_method(self, class_name: str, method: str) -> bool:
        simple = class_name.rsplit("/", 1)[-1]
        return any(
            simple == owner and (method == name or (name.endswith("$") and method.startswith(name)))
            for owner, name in self.methods
        )


#: The ensemble change of 4.11 to 4.17 (the same methods in both): an add that fails at a bookie
#: marks it failed (``notifyWriteFailed``, 4.17; ``maybeHandleDelayedWriteBookieFailure`` after
#: each add), ``handleBookieFailure`` starts the change, ``ensembleChangeLoop`` replaces the
#: bookies (``EnsembleUtils.replaceBookiesInEnsemble``) and writes the metadata in a
#: ``MetadataUpdateLoop`` (its lambdas), then the pending adds are sent again to the new bookies
#: (``unsetSuccessAndSendWriteRequest`` of the handle and of each ``PendingAddOp``).
#: ``MetadataUpdateLoop`` itself is left out: closing and recovery use it too.
#: ``LedgerMetadataUtils`` too: its helpers (the current ensemble ...) serve every operation.
ENSEMBLE_CHANGE = Unit(
    "ensemble change",
    sources=("EnsembleUtils.java",),
    methods=(
        ("LedgerHandle", "notifyWriteFailed"),
        ("LedgerHandle", "maybeHandleDelayedWriteBookieFailure"),
        ("LedgerHandle", "handleBookieFailure"),
        ("LedgerHandle", "lambda$handleBookieFailure$"),
        ("LedgerHandle", "ensembleChangeLoop"),
        ("LedgerHandle", "lambda$ensembleChangeLoop$"),
        ("LedgerHandle", "unsetSuccessAndSendWriteRequest"),
        ("PendingAddOp", "unsetSuccessAndSendWriteRequest"),
    ),
)
UNITS: tuple[Unit, ...] = (
    Unit("LedgerHandle", sources=("LedgerHandle.java",)),
    Unit("PendingAddOp", sources=("PendingAddOp.java",)),
    Unit("LedgerRecoveryOp", sources=("LedgerRecoveryOp.java",)),
    Unit("ReadLastConfirmedOp", sources=("ReadLastConfirmedOp.java",)),
    ENSEMBLE_CHANGE,
)
#: The source files the units are in: the total counts each of their lines once.
TRACKED_SOURCES: tuple[str, ...] = tuple(
    dict.fromkeys(source for unit in UNITS for source in unit.sources)
)
_TRACKED_TOP_CLASSES = frozenset(source.removesuffix(".java") for source in TRACKED_SOURCES)


def is_tracked_class(name: str) -> bool:
    """Whether the class ``name`` (JVM form, ``org/apache/bookkeeper/client/LedgerHandle$3``) is
    one of :data:`TRACKED_SOURCES`' (a class's source is its top-level class's, here)."""
    package, _, simple = name.rpartition("/")
    return package == PACKAGE and simple.split("$", 1)[0] in _TRACKED_TOP_CLASSES


# -- the report ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counter:
    """JaCoCo's counter: how many items (lines, branches) ran and how many did not."""

    covered: int = 0
    missed: int = 0

    @property
    def total(self) -> int:
        return self.covered + self.missed

    @property
    def ratio(self) -> float | None:
        """covered / total; None when there is nothing to cover (the code is not there)."""
        return self.covered / self.total if self.total else None

    def __add__(self, other: Counter) -> Counter:
        return Counter(self.covered + other.covered, self.missed + other.missed)

    def as_dict(self) -> dict[str, int]:
        return {"covered": self.covered, "missed": self.missed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Counter:
        return cls(int(data["covered"]), int(data["missed"]))

    def __str__(self) -> str:
        ratio = self.ratio
        share = "-" if ratio is None else f"{100 * ratio:.1f}%"
        return f"{self.covered}/{self.total} {share}"


@dataclass(frozen=True)
class UnitCoverage:
    """Line and branch counters of one :class:`Unit` (or of the total)."""

    name: str
    lines: Counter = Counter()
    branches: Counter = Counter()

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {"lines": self.lines.as_dict(), "branches": self.branches.as_dict()}


@dataclass(frozen=True)
class ClientCoverage:
    """The client's coverage for some execution data: each unit's counters and the total (each
    line of the tracked source files counted once)."""

    units: tuple[UnitCoverage, ...]
    total: UnitCoverage

    def unit(self, name: str) -> UnitCoverage:
        for unit in self.units:
            if unit.name == name:
                return unit
        raise KeyError(name)

    def as_dict(self) -> dict[str, Any]:
        """For ``results.json``: ``{"units": {name: {"lines": {"covered", "missed"},
        "branches": ...}}, "total": {...}}``."""
        return {
            "units": {unit.name: unit.as_dict() for unit in self.units},
            "total": self.total.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientCoverage:
        """What :meth:`as_dict` wrote (a report reads a run's ``results.json`` back)."""

        def unit(name: str, counters: Mapping[str, Any]) -> UnitCoverage:
            return UnitCoverage(
                name,
                Counter.from_dict(counters["lines"]),
                Counter.from_dict(counters["branches"]),
            )

        units = tuple(unit(name, counters) for name, counters in data["units"].items())
        return cls(units, unit("total", data["total"]))

    def table(self) -> str:
        """A plain-text table: unit, lines, branches (covered/total and %)."""
        rows = [("", "lines", "branches")]
        rows += [(u.name, str(u.lines), str(u.branches)) for u in (*self.units, self.total)]
        width = [max(len(row[i]) for row in rows) for i in range(3)]
        return "\n".join(
            f"{row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]:>{width[2]}}" for row in rows
        )


@dataclass(frozen=True)
class NewCoverage:
    """The probes of the tracked code an example hit for the first time in the run (JaCoCo's
    probes: each marks an edge of a method's control flow as taken; counted in the Python
    merge)."""

    probes: int = 0

    @property
    def score(self) -> float:
        """For ``hypothesis.target(score, label=...)``: the probes first hit."""
        return float(self.probes)

    def as_dict(self) -> dict[str, Any]:
        return {"probes": self.probes}


def parse_report(xml: str | bytes, units: Iterable[Unit] = UNITS) -> ClientCoverage:
    """A :class:`ClientCoverage` from JaCoCo's XML report. A unit whose code the report does
    not have (a release without it) has empty counters."""
    try:
        root = ElementTree.fromstring(xml)  # expat never fetches the report's external DTD
    except ElementTree.ParseError as exc:
        raise CoverageError(f"JaCoCo's XML report does not parse: {exc}") from exc
    sources: dict[str, UnitCoverage] = {}
    methods: list[tuple[str, str, UnitCoverage]] = []
    for package in root.iter("package"):
        if package.get("name") != PACKAGE:
            continue
        for element in package.findall("sourcefile"):
            name = element.get("name", "")
            sources[name] = _counters(name, element)
        for klass in package.findall("class"):
            class_name = klass.get("name", "")
            for method in klass.findall("method"):
                method_name = method.get("name", "")
                methods.append((class_name, method_name, _counters(method_name, method)))
    found = []
    for unit in units:
        lines, branches = Counter(), Counter()
        for source in unit.sources:
            counted = sources.get(source, UnitCoverage(source))
            lines, branches = lines + counted.lines, branches + counted.branches
        for class_name, method_name, counted in methods:
            if unit.has_method(class_name, method_name):
                lines, branches = lines + counted.lines, branches + counted.branches
        found.append(UnitCoverage(unit.name, lines, branches))
    total_lines, total_branches = Counter(), Counter()
    for name in dict.fromkeys(source for unit in units for source in unit.sources):
        counted = sources.get(name, UnitCoverage(name))
        total_lines, total_branches = total_lines + counted.lines, total_branches + counted.branches
    return ClientCoverage(tuple(found), UnitCoverage("total", total_lines, total_branches))


def _counters(name: str, element: ElementTree.Element) -> UnitCoverage:
    """An element's own LINE and BRANCH counters (JaCoCo writes none for a zero total)."""
    found = {"LINE": Counter(), "BRANCH": Counter()}
    for counter in element.findall("counter"):
        kind = counter.get("type", "")
        if kind in found:
            found[kind] = Counter(int(counter.get("covered", 0)), int(counter.get("missed", 0)))
    return UnitCoverage(name, found["LINE"], found["BRANCH"])


# -- the class files and the CLI ----------------------------------------------------------------


def server_jar(bookkeeper_home: Path) -> Path:
    """The ``bookkeeper-server`` jar of a distribution: the client's class files."""
    version = distribution_version(bookkeeper_home)
    for jar in (
        bookkeeper_home / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar",
        bookkeeper_home / f"bookkeeper-server-{version}.jar",
    ):
        if jar.is_file():
            return jar
    raise CoverageError(f"{bookkeeper_home} has no bookkeeper-server-{version} jar")


def coverage_of(
    exec_data: bytes | Path,
    classfiles: Path,
    jacoco: JacocoInstallation,
    *,
    java: str | None = None,
    timeout: float = DEFAULT_CLI_TIMEOUT,
    work_dir: Path | None = None,
) -> ClientCoverage:
    """The client's coverage for ``exec_data`` (exec bytes, or an exec file). ``classfiles``:
    the release's ``bookkeeper-server`` jar (its tracked classes are extracted) or a directory
    :func:`extract_classes` made. ``work_dir``: where the files go (default a temporary one)."""
    with tempfile.TemporaryDirectory(prefix="bkconform-coverage-") as scratch:
        where = Path(scratch) if work_dir is None else work_dir
        where.mkdir(parents=True, exist_ok=True)
        if isinstance(exec_data, Path):
            exec_path = exec_data
        else:
            exec_path = where / "coverage.exec"
            exec_path.write_bytes(exec_data)
        if classfiles.is_file():
            classes = where / "classes"
            shutil.rmtree(classes, ignore_errors=True)
            classfiles = extract_classes(classfiles, classes, is_tracked_class)
        xml = run_report(exec_path, classfiles, where / "coverage.xml", jacoco, java=java,
                         timeout=timeout)  # fmt: skip
        return parse_report(xml)


#: What turns merged execution data into coverage (the CLI; a test gives its own).
Measure = Callable[[bytes], ClientCoverage]


class CoverageTracker:
    """The run's coverage, example by example: its merged execution data, what each example
    covered first (:meth:`add`: probes, counted in Python, no JVM), and the coverage of all the
    data (:attr:`total`: lines and branches, the CLI's report, measured when asked, once per
    run at its end).

    One per session (one release: the class files must be those the JVM runs).
    """

    def __init__(
        self,
        jacoco: JacocoInstallation,
        classfiles: Path,
        *,
        work_dir: Path,
        java: str | None = None,
        timeout: float = DEFAULT_CLI_TIMEOUT,
        measure: Measure | None = None,
    ) -> None:
        self.work_dir = work_dir
        work_dir.mkdir(parents=True, exist_ok=True)
        if measure is None:
            classes = classfiles
            if classfiles.is_file():  # extracted once, not at every report
                classes = extract_classes(classfiles, work_dir / "classes", is_tracked_class)

            def measure(data: bytes) -> ClientCoverage:
                return coverage_of(
                    data, classes, jacoco, java=java, timeout=timeout, work_dir=work_dir
                )

        self._measure = measure
        self.data = ExecData()
        self.examples = 0
        self._total: ClientCoverage | None = None

    @property
    def exec_bytes(self) -> bytes:
        """The run's merged execution data (``jacoco.exec`` of the run directory)."""
        return self.data.to_bytes()

    @property
    def total(self) -> ClientCoverage:
        """The coverage of everything added so far (the CLI's report; measured when first asked
        after the data last grew)."""
        if self._total is None:
            self._total = self._measure(self.exec_bytes)
        return self._total

    def add(self, exec_bytes: bytes) -> NewCoverage:
        """Merge one example's execution data; the tracked probes it hit for the first time."""
        example = ExecData.parse(exec_bytes)
        probes = self.data.new_hits(example, is_tracked_class)
        self.examples += 1
        self.data = self.data.merged(example)
        if probes:
            self._total = None  # the report no longer covers the data
        return NewCoverage(probes)


__all__ = [
    "ENSEMBLE_CHANGE",
    "TRACKED_SOURCES",
    "UNITS",
    "ClientCoverage",
    "Counter",
    "CoverageError",
    "CoverageTracker",
    "NewCoverage",
    "Unit",
    "UnitCoverage",
    "coverage_of",
    "is_tracked_class",
    "parse_report",
    "server_jar",
]

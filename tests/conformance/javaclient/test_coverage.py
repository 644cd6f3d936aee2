"""Coverage of the real client: the tracked classes; JaCoCo's XML report read into units; what is
new; the tracked class files given to the CLI (a fake ``java``); the tracker (fast, no JVM); and
the real client of the default release under the agent, against real bookies (cluster).
JaCoCo's exec format, agent flag and CLI are tested in tests/adapters/javaclient/."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from adapters.installations.jacoco import JacocoInstallation
from adapters.javaclient.errors import JacocoError
from adapters.javaclient.jacoco_agent import jvm_agent_flag
from adapters.javaclient.jacoco_exec import ClassProbes, ExecData, merge_exec
from conformance.javaclient.coverage import (
    ENSEMBLE_CHANGE,
    ClientCoverage,
    Counter,
    CoverageError,
    CoverageTracker,
    NewCoverage,
    UnitCoverage,
    coverage_of,
    is_tracked_class,
    parse_report,
)

LH = "org/apache/bookkeeper/client/LedgerHandle"
PAO = "org/apache/bookkeeper/client/PendingAddOp"


# -- what is tracked ----------------------------------------------------------------------------


def test_tracked_classes() -> None:
    assert is_tracked_class(LH) and is_tracked_class(f"{LH}$3") and is_tracked_class(PAO)
    assert is_tracked_class("org/apache/bookkeeper/client/EnsembleUtils")
    assert not is_tracked_class(f"{LH}Adv")
    assert not is_tracked_class("org/apache/bookkeeper/client/api/LedgerHandle")
    assert not is_tracked_class("org/apache/bookkeeper/client/MetadataUpdateLoop")


# -- the XML report -----------------------------------------------------------------------------


def counters(lines: tuple[int, int], branches: tuple[int, int] | None = None) -> str:
    """JaCoCo's counter elements (missed, covered); none for a zero total, as JaCoCo writes."""
    found = f'<counter type="INSTRUCTION" missed="9" covered="9"/><counter type="LINE" missed="{lines[0]}" covered="{lines[1]}"/>'  # noqa: E501
    if branches is not None:
        found = f'<counter type="BRANCH" missed="{branches[0]}" covered="{branches[1]}"/>' + found
    return found


def method(name: str, lines: tuple[int, int], branches: tuple[int, int] | None = None) -> str:
    return f'<method name="{name}" desc="()V" line="1">{counters(lines, branches)}</method>'


REPORT = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<!DOCTYPE report PUBLIC "-//JACOCO//DTD Report 1.1//EN" "report.dtd">
<report name="bkconform"><sessioninfo id="vm-1" start="1" dump="2"/>
<package name="org/apache/bookkeeper/client">
  <class name="{LH}" sourcefilename="LedgerHandle.java">
    {method("addEntry", (1, 9), (2, 2))}
    {method("handleBookieFailure", (10, 2), (4, 0))}
    {method("lambda$handleBookieFailure$8", (1, 0))}
    {method("ensembleChangeLoop", (5, 0), (2, 0))}
    {method("lambda$ensembleChangeLoop$11", (7, 0), (6, 0))}
    {method("handleBookieFailureNot", (100, 100))}
    {counters((24, 111), (14, 2))}
  </class>
  <class name="{LH}$3" sourcefilename="LedgerHandle.java">
    {method("run", (1, 1))}
  </class>
  <class name="{PAO}" sourcefilename="PendingAddOp.java">
    {method("unsetSuccessAndSendWriteRequest", (6, 0), (4, 0))}
    {method("initiate", (0, 8), (1, 3))}
  </class>
  <class name="org/apache/bookkeeper/client/EnsembleUtils" sourcefilename="EnsembleUtils.java">
    {method("replaceBookiesInEnsemble", (30, 0), (16, 0))}
  </class>
  <sourcefile name="LedgerHandle.java"><line nr="1" mi="0" ci="3" mb="0" cb="0"/>
    {counters((700, 130), (290, 30))}</sourcefile>
  <sourcefile name="PendingAddOp.java">{counters((90, 110), (60, 28))}</sourcefile>
  <sourcefile name="EnsembleUtils.java">{counters((34, 0), (16, 0))}</sourcefile>
  <sourcefile name="ReadLastConfirmedOp.java">{counters((56, 0))}</sourcefile>
</package>
<package name="org/apache/bookkeeper/client/api">
  <sourcefile name="LedgerHandle.java">{counters((1000, 1000), (1000, 1000))}</sourcefile>
</package>
</report>"""


def test_the_report_is_read_into_units() -> None:
    found = parse_report(REPORT)
    assert found.unit("LedgerHandle") == UnitCoverage(
        "LedgerHandle", Counter(130, 700), Counter(30, 290)
    )
    assert found.unit("PendingAddOp") == UnitCoverage(
        "PendingAddOp", Counter(110, 90), Counter(28, 60)
    )
    # No branches in the report: an empty counter. A file the release lacks: empty counters.
    assert found.unit("ReadLastConfirmedOp").branches == Counter()
    assert found.unit("LedgerRecoveryOp") == UnitCoverage("LedgerRecoveryOp")
    assert found.unit("LedgerRecoveryOp").lines.ratio is None
    # The ensemble change: EnsembleUtils.java whole, and its methods of LedgerHandle and
    # PendingAddOp (lambdas by prefix; another method whose name only starts alike is out).
    ensemble = found.unit(ENSEMBLE_CHANGE.name)
    assert ensemble.lines == Counter(0 + 2 + 0 + 0 + 0 + 0, 34 + 10 + 1 + 5 + 7 + 6)
    assert ensemble.branches == Counter(0, 16 + 4 + 2 + 6 + 4)
    # The total counts each line of the tracked files once (the other package's is out).
    assert found.total == UnitCoverage("total", Counter(240, 880), Counter(58, 366))
    assert found.total.lines.ratio == pytest.approx(240 / 1120)
    with pytest.raises(KeyError):
        found.unit("BookKeeper")


def test_an_unreadable_report_is_a_clear_error() -> None:
    with pytest.raises(CoverageError, match="does not parse"):
        parse_report("<report>")


def test_coverage_round_trips_through_its_dict_and_prints_a_table() -> None:
    found = parse_report(REPORT)
    data = found.as_dict()
    assert data["units"]["LedgerHandle"] == {
        "lines": {"covered": 130, "missed": 700},
        "branches": {"covered": 30, "missed": 290},
    }
    assert ClientCoverage.from_dict(data) == found
    table = found.table().splitlines()
    assert table[1].split() == ["LedgerHandle", "130/830", "15.7%", "30/320", "9.4%"]
    assert table[3].split()[-2:] == ["0/0", "-"]
    assert table[-1].startswith("total")


def test_new_coverage_is_the_probes_first_hit() -> None:
    assert NewCoverage().score == 0.0
    assert NewCoverage(3).score == 3.0 and NewCoverage(3).as_dict() == {"probes": 3}


# -- the class files and the CLI ----------------------------------------------------------------


@pytest.fixture
def fake_jacoco(tmp_path: Path) -> JacocoInstallation:
    install = JacocoInstallation("0.8.15", tmp_path / "jacoco", "t")
    install.home.mkdir()
    install.agent_jar.write_bytes(b"PK")
    install.cli_jar.write_bytes(b"PK")
    return install


FAKE_JAVA = """\
#!{python}
import sys
from pathlib import Path
args = sys.argv[1:]
Path(args[args.index("--xml") + 1]).write_text({report!r})
"""


def test_the_cli_reports_on_the_tracked_class_files(
    fake_jacoco: JacocoInstallation, tmp_path: Path
) -> None:
    """coverage_of extracts the tracked classes of the server jar, runs the CLI on them (a fake
    java writing REPORT) and reads its report into units."""
    java = tmp_path / "java"
    java.write_text(FAKE_JAVA.format(python=sys.executable, report=REPORT))
    java.chmod(0o755)
    jar = tmp_path / "server.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        for name in [f"{LH}.class", f"{LH}$1.class", f"{LH}Adv.class", f"{PAO}.class", "x.txt"]:
            archive.writestr(name, b"\xca\xfe")
    data = ExecData((), {1: ClassProbes(1, LH, (True,))}).to_bytes()
    work = tmp_path / "work"
    found = coverage_of(data, jar, fake_jacoco, java=str(java), work_dir=work)
    assert found == parse_report(REPORT)
    assert (work / "coverage.exec").read_bytes() == data
    classes = work / "classes"
    extracted = sorted(str(p.relative_to(classes)) for p in classes.rglob("*.class"))
    assert extracted == [f"{LH}$1.class", f"{LH}.class", f"{PAO}.class"]


# -- the tracker --------------------------------------------------------------------------------


def test_the_tracker_counts_new_tracked_probes_and_reports_once(
    fake_jacoco: JacocoInstallation, tmp_path: Path
) -> None:
    """``add`` counts the tracked probes first hit with no report; the report (here: a
    tracked class's hit probes counted as its lines) is made when ``total`` is asked, once
    until the data grows."""
    measured: list[ExecData] = []

    def measure(raw: bytes) -> ClientCoverage:
        data = ExecData.parse(raw)
        measured.append(data)
        hits = data.hits(is_tracked_class)
        unit = UnitCoverage("LedgerHandle", Counter(hits, 10 - hits))
        return ClientCoverage((unit,), UnitCoverage("total", unit.lines))

    tracker = CoverageTracker(fake_jacoco, tmp_path, work_dir=tmp_path / "w", measure=measure)
    untracked = ClassProbes(7, "org/apache/bookkeeper/client/BookKeeper", (True,))

    def example(*probes: bool) -> bytes:
        return ExecData((), {1: ClassProbes(1, LH, probes), 7: untracked}).to_bytes()

    assert tracker.add(example(True, False, False)) == NewCoverage(1)
    assert tracker.add(example(True, False, False)) == NewCoverage(0)  # nothing new
    assert tracker.add(example(True, True, False)) == NewCoverage(1)  # one of two is new
    assert measured == [] and tracker.examples == 3  # no report per example
    assert tracker.total.total.lines == Counter(2, 8)
    assert tracker.total.total.lines == Counter(2, 8) and len(measured) == 1  # kept
    assert tracker.add(example(False, False, False)) == NewCoverage(0)
    assert tracker.total.total.lines == Counter(2, 8) and len(measured) == 1  # still kept
    assert tracker.add(example(False, False, True)) == NewCoverage(1)
    assert tracker.total.total.lines == Counter(3, 7) and len(measured) == 2  # measured again
    assert ExecData.parse(tracker.exec_bytes).classes[1].probes == (True, True, True)


def test_the_tracker_counts_no_untracked_probe(
    fake_jacoco: JacocoInstallation, tmp_path: Path
) -> None:
    tracker = CoverageTracker(
        fake_jacoco, tmp_path, work_dir=tmp_path / "w", measure=lambda raw: parse_report(REPORT)
    )
    other = ExecData((), {7: ClassProbes(7, "org/apache/bookkeeper/client/BookKeeper", (True,))})
    assert tracker.add(other.to_bytes()) == NewCoverage(0)
    assert tracker.add(ExecData((), {1: ClassProbes(1, LH, (True,))}).to_bytes()) == NewCoverage(1)
    assert 7 in tracker.data.classes  # merged all the same: jacoco.exec has everything


# -- the real client ----------------------------------------------------------------------------


@pytest.mark.cluster
def test_the_real_client_s_coverage(tmp_path: Path, bookkeeper_home: Path) -> None:
    """The default release's client in a JVM with JaCoCo's agent, against three real bookies:
    create a ledger, add an entry, close it; the dump covers LedgerHandle and PendingAddOp, not
    the recovery; a second such example adds less; the CLI reads the Python merge."""
    from adapters.cluster import LocalCluster, LocalClusterOptions
    from adapters.installations.jacoco import install
    from adapters.javaclient import (
        BookKeeperJavaClient,
        ClientOptions,
        JavaDigestType,
        JvmGateway,
        JvmOptions,
    )
    from adapters.javaclient.jacoco_agent import dump, reset
    from conformance.javaclient.coverage import server_jar

    jacoco = install()
    jar = server_jar(bookkeeper_home)
    tracker = CoverageTracker(jacoco, jar, work_dir=tmp_path / "coverage")
    options = LocalClusterOptions(
        bookies=3, work_dir=tmp_path / "cluster", bookkeeper_home=bookkeeper_home
    )
    jvm = JvmOptions(log_path=tmp_path / "jvm.log", extra_flags=[jvm_agent_flag(jacoco)])
    dumps = []
    with LocalCluster(options) as cluster:
        client_options = ClientOptions(cluster.endpoints().metadata_service_uri)
        with BookKeeperJavaClient.launch(
            client_options, bookkeeper_home=bookkeeper_home, jvm_options=jvm
        ) as client:
            reset(client.gateway)
            for _ in range(2):
                ledger = client.create_ledger(3, 3, 2, JavaDigestType.CRC32, b"pw")
                assert ledger.add_entry(b"e0") == 0
                ledger.close()
                dumps.append(dump(client.gateway))
    first, second = (tracker.add(data) for data in dumps)
    alone = coverage_of(dumps[0], jar, jacoco)
    for name in ("LedgerHandle", "PendingAddOp"):
        assert alone.unit(name).lines.covered > 0 and alone.unit(name).branches.covered > 0
    assert alone.unit("LedgerRecoveryOp").lines.covered == 0
    assert alone.unit("LedgerRecoveryOp").lines.total > 0
    assert first.probes > 0 and second.probes < first.probes
    assert tracker.total == coverage_of(merge_exec(*dumps), jar, jacoco)
    print(f"\none create/add/close on {bookkeeper_home.name}:\n{alone.table()}")

    # A JVM without the agent says so.
    with (
        JvmGateway(JvmOptions(log_path=tmp_path / "plain.log")) as plain,
        pytest.raises(JacocoError, match="without the JaCoCo agent"),
    ):
        dump(plain)

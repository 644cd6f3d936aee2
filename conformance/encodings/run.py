"""``bkconform encodings compare``'s work: capture each release (or load saved captures),
compare every later release with the first, check who reads whose metadata, and report.

Live, one release's cluster at a time (the machine runs one cluster of ours at a time): each
capture stops everything it started before the next begins (:func:`.live.capture_release`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kazoo.exceptions import KazooException

from adapters.cluster.scratch import scratch_parent
from adapters.errors import AdapterError
from adapters.installations.zookeeper import ZooKeeperInstall
from conformance.encodings.captures import ReleaseCapture, load_capture, save_capture
from conformance.encodings.compare import compare_captures
from conformance.encodings.live import CaptureOptions, capture_release
from conformance.encodings.metadata_reads import reader_checks, shell_checks
from conformance.encodings.report import EncodingsReport
from conformance.javaclient.run import java_client_system
from conformance.javaclient.session import INFRASTRUCTURE_ERRORS

CAPTURES_DIR = "captures"
#: What makes a capture fail without a verdict: the cluster, the JVM, the proxies, ZooKeeper,
#: a shell, a socket.
CAPTURE_ERRORS: tuple[type[Exception], ...] = (
    *INFRASTRUCTURE_ERRORS,
    AdapterError,
    KazooException,
    OSError,
)


@dataclass(frozen=True)
class LiveSettings:
    homes: Mapping[str, Path]
    out: Path
    zookeeper: ZooKeeperInstall | None = None


def capture_all(
    settings: LiveSettings, report: EncodingsReport, say: Callable[[str], None]
) -> list[ReleaseCapture]:
    """Capture every release in turn; a failed capture is recorded in ``report.errors``."""
    captures = []
    parent = scratch_parent()
    report.storage = (
        f"cluster data on {'tmpfs ' + str(parent) if parent is not None else 'the system temp dir'}"
        " (adapters/cluster/scratch.py), deleted after each capture"
    )
    for version, home in settings.homes.items():
        report.systems[version] = java_client_system(home, version, settings.zookeeper).render()
        try:
            capture = capture_release(
                CaptureOptions(
                    bookkeeper_home=home,
                    log_dir=settings.out / "logs" / version,
                    readers=settings.homes,
                    zookeeper=settings.zookeeper,
                ),
                say,
            )
        except CAPTURE_ERRORS as exc:
            report.errors.append(f"the capture of {version} failed: {exc}")
            say(f"[{version}] capture failed: {exc}")
            continue
        save_capture(capture, settings.out / CAPTURES_DIR)
        captures.append(capture)
    return captures


def load_all(
    versions: Sequence[str], directories: Sequence[Path], report: EncodingsReport
) -> list[ReleaseCapture]:
    """Each version's capture from the first directory that holds it."""
    captures = []
    for version in versions:
        for directory in directories:
            if (directory / f"v3_session_{version}.jsonl").is_file():
                capture = load_capture(directory, version)
                captures.append(capture)
                report.systems[version] = f"saved capture in {directory}"
                break
        else:
            report.errors.append(
                f"no capture of {version} in {', '.join(str(d) for d in directories)}"
            )
    return captures


def judge(captures: Sequence[ReleaseCapture], report: EncodingsReport) -> EncodingsReport:
    """Compare every capture with the first, and check the metadata reads of each."""
    if captures:
        baseline = captures[0]
        for candidate in captures[1:]:
            report.comparisons.append(compare_captures(baseline, candidate))
    for capture in captures:
        report.reader_checks += reader_checks(capture)
        report.shell_checks += shell_checks(capture)
    if len(captures) < 2:
        report.errors.append(f"{len(captures)} capture(s): a comparison needs two releases")
    return report


__all__ = ["CAPTURES_DIR", "LiveSettings", "capture_all", "judge", "load_all"]

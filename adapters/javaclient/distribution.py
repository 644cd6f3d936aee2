"""A BookKeeper binary distribution as the Java client sees it: its version and classpath.

The version is read from the server jar's file name, which every binary distribution ships:
``lib/org.apache.bookkeeper-bookkeeper-server-<version>.jar`` (or ``bookkeeper-server-<version>
.jar`` at the top of the distribution). No JVM is started to find it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from adapters.javaclient.errors import DistributionError

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:[-.]([0-9A-Za-z.-]+))?$")
_SERVER_JAR = re.compile(
    r"^(?:org\.apache\.bookkeeper-)?bookkeeper-server-(\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.-]+)?)\.jar$"
)


@dataclass(frozen=True, order=True)
class BookKeeperVersion:
    """``major.minor.patch`` (a ``-SNAPSHOT``-like suffix is kept but does not order)."""

    major: int
    minor: int
    patch: int
    suffix: str = ""

    @classmethod
    def parse(cls, text: str) -> BookKeeperVersion:
        """``"4.17.4"`` -> ``BookKeeperVersion(4, 17, 4)``; :class:`DistributionError` if not."""
        found = _VERSION.match(text.strip())
        if found is None:
            raise DistributionError(
                f"not a BookKeeper version: {text!r} (expected major.minor.patch, e.g. 4.17.4)"
            )
        major, minor, patch, suffix = found.groups()
        return cls(int(major), int(minor), int(patch), suffix or "")

    def __str__(self) -> str:
        base = f"{self.major}.{self.minor}.{self.patch}"
        return f"{base}-{self.suffix}" if self.suffix else base


def _server_jars(home: Path) -> list[tuple[Path, str]]:
    found = []
    for directory in (home / "lib", home):
        if directory.is_dir():
            for jar in sorted(directory.iterdir()):
                match = _SERVER_JAR.match(jar.name)
                if match is not None:
                    found.append((jar, match.group(1)))
    return found


def distribution_version(home: Path) -> BookKeeperVersion:
    """The version of the distribution unpacked at ``home`` (from its server jar's name).

    :raises DistributionError: no server jar, or jars of different versions.
    """
    jars = _server_jars(home)
    if not jars:
        raise DistributionError(
            f"{home} has no bookkeeper-server jar in lib/ (expected "
            "lib/org.apache.bookkeeper-bookkeeper-server-<version>.jar); point BOOKKEEPER_HOME "
            "at an unpacked bookkeeper-server-X.Y.Z-bin distribution"
        )
    versions = {text for _jar, text in jars}
    if len(versions) > 1:
        raise DistributionError(
            f"{home} holds bookkeeper-server jars of several versions: {sorted(versions)}"
        )
    return BookKeeperVersion.parse(versions.pop())


def distribution_classpath(home: Path) -> list[Path]:
    """Every jar of ``home/lib`` (what ``bin/bookkeeper`` puts on its classpath), sorted.

    :raises DistributionError: ``home/lib`` is missing or has no jars.
    """
    lib = home / "lib"
    jars = sorted(lib.glob("*.jar")) if lib.is_dir() else []
    if not jars:
        raise DistributionError(
            f"{lib} holds no jars; point BOOKKEEPER_HOME at an unpacked "
            "bookkeeper-server-X.Y.Z-bin distribution"
        )
    return jars


__all__ = ["BookKeeperVersion", "distribution_classpath", "distribution_version"]

"""What a run runs against: the choice of bookies (real BookKeeper or the reference bookie test
double) and :class:`SystemUnderTest`, the one-line account of the bookies, the client and
ZooKeeper that every run prints and records.

:func:`choose_bookies` is the one place where options become a bookie choice: the CLI
(``--bookie-kind``, ``--bookkeeper``, ``--bookkeeper-home``), the pytest plugin
(``--bk-bookie-kind``, ``--bk-bookkeeper``, ``--bk-bookkeeper-home``) and ``bkconform cluster
up`` all call it. Real
BookKeeper is the default: ``BOOKKEEPER_HOME`` when it is set, else
:data:`~adapters.installations.bookkeeper.DEFAULT_VERSION`, installed from Maven Central on
first use.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from adapters.user_state import home_text

#: ``--bookie-kind``: real BookKeeper (the default) or the project's test double.
BOOKKEEPER = "bookkeeper"
REFERENCE = "reference"
BOOKIE_KINDS = (BOOKKEEPER, REFERENCE)

MODEL_CLIENT = "model client (bkconform)"
MODEL_BOOKIES = "model (no bookies)"
MODEL_ZOOKEEPER = "model (no ZooKeeper)"
UNKNOWN = "unknown"

_SERVER_JAR = re.compile(r"bookkeeper-server-(\d+\.\d+\.\d+[0-9A-Za-z.-]*?)\.jar$")
# zookeeper-3.9.5.jar (pyspark, the binary distribution), or as an install names it:
# org.apache.zookeeper-zookeeper-3.9.3.jar.
_ZOOKEEPER_JAR = re.compile(
    r"^(?:org\.apache\.zookeeper-)?zookeeper-(\d+\.\d+\.\d+[0-9A-Za-z.-]*?)\.jar$"
)


@dataclass(frozen=True)
class BookieChoice:
    """Which bookies a local cluster runs: ``bookkeeper`` with its distribution ``home``, or
    ``reference`` (the test double; ``home`` is None)."""

    kind: str
    home: Path | None = None

    def __post_init__(self) -> None:
        if self.kind not in BOOKIE_KINDS:
            raise ValueError(f"bookies {self.kind!r}: expected one of {', '.join(BOOKIE_KINDS)}")
        if (self.kind == BOOKKEEPER) != (self.home is not None):
            raise ValueError("real BookKeeper bookies need a home; the reference bookie none")

    @classmethod
    def reference(cls) -> BookieChoice:
        return cls(REFERENCE)

    @classmethod
    def bookkeeper(cls, home: Path) -> BookieChoice:
        return cls(BOOKKEEPER, home)

    def describe(self) -> str:
        if self.home is None:
            return describe_reference_bookie()
        return describe_bookkeeper(self.home)


def choose_bookies(
    bookies: str = BOOKKEEPER,
    *,
    bookkeeper: str | None = None,
    bookkeeper_home: Path | str | None = None,
    environ: Mapping[str, str] | None = None,
    root: Path | None = None,
    progress: bool = False,
) -> BookieChoice:
    """The bookies the options name.

    ``bookies="reference"``: the test double (and no BookKeeper option may be given).
    ``bookies="bookkeeper"``: ``bookkeeper`` (a version, installed on first use, or a
    directory), else ``bookkeeper_home``, else ``BOOKKEEPER_HOME`` from ``environ``, else the
    default version (installed from Maven Central on first use).

    :raises ValueError: options that contradict each other.
    :raises ClusterError: a directory that is no distribution, a version that cannot be
        installed (:class:`~adapters.installations.bookkeeper.BookKeeperInstallError`).
    """
    if bookies not in BOOKIE_KINDS:
        raise ValueError(f"--bookie-kind {bookies!r}: expected one of {', '.join(BOOKIE_KINDS)}")
    if bookies == REFERENCE:
        if bookkeeper is not None or bookkeeper_home is not None:
            raise ValueError(
                "--bookie-kind reference runs the reference bookie (a test double): it takes no "
                "--bookkeeper or --bookkeeper-home"
            )
        return BookieChoice.reference()
    from adapters.installations import bookkeeper as installs

    if bookkeeper is not None and bookkeeper_home is not None:
        raise ValueError("give --bookkeeper or --bookkeeper-home, not both")
    if bookkeeper is not None:
        home = installs.resolve_bookkeeper(bookkeeper, root=root, progress=progress)
        return BookieChoice.bookkeeper(home)
    if bookkeeper_home is not None:
        found = installs.find_bookkeeper_home(Path(bookkeeper_home), {})
    else:
        found = installs.find_bookkeeper_home(None, environ)
    if found is None:
        found = installs.install(installs.DEFAULT_VERSION, root=root, progress=progress).home
    return BookieChoice.bookkeeper(found)


@dataclass(frozen=True)
class SystemUnderTest:
    """What a run ran against, in words a person reads: the bookies (implementation, version,
    where from), the client that spoke to them, the ZooKeeper server, and the bookies'
    settings (their ledger storage and settings profile, for bookies the suite configures:
    ``DbLedgerStorage, settings profile pulsar``; empty where it does not, as the model and an
    external cluster)."""

    bookies: str
    client: str = MODEL_CLIENT
    zookeeper: str = UNKNOWN
    bookie_settings: str = ""

    def render(self) -> str:
        text = f"bookies: {self.bookies}; client: {self.client}; zookeeper: {self.zookeeper}"
        if self.bookie_settings:
            text += f"; bookie settings: {self.bookie_settings}"
        return text

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SystemUnderTest:
        return cls(
            str(data.get("bookies", UNKNOWN)),
            str(data.get("client", UNKNOWN)),
            str(data.get("zookeeper", UNKNOWN)),
            # Absent (or null) in what was written before the settings were recorded.
            str(data.get("bookie_settings") or ""),
        )


MODEL_SYSTEM = SystemUnderTest(MODEL_BOOKIES, MODEL_CLIENT, MODEL_ZOOKEEPER)


def bkconform_version() -> str:
    try:
        return metadata.version("bkconform")
    except metadata.PackageNotFoundError:
        return UNKNOWN


def describe_reference_bookie() -> str:
    return f"reference bookie (test double, bkconform {bkconform_version()})"


def bookkeeper_version(home: Path) -> str | None:
    """The version of the distribution at ``home``, from its server jar's name."""
    for directory in (home / "lib", home):
        for jar in sorted(directory.glob("*bookkeeper-server-*.jar")):
            match = _SERVER_JAR.search(jar.name)
            if match:
                return match.group(1)
    return None


def describe_bookkeeper(home: Path) -> str:
    """``BookKeeper 4.17.3 (Maven, ~/.bkconform/bookkeeper/4.17.3)``, or ``(BOOKKEEPER_HOME,
    DIR)`` for a distribution the project did not install, or ``BookKeeper 4.18.0-cd06340851d6
    (source build of /tmp/bk-checkout at cd06340851d6, ~/.bkconform/...)`` for one it built
    from a source checkout."""
    from adapters.installations.bookkeeper import read_installation
    from adapters.installations.source_builds import read_source_build

    built = read_source_build(home)
    if built is not None:
        return f"BookKeeper {built.name} ({built.describe()})"

    version = bookkeeper_version(home) or "of unknown version"
    origin = "Maven" if read_installation(home) is not None else "BOOKKEEPER_HOME"
    return f"BookKeeper {version} ({origin}, {home_text(home)})"


def describe_java_client(version: str) -> str:
    return f"BookKeeper Java client {version}"


def _expand(classpath: Iterable[str]) -> list[Path]:
    jars: list[Path] = []
    for entry in classpath:
        if entry.endswith("*"):
            jars.extend(sorted(Path(entry[:-1]).glob("*.jar")))
        elif entry.endswith(".jar"):
            jars.append(Path(entry))
    return jars


def zookeeper_version(classpath: Iterable[str]) -> str | None:
    """The version of the ZooKeeper server on ``classpath``: from the jar's name
    (``zookeeper-3.9.5.jar``), else its manifest's ``Implementation-Version``. No JVM."""
    jars = [
        jar
        for jar in _expand(classpath)
        if jar.name.removeprefix("org.apache.zookeeper-").startswith("zookeeper")
    ]
    for jar in jars:
        match = _ZOOKEEPER_JAR.match(jar.name)
        if match:
            return match.group(1)
    for jar in jars:
        if "jute" in jar.name:
            continue
        try:
            with zipfile.ZipFile(jar) as archive:
                manifest = archive.read("META-INF/MANIFEST.MF").decode(errors="replace")
        except (OSError, KeyError, zipfile.BadZipFile):
            continue
        for line in manifest.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Implementation-Version" and value.strip():
                return value.strip()
    return None


def describe_zookeeper(classpath: Iterable[str], source: str) -> str:
    """``ZooKeeper 3.9.5 (pyspark wheel (DIR))``."""
    version = zookeeper_version(classpath) or "of unknown version"
    return f"ZooKeeper {version} ({source})"


def local_system(
    bookies: BookieChoice, zookeeper_classpath: Iterable[str], zookeeper_source: str
) -> SystemUnderTest:
    """A local cluster's system: its bookies, the model client, and its ZooKeeper."""
    return SystemUnderTest(
        bookies.describe(), MODEL_CLIENT, describe_zookeeper(zookeeper_classpath, zookeeper_source)
    )


__all__ = [
    "BOOKIE_KINDS",
    "BOOKKEEPER",
    "MODEL_CLIENT",
    "MODEL_SYSTEM",
    "REFERENCE",
    "BookieChoice",
    "SystemUnderTest",
    "bookkeeper_version",
    "choose_bookies",
    "describe_bookkeeper",
    "describe_java_client",
    "describe_reference_bookie",
    "describe_zookeeper",
    "local_system",
    "zookeeper_version",
]

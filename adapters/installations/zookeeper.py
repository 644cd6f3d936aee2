"""ZooKeeper installations: releases installed from Maven Central, and locating the classpath
that starts a ZooKeeper server.

An install is ``$BKCONFORM_HOME/zookeeper/<version>/`` (:mod:`adapters.installations.releases`,
whose :class:`~adapters.installations.releases.Product` this module's ``ZOOKEEPER`` is)::

    conf/logback.xml                INFO to the console (the supervisor keeps it in a file)
    lib/<group>-<artifact>-<version>[-<classifier>].jar   ZooKeeper, jute, netty, logback...
    maven/pom.xml                   the POM the jars were resolved from
    bkconform-install.json          written last: the install is complete

The ZooKeeper a cluster runs is, in order:

1. the one named (``--zookeeper VERSION|DIR``: a version is installed on first use, a
   directory is an unpacked binary distribution or an install);
2. ``ZOOKEEPER_HOME``: ``$ZOOKEEPER_HOME/lib/*.jar`` (and top-level jars), with ``conf/``
   first on the classpath so the distribution's own logging configuration applies;
3. :data:`DEFAULT_VERSION`, the release the default BookKeeper release depends on, installed on
   first use.

A candidate counts only if one of its jars contains ``QuorumPeerMain``, the class the local
provider runs (:mod:`adapters.cluster.zookeeper`). An install is accepted only when its jars
hold :data:`REQUIRED_CLASSES`, and checked again whenever it is used: a broken one raises
:class:`ZooKeeperInstallBroken`, naming ``bkconform zookeeper install VERSION --force``.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.errors import ClusterError
from adapters.installations import releases
from adapters.installations.errors import BrokenInstallation, ZooKeeperNotFound
from adapters.installations.releases import (
    VERSION_TEXT,
    Available,
    Installation,
    ListedArtifact,
    RequiredClass,
)
from adapters.user_state import home_text

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_MAIN_CLASS_ENTRY = MAIN_CLASS.replace(".", "/") + ".class"
#: The release installed when none is named: the one the default BookKeeper release (4.18.0)
#: depends on (its bookkeeper-server POM; a test reads it from the BookKeeper install).
DEFAULT_VERSION = "3.9.5"
#: Bumped whenever conf/ changes: an install of an older layout counts as not installed.
LAYOUT_VERSION = 2

_SERVER = "the server"
_BOTH = "the server and the client"
#: What a server (``QuorumPeerMain``) and the client load, with the dependencies in jars of
#: their own that the install's POM adds (metrics-core, without which a server cannot start;
#: snappy; logback for conf/logback.xml). Checked in 3.6.3, 3.8.4 and 3.9.1 to 3.9.5.
REQUIRED_CLASSES = (
    RequiredClass((MAIN_CLASS,), _SERVER),
    RequiredClass(("org.apache.zookeeper.ZooKeeper",), "the client"),
    RequiredClass(("org.apache.jute.Record",), _BOTH),
    RequiredClass(("io.netty.channel.Channel",), _BOTH),
    RequiredClass(("io.netty.handler.ssl.SslContext",), _BOTH),
    RequiredClass(("org.slf4j.Logger",), _BOTH),
    RequiredClass(("ch.qos.logback.classic.Logger",), "conf/logback.xml"),
    RequiredClass(("com.codahale.metrics.MetricRegistry",), _SERVER),
    RequiredClass(("org.xerial.snappy.Snappy",), _SERVER),
)

LOGBACK_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- bkconform: ZooKeeper logs INFO to the console; the local provider keeps each server's
     console in its own log file (the quorum's exceptions are evidence of a run). -->
<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder>
      <pattern>%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="CONSOLE"/>
  </root>
</configuration>
"""


class ZooKeeperInstallError(ClusterError):
    """A ZooKeeper release could not be installed; the message names the artifact and why."""

    retriable = False


class ZooKeeperInstallBroken(ZooKeeperInstallError, BrokenInstallation):
    """An install that was complete is not any more; the message names what is missing and
    ``bkconform zookeeper install VERSION --force``."""


#: The logback a release whose parent POM manages none logs through (3.5 to 3.7).
FALLBACK_LOGBACK = "1.2.13"
_LOGBACK = "@LOGBACK_VERSION@"
_MANAGED_LOGBACK = re.compile(r"<logback-version>\s*([^<\s]+)\s*</logback-version>")


def _logback_of_the_release(version: str, listed: Sequence[ListedArtifact]) -> dict[str, str]:
    """The logback version the release's parent POM manages (its ``logback-version``), read
    from the local repository the first resolution filled; the fallback when it manages none.
    Why not one version for all: 3.9.4 moved to SLF4J 2, which finds no provider in logback
    1.2 and logs nothing at all (no server log, no exception in it)."""
    own = next(
        (a for a in listed if (a.group, a.artifact) == ("org.apache.zookeeper", "zookeeper")),
        None,
    )
    if own is None:
        return {_LOGBACK: FALLBACK_LOGBACK}
    # <repo>/org/apache/zookeeper/zookeeper/<v>/zookeeper-<v>.jar -> <repo>/org/apache/zookeeper
    group_dir = own.path.parent.parent.parent
    parent = group_dir / "parent" / version / f"parent-{version}.pom"
    try:
        found = _MANAGED_LOGBACK.search(parent.read_text(encoding="utf-8"))
    except OSError:
        found = None
    return {_LOGBACK: found.group(1) if found else FALLBACK_LOGBACK}


def _add_files(staging: Path, version: str) -> None:
    conf = staging / "conf"
    conf.mkdir()
    (conf / "logback.xml").write_text(LOGBACK_XML)


ZOOKEEPER = releases.Product(
    name="ZooKeeper",
    directory="zookeeper",
    group="org.apache.zookeeper",
    artifact="zookeeper",
    pom_resource="maven/zookeeper-pom.xml",
    placeholder="@ZOOKEEPER_VERSION@",
    layout=LAYOUT_VERSION,
    default_version=DEFAULT_VERSION,
    error=ZooKeeperInstallError,
    add_files=_add_files,
    without_maven="point ZOOKEEPER_HOME / --zookeeper at an unpacked ZooKeeper binary distribution",
    required_classes=REQUIRED_CLASSES,
    broken=ZooKeeperInstallBroken,
    pom_defaults={_LOGBACK: FALLBACK_LOGBACK},
    pom_values=_logback_of_the_release,
)


@dataclass(frozen=True)
class ZooKeeperInstall:
    """A runnable ZooKeeper: the classpath to start ``QuorumPeerMain`` with, and its origin."""

    classpath: tuple[str, ...]
    source: str
    #: The distribution or install directory it was found in (None: a bare classpath).
    home: Path | None = None

    def describe(self) -> str:
        return f"ZooKeeper from {self.source}"


def contains_quorum_peer_main(jar: Path) -> bool:
    """True when ``jar`` is a readable jar holding ``QuorumPeerMain``."""
    try:
        with zipfile.ZipFile(jar) as archive:
            return _MAIN_CLASS_ENTRY in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _jars(*directories: Path) -> list[Path]:
    found: list[Path] = []
    for directory in directories:
        if directory.is_dir():
            found.extend(sorted(directory.glob("*.jar")))
    return found


def _with_main_class(jars: Iterable[Path]) -> bool:
    return any(contains_quorum_peer_main(jar) for jar in jars if "zookeeper" in jar.name)


def _from_home(home: Path, origin: str) -> ZooKeeperInstall | None:
    """The ZooKeeper at ``home`` (None: no jar with ``QuorumPeerMain``); an install of
    bkconform's must still be complete (:class:`ZooKeeperInstallBroken`)."""
    installation = Installation.read(home, LAYOUT_VERSION)
    if installation is not None:
        releases.verify(ZOOKEEPER, installation)
    jars = _jars(home, home / "lib")
    if not _with_main_class(jars):
        return None
    conf = home / "conf"
    entries = ([str(conf)] if conf.is_dir() else []) + [str(jar) for jar in jars]
    if installation is not None:
        from adapters.installations.source_builds import describe_home

        origin = describe_home(home) or f"Maven, {home_text(home)}"
    return ZooKeeperInstall(tuple(entries), origin, home)


# Installing -----------------------------------------------------------------------------------


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/zookeeper``."""
    return ZOOKEEPER.install_root(environ)


def install(version: str = DEFAULT_VERSION, **options: Any) -> Installation:
    """Install ``version`` (idempotent: an existing complete install is returned as it is;
    ``options``: ``root``, ``offline``, ``force``, ``timeout``, ``maven_repo``, ``environ``,
    ``progress``, as :func:`adapters.installations.releases.install` takes them)."""
    return releases.install(ZOOKEEPER, version, **options)


def installed(root: Path | None = None) -> list[Installation]:
    """Every complete install under ``root`` (default :func:`install_root`), by version."""
    return releases.installed(ZOOKEEPER, root)


def remove(version: str, root: Path | None = None) -> bool:
    """Delete the install of ``version``; False if there was none."""
    return releases.remove(ZOOKEEPER, version, root)


def available(**options: Any) -> Available:
    """The versions the repository Maven is configured with serves, asked now (``options``:
    ``environ``, ``timeout``, as :func:`adapters.installations.releases.available` takes
    them)."""
    return releases.available(ZOOKEEPER, **options)


# Locating -------------------------------------------------------------------------------------


def is_version(spec: str | Path) -> bool:
    """Whether ``--zookeeper`` names a release (else a directory)."""
    text = str(spec).strip()
    return (
        not isinstance(spec, Path)
        and os.sep not in text
        and not Path(text).expanduser().is_dir()
        and bool(VERSION_TEXT.match(text))
    )


def resolve_zookeeper(
    spec: str | Path,
    *,
    root: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> ZooKeeperInstall:
    """``--zookeeper VERSION|DIR``: a version is installed on first use (then read from the
    cache); a directory must hold a ZooKeeper (``lib/`` with ``QuorumPeerMain``), or be a
    ZooKeeper source checkout, built once into an install of its version and commit
    (:mod:`adapters.installations.source_builds`)."""
    if is_version(spec):
        done = install(str(spec).strip(), root=root, environ=environ, progress=progress)
        found = _from_home(done.home, f"Maven, {home_text(done.home)}")
        if found is None:
            raise ZooKeeperInstallBroken(
                f"the ZooKeeper {done.version} install at {done.home} is broken (no zookeeper "
                f"jar holds {MAIN_CLASS}): reinstall with "
                f"`{ZOOKEEPER.reinstall_command(done.version)}`"
            )
        return found
    home = Path(str(spec).strip()).expanduser()
    from adapters.installations import source_builds

    if home.is_dir() and source_builds.detect(home) is not None:
        home = source_builds.install_from_source(
            home,
            source_builds.zookeeper_source(),
            root=None if root is None else root / source_builds.SOURCE_DIRECTORY,
            environ=environ,
            progress=progress,
        ).home
    found = _from_home(home, f"--zookeeper {home}")
    if found is None:
        raise ZooKeeperNotFound(
            f"--zookeeper {home}: no zookeeper jar with {MAIN_CLASS} in it or its lib/; name "
            "a version (installed from Maven Central on first use) or an unpacked "
            "apache-zookeeper-X.Y.Z-bin distribution"
        )
    return found


def locate_zookeeper(
    explicit: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    root: Path | None = None,
    progress: bool = False,
) -> ZooKeeperInstall:
    """The ZooKeeper to run (see the module docstring for the order). A named one or a
    ``ZOOKEEPER_HOME`` that holds no ZooKeeper is an error, never a reason to look elsewhere;
    so is a broken install (:class:`ZooKeeperInstallBroken`, as it is)."""
    if explicit is not None:
        return resolve_zookeeper(explicit, root=root, environ=environ, progress=progress)
    env = os.environ if environ is None else environ
    home = env.get("ZOOKEEPER_HOME")
    if home:
        found = _from_home(Path(home), f"ZOOKEEPER_HOME={home}")
        if found is not None:
            return found
        raise ZooKeeperNotFound(
            f"ZOOKEEPER_HOME={home} holds no zookeeper jar with {MAIN_CLASS} "
            "in its lib/ directory; point it at an unpacked apache-zookeeper-X.Y.Z-bin "
            "distribution or unset it"
        )
    try:
        return resolve_zookeeper(DEFAULT_VERSION, root=root, environ=env, progress=progress)
    except BrokenInstallation:
        raise  # its message says how to repair it; "could not be installed" would mislead
    except ClusterError as exc:
        raise ZooKeeperNotFound(
            f"no ZooKeeper: ZOOKEEPER_HOME is unset and the default release, "
            f"{DEFAULT_VERSION}, could not be installed ({exc}); name one with --zookeeper "
            "VERSION|DIR or set ZOOKEEPER_HOME to an unpacked ZooKeeper binary distribution"
        ) from exc


__all__ = [
    "DEFAULT_VERSION",
    "MAIN_CLASS",
    "REQUIRED_CLASSES",
    "ZOOKEEPER",
    "ZooKeeperInstall",
    "ZooKeeperInstallBroken",
    "ZooKeeperInstallError",
    "available",
    "contains_quorum_peer_main",
    "install",
    "install_root",
    "installed",
    "is_version",
    "locate_zookeeper",
    "remove",
    "resolve_zookeeper",
]

"""BookKeeper installations: validating a ``BOOKKEEPER_HOME``, and installing a version from
the repository Maven is configured with (Maven Central by default) into a per-user cache
(:mod:`adapters.installations.releases`, whose
:class:`~adapters.installations.releases.Product` this module's ``BOOKKEEPER`` is).

An install is ``$BKCONFORM_HOME/bookkeeper/<version>/`` (default ``~/.bkconform``)::

    bin/bookkeeper                  launcher written here (bookie, shell, any main class)
    conf/log4j2.xml                 4.15+ log through log4j2 (console)
    conf/log4j.properties           4.14 and older through log4j 1.2 (console)
    conf/bk_server.conf             used only when BOOKIE_CONF is unset
    lib/<group>-<artifact>-<version>[-<classifier>].jar   every runtime jar, named as in the
                                    binary distribution (lib/org.apache.bookkeeper-bookkeeper-
                                    server-<version>.jar)
    maven/pom.xml                   the POM the jars were resolved from
    bkconform-install.json          written last: the install is complete

It is a valid ``BOOKKEEPER_HOME`` for :func:`find_bookkeeper_home`, the local provider
(``bin/bookkeeper bookie`` with ``BOOKIE_CONF``) and the Java client (``lib/*.jar``). It is
accepted only when its jars hold :data:`REQUIRED_CLASSES` (where the bookie, the shell and the
client start) and every class of BookKeeper's own jars links against the jars resolved
(:data:`OWN_GROUPS`), and checked again whenever it is used: a broken one raises
:class:`BookKeeperInstallBroken`, naming ``bkconform bookkeeper install VERSION --force``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.errors import ClusterError
from adapters.installations import releases
from adapters.installations.errors import BookKeeperNotFound, BrokenInstallation
from adapters.installations.releases import (
    DEFAULT_MAVEN_TIMEOUT,
    MARKER,
    VERSION_TEXT,
    Available,
    Installation,
    ListedArtifact,
    RequiredClass,
    maven_command,
    parse_listing,
)

#: The version installed when none is named: the current release, the newest that Maven
#: Central served completely to every machine the suite runs on when it was chosen (2026-11:
#: 4.18.0, which moved the wire protocol and the metadata to LightProto; 4.18.2 was listed
#: before its parent POM was served, and 4.17.4 was not served at all). Which versions exist is
#: the configured repository's to say (:func:`available`, ``bkconform bookkeeper list
#: --available``); the findings name the release each was judged on.
DEFAULT_VERSION = "4.18.0"

_BOOKIE = "the bookie"
_SHELL = "the shell"
_CLIENT = "the client"
#: Where the programs the suite runs start (``bin/bookkeeper bookie`` runs ``server.Main``,
#: ``bin/bookkeeper shell`` the ``BookieShell``; the Java client is ``client.BookKeeper``), and
#: SLF4J's binding, through which the shell prints its results (1.x: ``StaticLoggerBinder``;
#: 2.x: a service provider, log4j2's or logback's). What these need beyond is the release's to
#: say: every class of its own jars (:data:`OWN_GROUPS`) must link against the jars its POM
#: resolves (:mod:`adapters.installations.linkage`). A list of the protocol's and dependencies'
#: classes refused 4.18.0, whose encodings moved from protobuf-java to LightProto.
REQUIRED_CLASSES = (
    RequiredClass(("org.apache.bookkeeper.server.Main",), _BOOKIE),
    RequiredClass(("org.apache.bookkeeper.bookie.BookieShell",), _SHELL),
    RequiredClass(("org.apache.bookkeeper.client.BookKeeper",), _CLIENT),
    RequiredClass(
        (
            "org.slf4j.impl.StaticLoggerBinder",
            "org.apache.logging.slf4j.SLF4JServiceProvider",
            "ch.qos.logback.classic.spi.LogbackServiceProvider",
        ),
        "a logging backend: the shell prints its results through it",
    ),
)
#: The groups of BookKeeper's own artifacts (bookkeeper-server, -common, -proto, circe-checksum,
#: native-io, the stats API, the HTTP server interface...), whose classes must all link.
OWN_GROUPS = ("org.apache.bookkeeper", "org.apache.bookkeeper.stats", "org.apache.bookkeeper.http")

GROUP_ID = "org.apache.bookkeeper"
ARTIFACT_ID = "bookkeeper-server"
#: Bumped whenever the launcher or conf/ change: an install of an older layout counts as not
#: installed, and the next use reinstalls it (from ~/.m2, offline).
LAYOUT_VERSION = 2
_VERSION_PLACEHOLDER = "@BOOKKEEPER_VERSION@"


class BookKeeperInstallError(ClusterError):
    """A BookKeeper version could not be installed; the message names the artifact and why.
    Not retriable: the installer already waited (and Maven retried) as long as it should."""

    retriable = False


class BookKeeperInstallBroken(BookKeeperInstallError, BrokenInstallation):
    """An install that was complete is not any more; the message names what is missing and
    ``bkconform bookkeeper install VERSION --force``."""


# Locating -------------------------------------------------------------------------------------


def find_bookkeeper_home(
    explicit: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The BookKeeper distribution to run: ``explicit``, else ``BOOKKEEPER_HOME``, else None.

    A directory that is named but holds no runnable distribution is an error; one that is an
    install of bkconform's must still be complete (:class:`BookKeeperInstallBroken`).
    """
    env = os.environ if environ is None else environ
    home = (
        explicit
        if explicit is not None
        else (Path(env["BOOKKEEPER_HOME"]) if env.get("BOOKKEEPER_HOME") else None)
    )
    if home is None:
        return None
    script = home / "bin" / "bookkeeper"
    if not os.access(script, os.X_OK):
        raise BookKeeperNotFound(
            f"{home} has no executable bin/bookkeeper; point BOOKKEEPER_HOME (or "
            "--bookkeeper-home) at an unpacked bookkeeper-server-X.Y.Z-bin distribution, or "
            f"install one: bkconform bookkeeper install {DEFAULT_VERSION}"
        )
    if not any((home / "lib").glob("*bookkeeper-server-*.jar")) and not any(
        home.glob("*bookkeeper-server-*.jar")
    ):
        raise BookKeeperNotFound(
            f"{home} has bin/bookkeeper but no bookkeeper-server jar in lib/; "
            "use a binary distribution (bookkeeper-server-X.Y.Z-bin.tar.gz), not a source tree "
            "(--bookkeeper PATH builds a source checkout into an install)"
        )
    releases.verify_home(BOOKKEEPER, home)
    return home


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/bookkeeper``."""
    return BOOKKEEPER.install_root(environ)


def check_version(version: str) -> str:
    """``version`` stripped; :class:`BookKeeperInstallError` unless it looks like 4.17.3."""
    return BOOKKEEPER.check_version(version)


def read_installation(home: Path) -> Installation | None:
    """The complete install at ``home`` (of the current layout), else None."""
    return Installation.read(home, LAYOUT_VERSION)


def installed(root: Path | None = None) -> list[Installation]:
    """Every complete install under ``root`` (default :func:`install_root`), by version."""
    return releases.installed(BOOKKEEPER, root)


def find_installation(version: str, root: Path | None = None) -> Installation | None:
    return releases.find_installation(BOOKKEEPER, version, root)


def remove(version: str, root: Path | None = None) -> bool:
    """Delete the install of ``version``; False if there was none."""
    return releases.remove(BOOKKEEPER, version, root)


# Maven ----------------------------------------------------------------------------------------


def render_pom(version: str) -> str:
    """The install POM (``maven/bookkeeper-pom.xml``, shipped with the package) for ``version``."""
    return BOOKKEEPER.render_pom(version)


def find_maven(environ: Mapping[str, str] | None = None) -> str:
    """``mvn`` on ``PATH``; :class:`BookKeeperInstallError` saying how to get it if absent."""
    return releases.find_maven(BOOKKEEPER, environ)


def explain_maven_failure(version: str, output: str, *, offline: bool, **options: Any) -> str:
    """One clear sentence (plus Maven's own ``[ERROR]`` line) for a failed resolution
    (``options``: ``incomplete``, ``environ``, ``maven_repo``, as
    :func:`adapters.installations.releases.explain_maven_failure` takes them)."""
    return releases.explain_maven_failure(BOOKKEEPER, version, output, offline=offline, **options)


def available(**options: Any) -> Available:
    """The versions the repository Maven is configured with serves, asked now (``options``:
    ``environ``, ``timeout``, as :func:`adapters.installations.releases.available` takes
    them)."""
    return releases.available(BOOKKEEPER, **options)


# The layout -----------------------------------------------------------------------------------

LAUNCHER = """#!/bin/sh
# bin/bookkeeper written by bkconform (adapters/installations/bookkeeper.py) for BookKeeper
# @BOOKKEEPER_VERSION@ resolved from Maven Central, which ships no scripts. It behaves like the
# binary distribution's bin/bookkeeper for what bkconform runs:
#   bookkeeper bookie [ARGS]   org.apache.bookkeeper.server.Main --conf "$BOOKIE_CONF" ARGS
#   bookkeeper shell [ARGS]    org.apache.bookkeeper.bookie.BookieShell -conf "$BOOKIE_CONF" ARGS
#   bookkeeper CLASS [ARGS]    any main class on the classpath
# Environment, as the distribution's scripts read it: BOOKIE_CONF (default conf/bk_server.conf),
# BOOKIE_LOG_DIR, BOOKIE_ROOT_LOG_LEVEL (default INFO; the console is the only appender:
# the shell prints its results through it),
# BOOKIE_MIN_HEAP_MEMORY, BOOKIE_MAX_HEAP_MEMORY, BOOKIE_MAX_DIRECT_MEMORY, BOOKIE_GC_OPTS,
# BOOKIE_EXTRA_OPTS, BOOKIE_EXTRA_CLASSPATH, JAVA_HOME. JMX is never enabled (JMXDISABLE is moot).
BK_HOME=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd) || exit 1
if [ -n "$JAVA_HOME" ]; then JAVA="$JAVA_HOME/bin/java"; else JAVA=java; fi
BOOKIE_CONF=${BOOKIE_CONF:-$BK_HOME/conf/bk_server.conf}
BOOKIE_LOG_DIR=${BOOKIE_LOG_DIR:-$BK_HOME/logs}
LEVEL=${BOOKIE_ROOT_LOG_LEVEL:-INFO}
CLASSPATH="$BK_HOME/conf:$BK_HOME/lib/*"
if [ -n "$BOOKIE_EXTRA_CLASSPATH" ]; then CLASSPATH="$CLASSPATH:$BOOKIE_EXTRA_CLASSPATH"; fi
GC_OPTS=${BOOKIE_GC_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=10 -XX:+ParallelRefProcEnabled}

if [ $# -eq 0 ]; then
    echo "usage: $0 bookie|shell|MAIN_CLASS [ARGS...]" >&2
    exit 2
fi
COMMAND=$1
shift
case "$COMMAND" in
    bookie) set -- org.apache.bookkeeper.server.Main --conf "$BOOKIE_CONF" "$@" ;;
    shell) set -- org.apache.bookkeeper.bookie.BookieShell -conf "$BOOKIE_CONF" "$@" ;;
    *.*) set -- "$COMMAND" "$@" ;;
    *)
        echo "bin/bookkeeper (bkconform): unknown command $COMMAND; use bookie, shell or a" \\
            "main class" >&2
        exit 2 ;;
esac
# shellcheck disable=SC2086  # GC and extra options are word lists
exec "$JAVA" -cp "$CLASSPATH" \\
    "-Xms${BOOKIE_MIN_HEAP_MEMORY:-1g}" "-Xmx${BOOKIE_MAX_HEAP_MEMORY:-1g}" \\
    "-XX:MaxDirectMemorySize=${BOOKIE_MAX_DIRECT_MEMORY:-2g}" $GC_OPTS \\
    -Djava.net.preferIPv4Stack=true -Dio.netty.tryReflectionSetAccessible=true \\
    --add-opens java.base/java.io=ALL-UNNAMED \\
    --add-opens java.base/java.nio=ALL-UNNAMED \\
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED \\
    --add-opens java.base/jdk.internal.misc=ALL-UNNAMED \\
    --add-opens java.base/java.util.zip=ALL-UNNAMED \\
    "-Dlog4j.configurationFile=$BK_HOME/conf/log4j2.xml" \\
    "-Dlog4j.configuration=file:$BK_HOME/conf/log4j.properties" \\
    "-Dbookkeeper.log.root.level=$LEVEL" "-Dbookkeeper.root.logger=$LEVEL,CONSOLE" \\
    "-Dbookkeeper.log.dir=$BOOKIE_LOG_DIR" \\
    $BOOKIE_EXTRA_OPTS "$@"
"""

LOG4J2_XML = """<?xml version="1.0" encoding="UTF-8"?>
<!-- bkconform: BookKeeper 4.15+ (log4j2) logs to the console; the local provider keeps each
     bookie's console in its own log file. Level: -Dbookkeeper.log.root.level (INFO).
     %X: from 4.18.0 BookKeeper logs through slog, whose attributes (the shell's results among
     them: "ledgerID {ledgerId=150}") only a pattern with %X shows, as the release's own
     conf/log4j2.xml has it; older releases print {} there. -->
<Configuration status="warn" name="bkconform-bookkeeper">
  <Appenders>
    <Console name="CONSOLE" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{ISO8601} %-5p [%t] %c{1} - %m %X%n"/>
    </Console>
  </Appenders>
  <Loggers>
    <Logger name="org.apache.zookeeper" level="WARN"/>
    <Root level="${sys:bookkeeper.log.root.level:-INFO}">
      <AppenderRef ref="CONSOLE"/>
    </Root>
  </Loggers>
</Configuration>
"""

LOG4J_PROPERTIES = """\
# bkconform: BookKeeper 4.14 and older (log4j 1.2 through slf4j-log4j12) log to the
# console; the local provider keeps each bookie's console in its own log file.
# -Dbookkeeper.root.logger=LEVEL,CONSOLE (system properties win over this file).
bookkeeper.root.logger=INFO,CONSOLE
log4j.rootLogger=${bookkeeper.root.logger}
log4j.logger.org.apache.zookeeper=WARN
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.out
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
"""

DEFAULT_BK_SERVER_CONF = """\
# bkconform: used only when BOOKIE_CONF is unset. The suite always generates its
# own bk_server.conf (adapters/cluster/bookies.py) and passes it through BOOKIE_CONF.
bookiePort=3181
advertisedAddress=127.0.0.1
allowLoopback=true
metadataServiceUri=zk+hierarchical://127.0.0.1:2181/ledgers
journalDirectories=/tmp/bk-journal
ledgerDirectories=/tmp/bk-data
httpServerEnabled=false
"""


def launcher_script(version: str) -> str:
    return LAUNCHER.replace(_VERSION_PLACEHOLDER, check_version(version))


def _add_files(staging: Path, version: str) -> None:
    """The launcher, the logging configuration and a default bk_server.conf."""
    conf = staging / "conf"
    conf.mkdir()
    (conf / "log4j2.xml").write_text(LOG4J2_XML)
    (conf / "log4j.properties").write_text(LOG4J_PROPERTIES)
    (conf / "bk_server.conf").write_text(DEFAULT_BK_SERVER_CONF)
    bin_dir = staging / "bin"
    bin_dir.mkdir()
    script = bin_dir / "bookkeeper"
    script.write_text(launcher_script(version))
    script.chmod(0o755)
    (staging / "logs").mkdir()


BOOKKEEPER = releases.Product(
    name="BookKeeper",
    directory="bookkeeper",
    group=GROUP_ID,
    artifact=ARTIFACT_ID,
    pom_resource="maven/bookkeeper-pom.xml",
    placeholder=_VERSION_PLACEHOLDER,
    layout=LAYOUT_VERSION,
    default_version=DEFAULT_VERSION,
    error=BookKeeperInstallError,
    add_files=_add_files,
    without_maven="point BOOKKEEPER_HOME / --bookkeeper at an unpacked BookKeeper binary "
    "distribution",
    required_classes=REQUIRED_CLASSES,
    own_groups=OWN_GROUPS,
    broken=BookKeeperInstallBroken,
)


def install(version: str = DEFAULT_VERSION, **options: Any) -> Installation:
    """Install ``version`` (idempotent: an existing complete install is returned as it is;
    ``options``: ``root``, ``offline``, ``force``, ``timeout``, ``maven_repo``, ``environ``,
    ``progress``, as :func:`adapters.installations.releases.install` takes them)."""
    return releases.install(BOOKKEEPER, version, **options)


# The option -----------------------------------------------------------------------------------


def resolve_bookkeeper(
    spec: str | Path,
    *,
    root: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> Path:
    """``--bookkeeper VERSION|DIR``: a version is installed on first use (then read from the
    cache, checked complete); a directory must be a BOOKKEEPER_HOME, or a BookKeeper source
    checkout, built once into an install of its version and commit
    (:mod:`adapters.installations.source_builds`). Returns the home."""
    text = str(spec).strip()
    path = Path(text).expanduser()
    if isinstance(spec, Path) or os.sep in text or path.is_dir() or not VERSION_TEXT.match(text):
        from adapters.installations import source_builds

        if path.is_dir() and source_builds.detect(path) is not None:
            kind = source_builds.bookkeeper_source()
            return source_builds.install_from_source(
                path,
                kind,
                root=None if root is None else root / source_builds.SOURCE_DIRECTORY,
                environ=environ,
                progress=progress,
            ).home
        home = find_bookkeeper_home(path, {})
        assert home is not None
        return home
    return install(text, root=root, environ=environ, progress=progress).home


__all__ = [
    "BOOKKEEPER",
    "DEFAULT_MAVEN_TIMEOUT",
    "DEFAULT_VERSION",
    "MARKER",
    "OWN_GROUPS",
    "REQUIRED_CLASSES",
    "Available",
    "BookKeeperInstallBroken",
    "BookKeeperInstallError",
    "Installation",
    "ListedArtifact",
    "available",
    "explain_maven_failure",
    "find_bookkeeper_home",
    "find_installation",
    "find_maven",
    "install",
    "install_root",
    "installed",
    "launcher_script",
    "maven_command",
    "parse_listing",
    "read_installation",
    "remove",
    "render_pom",
    "resolve_bookkeeper",
]

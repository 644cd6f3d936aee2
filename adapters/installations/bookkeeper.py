"""BookKeeper installations: validating a ``BOOKKEEPER_HOME``, and installing a version from
Maven Central into a per-user cache.

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
(``bin/bookkeeper bookie`` with ``BOOKIE_CONF``) and the Java client (``lib/*.jar``).

The jars come from the machine's ``mvn``: ``dependency:list`` (runtime scope, absolute file
names) on a rendered POM that depends on ``org.apache.bookkeeper:bookkeeper-server:<version>``
resolves them into the Maven repository (offline first, ``-o``, when the repository already
has them); they are then copied under the distribution's names. The install is built in a
temporary directory next to its destination and renamed into place, under a lock, so an
interrupted install never leaves a layout that looks valid. Nothing is downloaded at import.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from adapters.errors import ClusterError
from adapters.installations.errors import BookKeeperNotFound
from adapters.installations.maven import (
    DEPENDENCY_PLUGIN,
    MavenRun,
    discard_install,
    install_atomically,
    run_maven,
    run_offline_first,
)
from adapters.user_state import bkconform_home, exclusive_lock

#: The version installed when none is named: the newest bookkeeper-server Maven Central serves
#: to this project's machines (4.17.4, the newest release, is not served there).
DEFAULT_VERSION = "4.17.3"
#: Probed with ``mvn dependency:get`` from this project's machines (2026-11).
SERVED_VERSIONS = ("4.17.3", "4.17.2", "4.16.6", "4.14.7", "4.11.1")
NOT_SERVED_VERSIONS = ("4.17.4", "4.16.7", "4.14.8", "4.14.6")

GROUP_ID = "org.apache.bookkeeper"
ARTIFACT_ID = "bookkeeper-server"
MARKER = "bkconform-install.json"
#: Bumped whenever the launcher or conf/ change: an install of an older layout counts as not
#: installed, and the next use reinstalls it (from ~/.m2, offline).
LAYOUT_VERSION = 1
DEFAULT_MAVEN_TIMEOUT = 900.0
_VERSION_PLACEHOLDER = "@BOOKKEEPER_VERSION@"
_VERSION_TEXT = re.compile(r"^\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.-]+)?$")
# `mvn dependency:list -DoutputAbsoluteArtifactFilename=true` lines:
#   group:artifact:type[:classifier]:version:scope:/abs/path.jar[ -- module name (auto)]
_LISTED = re.compile(
    r"^\s*(?P<group>[^:\s]+):(?P<artifact>[^:\s]+):(?P<type>[^:\s]+):"
    r"(?:(?P<classifier>[^:\s]+):)?(?P<version>[^:\s]+):"
    r"(?P<scope>compile|runtime|provided|system|test):(?P<path>/\S.*?)"
    r"(?:\s+--\s+module\s.*)?\s*$"
)


class BookKeeperInstallError(ClusterError):
    """A BookKeeper version could not be installed; the message names the artifact and why.
    Not retriable: the installer already waited (and Maven retried) as long as it should."""

    retriable = False


# Locating -------------------------------------------------------------------------------------


def find_bookkeeper_home(
    explicit: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The BookKeeper distribution to run: ``explicit``, else ``BOOKKEEPER_HOME``, else None.

    A directory that is named but holds no runnable distribution is an error.
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
            "use a binary distribution (bookkeeper-server-X.Y.Z-bin.tar.gz), not a source tree"
        )
    return home


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/bookkeeper``."""
    return bkconform_home(environ) / "bookkeeper"


def check_version(version: str) -> str:
    """``version`` stripped; :class:`BookKeeperInstallError` unless it looks like 4.17.3."""
    text = version.strip()
    if not _VERSION_TEXT.match(text):
        raise BookKeeperInstallError(
            f"not a BookKeeper version: {version!r} (expected major.minor.patch, e.g. "
            f"{DEFAULT_VERSION})"
        )
    return text


@dataclass(frozen=True)
class Installation:
    """A complete install of the current layout (its marker file says so)."""

    version: str
    home: Path
    jars: int
    installed_at: str

    @classmethod
    def read(cls, home: Path) -> Installation | None:
        try:
            data = json.loads((home / MARKER).read_text())
            if data.get("layout") != LAYOUT_VERSION:
                return None
            return cls(str(data["version"]), home, int(data["jars"]), str(data["installed_at"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None


def installed(root: Path | None = None) -> list[Installation]:
    """Every complete install under ``root`` (default :func:`install_root`), by version."""
    base = install_root() if root is None else root
    found = []
    if base.is_dir():
        for entry in base.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                install = Installation.read(entry)
                if install is not None:
                    found.append(install)
    return sorted(found, key=lambda i: _version_key(i.version))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def find_installation(version: str, root: Path | None = None) -> Installation | None:
    base = install_root() if root is None else root
    return Installation.read(base / check_version(version))


def remove(version: str, root: Path | None = None) -> bool:
    """Delete the install of ``version``; False if there was none."""
    base = install_root() if root is None else root
    target = base / check_version(version)
    if not target.exists():
        return False
    with exclusive_lock(base, target.name):
        discard_install(base, target)
    return True


# Maven ----------------------------------------------------------------------------------------


def render_pom(version: str) -> str:
    """The install POM (``maven/bookkeeper-pom.xml``, shipped with the package) for ``version``."""
    template = (
        resources.files("adapters.installations")
        .joinpath("maven/bookkeeper-pom.xml")
        .read_text(encoding="utf-8")
    )
    return template.replace(_VERSION_PLACEHOLDER, check_version(version))


def find_maven(environ: Mapping[str, str] | None = None) -> str:
    """``mvn`` on ``PATH``; :class:`BookKeeperInstallError` saying how to get it if absent."""
    env = os.environ if environ is None else environ
    found = shutil.which("mvn", path=env.get("PATH"))
    if found is None:
        raise BookKeeperInstallError(
            f"installing {GROUP_ID}:{ARTIFACT_ID} needs Maven and there is no mvn on PATH: "
            "install it (apt-get install maven), or point BOOKKEEPER_HOME / --bookkeeper at an "
            "unpacked BookKeeper binary distribution"
        )
    return found


def maven_command(
    mvn: str,
    pom: Path,
    listing: Path,
    *,
    offline: bool,
    maven_repo: Path | None = None,
) -> list[str]:
    """The ``mvn`` call that resolves the POM's runtime dependencies and lists their files."""
    command = [mvn, "-B", "-Dstyle.color=never", "-f", str(pom)]
    command.append("-o" if offline else "-U")  # -U: retry artifacts a past miss was cached for
    if maven_repo is not None:
        command.append(f"-Dmaven.repo.local={maven_repo}")
    command += [
        f"{DEPENDENCY_PLUGIN}:list",
        "-DincludeScope=runtime",
        "-DoutputAbsoluteArtifactFilename=true",
        f"-DoutputFile={listing}",
        "-DappendOutput=false",
    ]
    return command


@dataclass(frozen=True)
class ListedArtifact:
    group: str
    artifact: str
    type: str
    classifier: str | None
    version: str
    scope: str
    path: Path

    @property
    def distribution_name(self) -> str:
        """Its file name in a binary distribution's ``lib/``: ``group-artifact-version[-classifier]
        .type``."""
        classifier = f"-{self.classifier}" if self.classifier else ""
        return f"{self.group}-{self.artifact}-{self.version}{classifier}.{self.type}"


def parse_listing(text: str) -> list[ListedArtifact]:
    """The artifacts of a ``dependency:list`` output file (other lines are ignored)."""
    found = []
    for line in text.splitlines():
        match = _LISTED.match(line)
        if match is not None:
            found.append(
                ListedArtifact(
                    match["group"],
                    match["artifact"],
                    match["type"],
                    match["classifier"],
                    match["version"],
                    match["scope"],
                    Path(match["path"]),
                )
            )
    return found


def explain_maven_failure(version: str, output: str, *, offline: bool) -> str:
    """One clear sentence (plus Maven's own ``[ERROR]`` line) for a failed resolution."""
    artifact = f"{GROUP_ID}:{ARTIFACT_ID}:{version}"
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]")]
    first = next((line for line in errors if line.strip() != "[ERROR]"), "")
    detail = f"\nmvn said: {first.removeprefix('[ERROR] ').strip()}" if first else ""
    missing = re.search(r"(?:Could not find artifact|Failure to find) (\S+)", output) or re.search(
        r"The POM for (\S+) is missing", output
    )
    if offline and "offline mode" in output:
        return (
            f"{artifact} (or one of its dependencies) is not in the local Maven repository and "
            f"the install was asked to stay offline{detail}"
        )
    if missing is not None:
        what = missing.group(1)
        if what.startswith(f"{GROUP_ID}:{ARTIFACT_ID}:"):
            return (
                f"Maven Central does not serve {artifact} to this machine (mvn could not find "
                f"{what}). Versions served here: {', '.join(SERVED_VERSIONS)}; not served: "
                f"{', '.join(NOT_SERVED_VERSIONS)}{detail}"
            )
        return f"{artifact} needs {what}, which Maven could not find{detail}"
    if re.search(
        r"Could not transfer|Unknown host|UnknownHostException|Connection refused|"
        r"timed out|Network is unreachable|Connect to \S+ failed",
        output,
    ):
        return (
            f"Maven could not reach its repository to download {artifact}: is Maven Central "
            f"reachable from here?{detail}"
        )
    tail = "\n".join(output.strip().splitlines()[-15:])
    return f"mvn failed to resolve {artifact}:\n{tail}"


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
     bookie's console in its own log file. Level: -Dbookkeeper.log.root.level (INFO). -->
<Configuration status="warn" name="bkconform-bookkeeper">
  <Appenders>
    <Console name="CONSOLE" target="SYSTEM_OUT">
      <PatternLayout pattern="%d{ISO8601} %-5p [%t] %c{1} - %m%n"/>
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


def _write_layout(staging: Path, version: str, artifacts: Sequence[ListedArtifact]) -> int:
    lib = staging / "lib"
    lib.mkdir()
    copied = 0
    for artifact in artifacts:
        if artifact.type != "jar":
            continue
        if not artifact.path.is_file():
            raise BookKeeperInstallError(
                f"mvn listed {artifact.path} for {artifact.group}:{artifact.artifact} but the "
                "file is missing"
            )
        shutil.copyfile(artifact.path, lib / artifact.distribution_name)
        copied += 1
    expected = f"{GROUP_ID}-{ARTIFACT_ID}-{version}.jar"
    if not (lib / expected).is_file():
        raise BookKeeperInstallError(
            f"mvn resolved {copied} jars but not {GROUP_ID}:{ARTIFACT_ID}:{version} itself "
            f"(no lib/{expected})"
        )
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
    return copied


def install(
    version: str = DEFAULT_VERSION,
    *,
    root: Path | None = None,
    offline: bool | None = None,
    force: bool = False,
    timeout: float = DEFAULT_MAVEN_TIMEOUT,
    maven_repo: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> Installation:
    """Install ``version`` (idempotent: an existing complete install is returned as it is).

    ``offline`` None tries ``mvn -o`` first and goes online only if the local Maven
    repository lacks something; True never goes online; False always does. ``force``
    reinstalls. ``timeout`` bounds each ``mvn`` call. ``maven_repo`` overrides Maven's local
    repository (``-Dmaven.repo.local``).
    """
    version = check_version(version)
    return install_atomically(
        install_root(environ) if root is None else root,
        version,
        Installation.read,
        lambda staging: _build(staging, version, offline, timeout, maven_repo, environ, progress),
        force=force,
    )


def _build(
    staging: Path,
    version: str,
    offline: bool | None,
    timeout: float,
    maven_repo: Path | None,
    environ: Mapping[str, str] | None,
    progress: bool,
) -> Installation:
    mvn = find_maven(environ)
    maven_dir = staging / "maven"
    maven_dir.mkdir()
    pom = maven_dir / "pom.xml"
    pom.write_text(render_pom(version))
    listing = maven_dir / "dependencies.txt"
    command: list[str] = []  # the last call's, the one that succeeded: the marker records it

    def resolve(attempt: bool) -> MavenRun:
        command[:] = maven_command(mvn, pom, listing, offline=attempt, maven_repo=maven_repo)
        return run_maven(command, timeout, maven_dir, error=BookKeeperInstallError)

    run_offline_first(
        offline,
        resolve,
        lambda run, attempt: BookKeeperInstallError(
            explain_maven_failure(version, run.output, offline=attempt)
        ),
        resolving=f"{GROUP_ID}:{ARTIFACT_ID}:{version}",
        progress=progress,
    )
    try:
        artifacts = parse_listing(listing.read_text())
    except OSError as exc:
        raise BookKeeperInstallError(
            f"mvn succeeded but wrote no dependency list ({listing}): {exc}"
        ) from exc
    jars = _write_layout(staging, version, artifacts)
    installed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (staging / MARKER).write_text(
        json.dumps(
            {
                "version": version,
                "layout": LAYOUT_VERSION,
                "artifact": f"{GROUP_ID}:{ARTIFACT_ID}:{version}",
                "jars": jars,
                "installed_at": installed_at,
                "mvn": command,
            },
            indent=2,
        )
        + "\n"
    )
    return Installation(version, staging, jars, installed_at)


# The option -----------------------------------------------------------------------------------


def resolve_bookkeeper(
    spec: str | Path,
    *,
    root: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> Path:
    """``--bookkeeper VERSION|DIR``: a version is installed on first use (then read from the
    cache); a directory must be a BOOKKEEPER_HOME. Returns the home."""
    text = str(spec).strip()
    path = Path(text).expanduser()
    if isinstance(spec, Path) or os.sep in text or path.is_dir() or not _VERSION_TEXT.match(text):
        home = find_bookkeeper_home(path, {})
        assert home is not None
        return home
    return install(text, root=root, environ=environ, progress=progress).home


__all__ = [
    "DEFAULT_VERSION",
    "NOT_SERVED_VERSIONS",
    "SERVED_VERSIONS",
    "BookKeeperInstallError",
    "Installation",
    "ListedArtifact",
    "bkconform_home",
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
    "remove",
    "render_pom",
    "resolve_bookkeeper",
]

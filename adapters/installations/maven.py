"""Installs built from Maven into a per-user cache, put in place atomically under a lock, and
the ``mvn`` calls that build them (offline first, each bounded by a timeout).

An install of ``name`` is ``<root>/<name>/``. It is built in a temporary ``.staging-<name>-*``
directory next to it and renamed into place while holding the lock on ``name``, so concurrent
installers wait for one another and an interrupted install never looks complete (what one left
behind, ``.staging-*`` and ``.removing-*``, is cleared by the next install). Used by
:mod:`adapters.installations.bookkeeper` and :mod:`adapters.installations.jacoco`.

It also reads what ``mvn`` reads and says: the remote repository its settings point at
(:func:`configured_repository`), the versions that repository lists for an artifact
(:func:`fetch_versions`, its ``maven-metadata.xml``), the POMs it could not read
(:func:`pom_problems`) and why, in the local repository (:func:`diagnose_local_pom`).
"""

from __future__ import annotations

import dataclasses
import http.client
import os
import re
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from adapters.errors import ClusterError
from adapters.process_group import run_in_process_group
from adapters.user_state import exclusive_lock

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: The plugin every install's ``mvn`` call runs a goal of.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"

#: An install's description: a dataclass with a ``home`` field (where the install is).
InstallT = TypeVar("InstallT", bound="DataclassInstance")


def install_atomically(
    root: Path,
    name: str,
    read: Callable[[Path], InstallT | None],
    build: Callable[[Path], InstallT],
    *,
    force: bool = False,
) -> InstallT:
    """The complete install at ``root/name`` as ``read`` finds it, or else (or with ``force``)
    a new one: ``build(staging)`` fills an empty staging directory and returns the install as
    built there; it is renamed to ``root/name`` (replacing what was there) and returned with
    its ``home`` there. If ``build`` raises, nothing changes but the staging directory's
    removal."""
    target = root / name
    existing = read(target)
    if existing is not None and not force:
        return existing
    with exclusive_lock(root, name):
        existing = read(target)
        if existing is not None and not force:
            return existing  # installed by a concurrent call while we waited
        # What an interrupted install or removal left behind (never a valid layout).
        for stale in [*root.glob(f".staging-{name}-*"), *root.glob(f".removing-{name}-*")]:
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=root))
        try:
            built = build(staging)
            if target.exists():  # force, or a layout an older bkconform left
                discard_install(root, target)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return dataclasses.replace(built, home=target)


def discard_install(root: Path, target: Path) -> None:
    """Delete an install, renamed away first: a reader never sees a half-deleted install with
    its marker (an interrupted deletion leaves a ``.removing-*`` that the next install clears).
    The caller holds the install's lock."""
    doomed = root / f".removing-{target.name}-{os.getpid()}"
    target.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)


@dataclass(frozen=True)
class MavenRun:
    returncode: int
    output: str
    #: Why a run that exited 0 is still not a complete resolution (None: it is, or it failed).
    incomplete: str | None = None


def run_maven(
    command: Sequence[str], timeout: float, cwd: Path, *, error: type[Exception]
) -> MavenRun:
    """Run ``command`` in its own process group, its output (stderr merged) captured; the group
    is killed on the timeout (then ``error``) and on any interrupt (re-raised)."""
    done = run_in_process_group(
        command,
        cwd=cwd,
        timeout=timeout,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if done.returncode is None:
        raise error(f"mvn did not finish within {timeout:.0f}s (killed): {' '.join(command)}")
    return MavenRun(done.returncode, done.stdout or "")


def run_offline_first(
    offline: bool | None,
    run: Callable[[bool], MavenRun],
    failure: Callable[[MavenRun, bool], Exception],
    *,
    resolving: str,
    progress: bool = False,
    incomplete: Callable[[MavenRun], str | None] | None = None,
) -> MavenRun:
    """``run(offline)`` until one succeeds: ``offline`` None runs offline (``mvn -o``) first
    and again online only if the local Maven repository lacks something; True or False runs
    just that. A failure that going online cannot help raises ``failure(run, offline)``.
    ``progress`` prints where ``resolving`` (what is resolved) comes from before each run.

    ``incomplete(run)`` judges a run that exited 0: a reason (a POM Maven could not read, a
    class no jar holds) makes it a failure like any other, retried online after an offline
    run, else raised as ``failure`` with the reason in ``run.incomplete``. Maven itself
    exits 0 when it could not read a POM ("transitive dependencies (if any) will not be
    available"): from a local repository an interrupted download left, that is a one-jar
    resolution that looks like success."""
    attempts = [True, False] if offline is None else [offline]
    for index, attempt in enumerate(attempts):
        if progress:
            where = "the local Maven repository" if attempt else "Maven's remote repository"
            print(f"resolving {resolving} from {where}", flush=True)
        done = run(attempt)
        more = index + 1 < len(attempts)
        if done.returncode == 0:
            reason = None if incomplete is None else incomplete(done)
            if reason is None:
                return done
            done = dataclasses.replace(done, incomplete=reason)
            if more:
                if progress:
                    print(f"incomplete ({reason}): going online", flush=True)
                continue
            raise failure(done, attempt)
        # Not all in ~/.m2 yet (or a POM there unreadable offline): going online may help.
        if more and ("offline mode" in done.output or pom_problems(done.output)):
            continue
        raise failure(done, attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


# What Maven's output says -----------------------------------------------------------------

_UNREACHABLE = re.compile(
    r"Could not transfer|Unknown host|UnknownHostException|Connection refused|"
    r"timed out|Network is unreachable|Connect to \S+ failed"
)


def maven_error_detail(output: str) -> str:
    """Maven's first ``[ERROR]`` line, as ``\nmvn said: ...`` (empty when it gave none)."""
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]")]
    first = next((line for line in errors if line.strip() != "[ERROR]"), "")
    return f"\nmvn said: {first.removeprefix('[ERROR] ').strip()}" if first else ""


def maven_unreachable(output: str) -> bool:
    """Did Maven fail because it could not reach its repository?"""
    return _UNREACHABLE.search(output) is not None


def maven_tail(output: str, lines: int = 15) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])


# The POMs Maven could not read ----------------------------------------------------------------

# What mvn 3.8 prints when it could not read or find a POM. The first two are warnings of a
# run that still exits 0 (its policy ignores missing and invalid descriptors) and lists the
# artifact without its dependencies; the last two are errors.
_POM_PROBLEMS = (
    (
        re.compile(r"The POM for (\S+) is invalid, transitive dependencies"),
        "the POM of {} is invalid (it or a parent POM it inherits from is unreadable)",
    ),
    (
        re.compile(r"The POM for (\S+) is missing, no dependency information available"),
        "the POM of {} is missing",
    ),
    (re.compile(r"Could not find artifact (\S+:pom:\S+)"), "could not find {}"),
    (
        re.compile(r"Failed to read artifact descriptor for (\S+?):?(?=\s|$)"),
        "could not read the POM of {}",
    ),
)


def pom_problems(output: str) -> list[str]:
    """Every POM ``mvn``'s output says it could not read or find, as short sentences in the
    order printed (each once). Empty: every POM was read."""
    found: dict[str, None] = {}
    for line in output.splitlines():
        for pattern, sentence in _POM_PROBLEMS:
            for match in pattern.finditer(line):
                found.setdefault(sentence.format(match.group(1).rstrip(":")))
    return list(found)


def _local_name(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child(element: ET.Element, name: str) -> ET.Element | None:
    return next((c for c in element if _local_name(c.tag) == name), None)


def _text(element: ET.Element | None, name: str) -> str | None:
    found = None if element is None else _child(element, name)
    text = None if found is None or found.text is None else found.text.strip()
    return text or None


def _children(element: ET.Element | None, *path: str) -> Iterator[ET.Element]:
    """The elements at ``path`` under ``element`` (namespaces ignored: settings and POMs
    come with and without theirs)."""
    if element is None:
        return
    if not path:
        yield element
        return
    for child in element:
        if _local_name(child.tag) == path[0]:
            yield from _children(child, *path[1:])


def pom_path(local_repository: Path, group: str, artifact: str, version: str) -> Path:
    """Where the local repository keeps ``group:artifact:version``'s POM."""
    return (
        local_repository
        / group.replace(".", "/")
        / artifact
        / version
        / f"{artifact}-{version}.pom"
    )


@dataclass(frozen=True)
class PomDiagnosis:
    """What the local repository shows of a POM Maven could not read: ``text`` a sentence;
    ``unreadable`` the file is there but broken (Maven will not download it again: it has to
    be deleted), else it is missing (Maven downloads it online)."""

    text: str
    unreadable: bool


def diagnose_local_pom(
    local_repository: Path, group: str, artifact: str, version: str, *, depth: int = 8
) -> PomDiagnosis | None:
    """The first POM of ``group:artifact:version``'s parent chain that is missing from the
    local repository or is no readable XML (what an interrupted download leaves); None when
    the chain is whole as far as files go."""
    coordinates = (group, artifact, version)
    for _ in range(depth):
        path = pom_path(local_repository, *coordinates)
        name = ":".join(coordinates)
        if not path.is_file():
            return PomDiagnosis(f"{name}'s POM is missing ({path})", unreadable=False)
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError) as exc:
            return PomDiagnosis(
                f"{path} ({name}'s POM) is not a readable POM ({exc}): an interrupted "
                "download? Delete it and install again (Maven never downloads again a POM it "
                "finds on disk)",
                unreadable=True,
            )
        parent = _child(root, "parent")
        if parent is None:
            return None
        parent_coordinates = (
            _text(parent, "groupId"),
            _text(parent, "artifactId"),
            _text(parent, "version"),
        )
        if None in parent_coordinates:
            return PomDiagnosis(f"{path} ({name}'s POM) names an incomplete <parent>", True)
        coordinates = parent_coordinates  # type: ignore[assignment]
    return None


# The repository mvn is configured with -----------------------------------------------------

#: Maven's built-in remote repository, ``central``.
MAVEN_CENTRAL = "https://repo.maven.apache.org/maven2"
#: Seconds to wait on a repository for a ``maven-metadata.xml`` (each connect and read).
METADATA_TIMEOUT = 10.0
#: A maven-metadata.xml is a few kB; more than this is no metadata file.
_METADATA_LIMIT = 4 << 20


@dataclass(frozen=True)
class MavenRepository:
    """The remote repository ``mvn`` resolves ``central``'s artifacts from, where that was
    configured, and the local repository it keeps them in."""

    url: str
    origin: str
    local: Path

    def describe(self) -> str:
        return f"{self.url} ({self.origin})"


@dataclass(frozen=True)
class _Mirror:
    id: str
    mirror_of: str
    url: str
    source: Path


def settings_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The ``settings.xml`` files ``mvn`` reads, the user's first (it wins): ``$HOME/.m2/
    settings.xml``, then the global one next to the ``mvn`` on ``PATH`` (``<maven home>/conf/
    settings.xml``, which Debian links to ``/etc/maven/settings.xml``). Those that exist."""
    env = os.environ if environ is None else environ
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    candidates = [home / ".m2" / "settings.xml"]
    mvn = shutil.which("mvn", path=env.get("PATH"))
    if mvn is not None:
        # mvn's script sets maven.home from its own location, whatever MAVEN_HOME says.
        candidates.append(Path(mvn).resolve().parent.parent / "conf" / "settings.xml")
    return [path for path in candidates if path.is_file()]


def _mirror_matches(pattern: str, repository_id: str, url: str) -> bool:
    """Maven's ``mirrorOf`` rule (DefaultMirrorSelector.matchPattern): ``*``, an id, a comma
    list with ``!id`` exclusions, ``external:*`` and ``external:http:*``."""
    if pattern in ("*", repository_id):
        return True
    parsed = urllib.parse.urlparse(url)
    external = parsed.scheme != "file" and parsed.hostname not in ("localhost", "127.0.0.1")
    external_patterns = {"external:*"} | ({"external:http:*"} if parsed.scheme == "http" else set())
    result = False
    for part in (p.strip() for p in pattern.split(",")):
        if len(part) > 1 and part.startswith("!"):
            if part[1:] == repository_id:
                return False
        elif part == repository_id:
            return True
        elif part == "*" or (external and part in external_patterns):
            result = True
    return result


def _interpolate(text: str, home: Path, env: Mapping[str, str]) -> str:
    text = text.replace("${user.home}", str(home))
    return re.sub(r"\$\{env\.([^}]+)\}", lambda m: env.get(m.group(1), ""), text)


def configured_repository(
    environ: Mapping[str, str] | None = None, *, maven_repo: Path | None = None
) -> MavenRepository:
    """The remote repository ``mvn`` would resolve this project's artifacts from (they all
    come from ``central``) and its local repository (``maven_repo`` if given).

    Read from the settings files (:func:`settings_files`), not from ``mvn
    help:effective-settings``, which takes seconds and may itself need the network: an
    active profile's repository with the id ``central`` replaces Maven Central's URL, and
    the first mirror whose ``mirrorOf`` matches ``central`` (the user's before the global
    ones, an exact id before patterns, as Maven picks) replaces that. Not read: ``-s``/
    ``-gs`` or settings given through ``MAVEN_ARGS`` or ``.mvn/maven.config``, and
    properties other than ``${user.home}`` and ``${env.*}``. Unreadable settings files are
    skipped (mvn itself would refuse them and say why)."""
    env = os.environ if environ is None else environ
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    mirrors: list[_Mirror] = []
    central: tuple[str, Path] | None = None
    local: Path | None = None
    for path in settings_files(env):
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError):
            continue
        if local is None and _text(root, "localRepository"):
            local = Path(_interpolate(_text(root, "localRepository") or "", home, env))
        active = {
            (e.text or "").strip() for e in _children(root, "activeProfiles", "activeProfile")
        }
        for profile in _children(root, "profiles", "profile"):
            by_default = _text(_child(profile, "activation"), "activeByDefault") == "true"
            if _text(profile, "id") not in active and not by_default:
                continue
            for repository in _children(profile, "repositories", "repository"):
                url = _text(repository, "url")
                if central is None and _text(repository, "id") == "central" and url:
                    central = (_interpolate(url, home, env), path)
        for mirror in _children(root, "mirrors", "mirror"):
            mirror_url = _text(mirror, "url")
            if mirror_url:
                mirrors.append(
                    _Mirror(
                        _text(mirror, "id") or "?",
                        _text(mirror, "mirrorOf") or "",
                        _interpolate(mirror_url, home, env),
                        path,
                    )
                )
    url, origin = (
        (central[0], f"the repository 'central' of an active profile in {central[1]}")
        if central is not None
        else (MAVEN_CENTRAL, "Maven Central, Maven's default")
    )
    chosen = next((m for m in mirrors if m.mirror_of == "central"), None) or next(
        (m for m in mirrors if _mirror_matches(m.mirror_of, "central", url)), None
    )
    if chosen is not None:
        url, origin = chosen.url, f"mirror {chosen.id!r} of central in {chosen.source}"
    if maven_repo is not None:
        local = maven_repo
    return MavenRepository(url.rstrip("/"), origin, local or home / ".m2" / "repository")


class MetadataUnavailable(ClusterError):
    """A repository's ``maven-metadata.xml`` could not be read; the message says which and
    why. Retriable (ClusterError's default): an unreachable repository may answer later."""


def metadata_url(repository_url: str, group: str, artifact: str) -> str:
    """``<repository>/<group as a path>/<artifact>/maven-metadata.xml``."""
    return f"{repository_url.rstrip('/')}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"


def fetch_versions(
    repository_url: str, group: str, artifact: str, *, timeout: float = METADATA_TIMEOUT
) -> list[str]:
    """The versions of ``group:artifact`` the repository at ``repository_url`` (``http(s)``
    or ``file``) lists in its ``maven-metadata.xml``, in the file's order.

    :raises MetadataUnavailable: no answer within ``timeout`` seconds (per connect and per
        read), an HTTP error, a file that is no metadata.
    """
    url = metadata_url(repository_url, group, artifact)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            body = response.read(_METADATA_LIMIT)
    except urllib.error.HTTPError as exc:
        raise MetadataUnavailable(f"{url} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise MetadataUnavailable(f"could not read {url}: {exc.reason}") from None
    except (OSError, http.client.HTTPException, ValueError) as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
        raise MetadataUnavailable(f"could not read {url}: {reason}") from None
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise MetadataUnavailable(f"{url} is no maven-metadata.xml ({exc})") from None
    return [
        (element.text or "").strip()
        for element in _children(root, "versioning", "versions", "version")
        if (element.text or "").strip()
    ]


def version_key(version: str) -> tuple[int, ...]:
    """``4.17.3`` as ``(4, 17, 3)``, for sorting versions (their first three numbers)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def served_text(
    repository: MavenRepository,
    group: str,
    artifact: str,
    version: str,
    *,
    timeout: float = METADATA_TIMEOUT,
    listing: str = "",
) -> str:
    """What ``repository`` serves of ``group:artifact``, asked now, as a sentence for a
    message about ``version`` that Maven could not get: the versions of its major.minor line
    and the newest, or that it lists ``version`` itself. ``listing`` names a command that
    lists them all. Never raises: a repository that cannot be asked gives a sentence saying
    so, never a list known from elsewhere."""
    where = repository.describe()
    more = f" ({listing} lists them all)" if listing else ""
    try:
        versions = sorted(
            fetch_versions(repository.url, group, artifact, timeout=timeout), key=version_key
        )
    except MetadataUnavailable as exc:
        again = f"; {listing} asks again" if listing else ""
        return f"Which versions {where} serves is not known: {exc}{again}"
    if not versions:
        return f"{where} lists no version of {group}:{artifact}"
    if version in versions:
        return f"{where} lists {version} of {group}:{artifact}, yet mvn could not get it{more}"
    line = version_key(version)[:2]
    prefix = ".".join(str(part) for part in line)
    same = [v for v in versions if version_key(v)[:2] == line]
    of_line = (
        f"of {prefix} it serves {', '.join(same)}" if same else f"it serves no {prefix} release"
    )
    return (
        f"Asked now, {where} lists {len(versions)} versions of {group}:{artifact}: {of_line}; "
        f"the newest is {versions[-1]}{more}"
    )


__all__ = [
    "DEPENDENCY_PLUGIN",
    "MAVEN_CENTRAL",
    "METADATA_TIMEOUT",
    "MavenRepository",
    "MavenRun",
    "MetadataUnavailable",
    "PomDiagnosis",
    "configured_repository",
    "diagnose_local_pom",
    "discard_install",
    "fetch_versions",
    "install_atomically",
    "maven_error_detail",
    "maven_tail",
    "maven_unreachable",
    "metadata_url",
    "pom_path",
    "pom_problems",
    "run_maven",
    "run_offline_first",
    "served_text",
    "settings_files",
    "version_key",
]

"""The BookKeeper installer with the real ``mvn`` on a local Maven repository that holds only
part of a release: what ``mvn dependency:get -Dtransitive=false`` leaves (the jar and its POM),
and what an interrupted download leaves (the jar without its POM; a truncated parent POM). On
such a repository ``mvn -o`` exits 0 having listed bookkeeper-server alone (the last two, with
mvn 3.8.7), which an earlier installer accepted as a one-jar install that then failed every
command using it. The install must either complete with every dependency or fail with a
message naming the version and what is missing, leaving nothing installed.

The local repository is built from the real one (``~/.m2/repository``, where an installed
release's jars are): every directory linked, except ``org/apache/bookkeeper``, which holds only
the parts the case keeps. Going online downloads into that directory (the tests' own); the
links let the rest come from ``~/.m2`` as it is. Slow (a JVM per ``mvn`` call) and, online,
needs the repository Maven is configured with: marked as the project's other real-Maven tests.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from adapters.installations.bookkeeper import (
    REQUIRED_CLASSES,
    BookKeeperInstallError,
    install,
    installed,
    resolve_bookkeeper,
)
from adapters.installations.releases import missing_classes

M2 = Path.home() / ".m2" / "repository"
SERVER = M2 / "org" / "apache" / "bookkeeper" / "bookkeeper-server"
PARENT = M2 / "org" / "apache" / "bookkeeper" / "bookkeeper"
#: What each case keeps of the release in the local repository.
CASES = ("jar-and-pom", "jar-without-pom", "truncated-parent-pom")


def _version() -> str:
    """A release whose jar, POM and parent POM the real local repository holds (the smallest
    first); skips the test when there is none or no ``mvn``."""
    if shutil.which("mvn") is None:
        pytest.skip("no mvn on PATH")
    for version in ("4.14.7", "4.11.1", "4.16.6", "4.17.3", "4.15.4"):
        parts = [
            SERVER / version / f"bookkeeper-server-{version}.jar",
            SERVER / version / f"bookkeeper-server-{version}.pom",
            PARENT / version / f"bookkeeper-{version}.pom",
        ]
        if all(part.is_file() for part in parts):
            return version
    pytest.skip(f"no BookKeeper release in {M2} (bkconform bookkeeper install 4.14.7 puts one)")


def _linked(source: Path, target: Path, excluded: Iterable[str]) -> None:
    """``target`` as ``source`` with every entry a link, but the path ``excluded`` an empty
    directory of its own."""
    head, *rest = excluded
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name != head:
            (target / entry.name).symlink_to(entry)
        elif rest:
            _linked(entry, target / entry.name, rest)
        else:
            (target / entry.name).mkdir()


def partial_repository(tmp_path: Path, version: str, case: str) -> Path:
    repository = tmp_path / "m2"
    _linked(M2, repository, ["org", "apache", "bookkeeper"])
    server = repository / "org" / "apache" / "bookkeeper" / "bookkeeper-server" / version
    server.mkdir(parents=True)
    shutil.copyfile(
        SERVER / version / f"bookkeeper-server-{version}.jar",
        server / f"bookkeeper-server-{version}.jar",
    )
    if case != "jar-without-pom":
        shutil.copyfile(
            SERVER / version / f"bookkeeper-server-{version}.pom",
            server / f"bookkeeper-server-{version}.pom",
        )
    if case == "truncated-parent-pom":
        parent = repository / "org" / "apache" / "bookkeeper" / "bookkeeper" / version
        parent.mkdir(parents=True)
        text = (PARENT / version / f"bookkeeper-{version}.pom").read_bytes()
        (parent / f"bookkeeper-{version}.pom").write_bytes(text[: len(text) // 3])
    return repository


def _assert_complete_or_clear(
    outcome: object, version: str, root: Path, local: Path, case: str
) -> str:
    """The outcome is a complete install or a clear failure; which, in words."""
    if isinstance(outcome, BookKeeperInstallError):
        message = str(outcome)
        assert f"BookKeeper {version}" in message or f"bookkeeper-server:{version}" in message
        if case == "truncated-parent-pom":
            # Maven never downloads again a POM it finds on disk: the message names the file.
            truncated = (
                local / f"org/apache/bookkeeper/bookkeeper/{version}/bookkeeper-{version}.pom"
            )
            assert f"{truncated} (org.apache.bookkeeper:bookkeeper:{version}'s POM) is not a " in (
                message
            )
            assert "Delete it and install again" in message
        assert installed(root) == []
        assert not (root / version).exists()
        return f"failed clearly: {message}"
    assert not isinstance(outcome, BaseException), outcome
    jars = sorted((root / version / "lib").glob("*.jar"))
    assert len(jars) > 20  # 46 for 4.11.1, 52 for 4.14.7, 68 for 4.17.3
    assert missing_classes(REQUIRED_CLASSES, jars) == []
    assert resolve_bookkeeper(version, root=root) == root / version  # checked complete on use
    return f"complete: {len(jars)} jars"


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_a_partial_local_repository_gives_a_complete_install_or_a_clear_failure(
    tmp_path: Path, case: str
) -> None:
    """Offline first, then online: never a one-jar install."""
    version = _version()
    local = partial_repository(tmp_path, version, case)
    root = tmp_path / "installs"
    outcome: object
    try:
        outcome = install(version, root=root, maven_repo=local, timeout=600)
    except BookKeeperInstallError as exc:
        outcome = exc
    print(f"{case} ({version}):", _assert_complete_or_clear(outcome, version, root, local, case))


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_a_partial_local_repository_offline_is_a_clear_failure(tmp_path: Path, case: str) -> None:
    """``--offline`` (no network needed): the missing parts cannot come, so nothing is
    installed and the message says what is missing and what to do."""
    version = _version()
    local = partial_repository(tmp_path, version, case)
    root = tmp_path / "installs"
    with pytest.raises(BookKeeperInstallError) as error:
        install(version, root=root, maven_repo=local, offline=True, timeout=600)
    message = str(error.value)
    print(f"{case} ({version}), offline:", message)
    assert f"org.apache.bookkeeper:bookkeeper-server:{version}" in message
    if case == "jar-and-pom":
        # mvn -o itself refuses: the parent POM was never downloaded.
        assert "is not in the local Maven repository and the install was asked to stay " in (
            message
        )
    else:
        assert message.startswith(f"BookKeeper {version} was not installed: the resolution of ")
        assert "is incomplete (the POM of org.apache.bookkeeper:bookkeeper-server:jar:" in message
        if case == "jar-without-pom":  # online would download the POM
            assert "The install was asked to stay offline: install without --offline" in message
    _assert_complete_or_clear(error.value, version, root, local, case)

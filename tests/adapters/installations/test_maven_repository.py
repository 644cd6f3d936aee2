"""What the installers read of Maven without running it: the remote repository its settings
point at, the versions that repository lists, the POMs its output says it could not read and
which file of the local repository explains it, and the offline-first runs that treat such a
run as a failure. No network: the repositories are directories and loopback servers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.installations.maven import (
    MAVEN_CENTRAL,
    MavenRepository,
    MavenRun,
    MetadataUnavailable,
    configured_repository,
    diagnose_local_pom,
    fetch_versions,
    pom_problems,
    run_offline_first,
    served_text,
    settings_files,
)
from tests.adapters.installations.maven_repo import (
    closed_port_url,
    http_repository,
    settings_xml,
    write_metadata,
)

# mvn 3.8.7's words, as it printed them here for a local repository an interrupted download
# left (the parent POM truncated; the jar without its POM; the parent missing, offline).
INVALID = (
    "[WARNING] The POM for org.apache.bookkeeper:bookkeeper-server:jar:4.14.7 is invalid, "
    "transitive dependencies (if any) will not be available, enable debug logging for more "
    "details"
)
MISSING = (
    "[WARNING] The POM for org.apache.bookkeeper:bookkeeper-server:jar:4.14.7 is missing, no "
    "dependency information available"
)
DESCRIPTOR = (
    "[ERROR] Failed to execute goal on project bookkeeper-install: Could not resolve "
    "dependencies for project bkconform:bookkeeper-install:pom:1: Failed to collect "
    "dependencies at org.apache.bookkeeper:bookkeeper-server:jar:4.14.7: Failed to read "
    "artifact descriptor for org.apache.bookkeeper:bookkeeper-server:jar:4.14.7: Could not find "
    "artifact org.apache.bookkeeper:bookkeeper:pom:4.14.7 in central "
    "(https://repo.maven.apache.org/maven2) -> [Help 1]"
)


# -- the configured repository ------------------------------------------------------------------


def environ_with(home: Path, *, user: str | None = None, path: str = "") -> dict[str, str]:
    """An environment whose ``$HOME`` is ``home`` (with ``user`` as its settings.xml) and
    whose ``PATH`` is ``path`` (an ``mvn`` there brings its global settings)."""
    if user is not None:
        (home / ".m2").mkdir(parents=True, exist_ok=True)
        (home / ".m2" / "settings.xml").write_text(user)
    return {"HOME": str(home), "PATH": path}


def global_mvn(root: Path, settings: str) -> str:
    """A Maven installation's layout: ``bin/mvn`` and ``conf/settings.xml``; its bin dir."""
    (root / "bin").mkdir(parents=True)
    (root / "conf").mkdir()
    mvn = root / "bin" / "mvn"
    mvn.write_text("#!/bin/sh\n")
    mvn.chmod(0o755)
    (root / "conf" / "settings.xml").write_text(settings)
    return str(root / "bin")


def test_without_settings_it_is_maven_central(tmp_path: Path) -> None:
    found = configured_repository(environ_with(tmp_path))
    assert found.url == MAVEN_CENTRAL == "https://repo.maven.apache.org/maven2"
    assert found.origin == "Maven Central, Maven's default"
    assert found.local == tmp_path / ".m2" / "repository"
    assert configured_repository(environ_with(tmp_path), maven_repo=tmp_path / "r").local == (
        tmp_path / "r"
    )


def test_the_users_mirror_comes_before_the_global_one(tmp_path: Path) -> None:
    bin_dir = global_mvn(tmp_path / "maven", settings_xml("https://global.example/m2"))
    environ = environ_with(tmp_path / "home", path=bin_dir)
    assert settings_files(environ) == [tmp_path / "maven" / "conf" / "settings.xml"]
    found = configured_repository(environ)
    assert found.url == "https://global.example/m2"
    assert found.origin == f"mirror 'tests' of central in {tmp_path / 'maven/conf/settings.xml'}"
    environ = environ_with(
        tmp_path / "home", user=settings_xml("https://user.example/m2/"), path=bin_dir
    )
    found = configured_repository(environ)
    assert found.url == "https://user.example/m2"  # without the trailing slash
    assert "home/.m2/settings.xml" in found.origin


@pytest.mark.parametrize(
    ("mirror_of", "matches"),
    [
        ("*", True),
        ("central", True),
        ("external:*", True),
        ("other,central", True),
        ("*,!central", False),
        ("external:http:*", False),  # central is https: Debian's http blocker leaves it alone
        ("other", False),
    ],
)
def test_mirror_of_is_matched_as_maven_does(tmp_path: Path, mirror_of: str, matches: bool) -> None:
    user = settings_xml("https://mirror.example/m2", mirror_of=mirror_of)
    found = configured_repository(environ_with(tmp_path, user=user))
    assert found.url == ("https://mirror.example/m2" if matches else MAVEN_CENTRAL)


def test_an_exact_mirror_of_central_wins_over_a_pattern_before_it(tmp_path: Path) -> None:
    user = """<settings><mirrors>
      <mirror><id>all</id><mirrorOf>*</mirrorOf><url>https://all.example</url></mirror>
      <mirror><id>c</id><mirrorOf>central</mirrorOf><url>https://central.example</url></mirror>
    </mirrors></settings>"""
    assert configured_repository(environ_with(tmp_path, user=user)).url == (
        "https://central.example"
    )


def test_an_active_profile_may_move_central(tmp_path: Path) -> None:
    user = """<settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
      <localRepository>${user.home}/repo-${env.WHO}</localRepository>
      <profiles>
        <profile><id>off</id><repositories><repository><id>central</id>
          <url>https://inactive.example</url></repository></repositories></profile>
        <profile><id>on</id><repositories><repository><id>central</id>
          <url>https://profile.example/m2</url></repository></repositories></profile>
      </profiles>
      <activeProfiles><activeProfile>on</activeProfile></activeProfiles>
    </settings>"""
    environ = {**environ_with(tmp_path, user=user), "WHO": "me"}
    found = configured_repository(environ)
    assert found.url == "https://profile.example/m2"
    assert found.origin.startswith("the repository 'central' of an active profile in ")
    assert found.local == tmp_path / "repo-me"


def test_an_unreadable_settings_file_is_skipped(tmp_path: Path) -> None:
    found = configured_repository(environ_with(tmp_path, user="<settings><mirrors>"))
    assert found.url == MAVEN_CENTRAL


# -- what it lists ------------------------------------------------------------------------------


def test_versions_come_from_the_metadata_over_file_and_http(tmp_path: Path) -> None:
    write_metadata(tmp_path, "org.apache.zookeeper", "zookeeper", ["3.9.2", "3.8.4", "3.9.3"])
    assert fetch_versions(tmp_path.as_uri(), "org.apache.zookeeper", "zookeeper") == [
        "3.9.2",
        "3.8.4",
        "3.9.3",
    ]
    with http_repository(tmp_path) as url:
        assert fetch_versions(url + "/", "org.apache.zookeeper", "zookeeper") == [
            "3.9.2",
            "3.8.4",
            "3.9.3",
        ]
        with pytest.raises(
            MetadataUnavailable,
            match=r"bookkeeper-server/maven-metadata.xml "
            r"answered HTTP 404",
        ):
            fetch_versions(url, "org.apache.bookkeeper", "bookkeeper-server")


def test_what_is_no_metadata_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "g" / "a" / "maven-metadata.xml"
    path.parent.mkdir(parents=True)
    path.write_text("<html>a login page")
    with pytest.raises(MetadataUnavailable, match=r"is no maven-metadata\.xml"):
        fetch_versions(tmp_path.as_uri(), "g", "a")
    with pytest.raises(MetadataUnavailable, match="could not read file://"):
        fetch_versions(tmp_path.as_uri(), "g", "missing")


def test_an_unreachable_or_silent_repository_is_an_error_within_the_timeout(
    tmp_path: Path,
) -> None:
    with pytest.raises(MetadataUnavailable, match="Connection refused"):
        fetch_versions(closed_port_url(), "g", "a")
    write_metadata(tmp_path, "g", "a", ["1.0.0"])
    with http_repository(tmp_path, delay=5.0) as url:
        started = time.monotonic()
        with pytest.raises(MetadataUnavailable, match=r"could not read http://.*: timed out"):
            fetch_versions(url, "g", "a", timeout=0.3)
        assert time.monotonic() - started < 3.0


def test_what_is_served_is_said_from_the_metadata_read_now(tmp_path: Path) -> None:
    repository = MavenRepository(tmp_path.as_uri(), "the tests'", tmp_path / "local")
    write_metadata(tmp_path, "g", "empty", [])
    assert served_text(repository, "g", "empty", "1.0.0") == (
        f"{tmp_path.as_uri()} (the tests') lists no version of g:empty"
    )
    write_metadata(tmp_path, "g", "a", ["2.0.1", "1.9.0", "2.0.0", "10.0.0"])
    assert served_text(repository, "g", "a", "2.0.2", listing="`ls`") == (
        f"Asked now, {tmp_path.as_uri()} (the tests') lists 4 versions of g:a: of 2.0 it serves "
        "2.0.0, 2.0.1; the newest is 10.0.0 (`ls` lists them all)"
    )
    # Written again: the next message reads it again (nothing is remembered).
    write_metadata(tmp_path, "g", "a", ["2.0.2"])
    assert "lists 2.0.2 of g:a, yet mvn could not get it" in served_text(
        repository, "g", "a", "2.0.2"
    )


# -- the POMs it could not read -----------------------------------------------------------------


def test_maven_s_words_for_a_pom_it_could_not_read_are_recognised() -> None:
    server = "org.apache.bookkeeper:bookkeeper-server:jar:4.14.7"
    assert pom_problems(INVALID) == [
        f"the POM of {server} is invalid (it or a parent POM it inherits from is unreadable)"
    ]
    assert pom_problems(MISSING + "\n" + MISSING) == [f"the POM of {server} is missing"]
    assert pom_problems(DESCRIPTOR) == [
        "could not find org.apache.bookkeeper:bookkeeper:pom:4.14.7",
        f"could not read the POM of {server}",
    ]
    assert pom_problems("[INFO] BUILD SUCCESS\n[WARNING] something else") == []


def test_the_local_repository_tells_which_pom_is_missing_or_unreadable(tmp_path: Path) -> None:
    def pom(artifact: str, parent: str | None, *, text: str | None = None) -> Path:
        path = tmp_path / "org/apache/bookkeeper" / artifact / "4.14.7" / f"{artifact}-4.14.7.pom"
        path.parent.mkdir(parents=True, exist_ok=True)
        inherits = (
            f"<parent><groupId>org.apache.bookkeeper</groupId><artifactId>{parent}</artifactId>"
            "<version>4.14.7</version></parent>"
            if parent
            else ""
        )
        path.write_text(text if text is not None else f"<project>{inherits}</project>")
        return path

    def diagnose() -> str | None:
        found = diagnose_local_pom(tmp_path, "org.apache.bookkeeper", "bookkeeper-server", "4.14.7")
        # Unreadable: there, and broken (to delete); else missing (to download).
        assert found is None or found.unreadable == ("not a readable POM" in found.text)
        return None if found is None else found.text

    first = diagnose()
    assert first is not None and "bookkeeper-server:4.14.7's POM is missing" in first
    pom("bookkeeper-server", "bookkeeper")
    assert diagnose() == (
        "org.apache.bookkeeper:bookkeeper:4.14.7's POM is missing "
        f"({tmp_path}/org/apache/bookkeeper/bookkeeper/4.14.7/bookkeeper-4.14.7.pom)"
    )
    truncated = pom("bookkeeper", None, text="<project><parent><groupId>org.apa")
    message = diagnose()
    assert message is not None
    assert message.startswith(
        f"{truncated} (org.apache.bookkeeper:bookkeeper:4.14.7's POM) is not a readable POM ("
    )
    assert message.endswith(
        "an interrupted download? Delete it and install again (Maven never downloads again a "
        "POM it finds on disk)"
    )
    pom("bookkeeper", None)
    assert diagnose() is None  # the chain is whole


# -- offline first, complete or not ------------------------------------------------------------


class Runs:
    """A scripted ``run(offline)``: the next of ``results`` each time; records the calls."""

    def __init__(self, *results: MavenRun) -> None:
        self.results = list(results)
        self.calls: list[bool] = []

    def __call__(self, offline: bool) -> MavenRun:
        self.calls.append(offline)
        return self.results.pop(0)


class Failed(Exception):
    pass


def fail(run: MavenRun, offline: bool) -> Exception:
    return Failed(f"offline={offline} incomplete={run.incomplete} output={run.output}")


def judge(run: MavenRun) -> str | None:
    return "; ".join(pom_problems(run.output)) or None


def test_a_run_that_exits_0_unread_poms_and_all_goes_online(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = Runs(MavenRun(0, INVALID), MavenRun(0, "[INFO] BUILD SUCCESS"))
    done = run_offline_first(None, runs, fail, resolving="x", incomplete=judge, progress=True)
    assert runs.calls == [True, False] and done.output == "[INFO] BUILD SUCCESS"
    assert done.incomplete is None
    assert capsys.readouterr().out.splitlines() == [
        "resolving x from the local Maven repository",
        "incomplete (the POM of org.apache.bookkeeper:bookkeeper-server:jar:4.14.7 is invalid "
        "(it or a parent POM it inherits from is unreadable)): going online",
        "resolving x from Maven's remote repository",
    ]
    # Without the judge (the earlier behaviour) the first run would have been taken.
    runs = Runs(MavenRun(0, INVALID))
    assert run_offline_first(None, runs, fail, resolving="x").output == INVALID


def test_still_incomplete_online_or_asked_to_stay_offline_is_a_failure() -> None:
    runs = Runs(MavenRun(0, INVALID), MavenRun(0, MISSING))
    with pytest.raises(Failed, match=r"offline=False incomplete=the POM of .* is missing"):
        run_offline_first(None, runs, fail, resolving="x", incomplete=judge)
    runs = Runs(MavenRun(0, INVALID))
    with pytest.raises(Failed, match=r"offline=True incomplete=the POM of .* is invalid"):
        run_offline_first(True, runs, fail, resolving="x", incomplete=judge)
    assert runs.calls == [True]


def test_an_offline_failure_about_a_pom_goes_online_too(capsys: pytest.CaptureFixture[str]) -> None:
    runs = Runs(MavenRun(1, DESCRIPTOR), MavenRun(0, "ok"))
    assert run_offline_first(None, runs, fail, resolving="x", progress=True).output == "ok"
    assert runs.calls == [True, False]
    assert capsys.readouterr().out.splitlines() == [
        "resolving x from the local Maven repository",
        "resolving x from Maven's remote repository",
    ]
    runs = Runs(MavenRun(1, "[ERROR] a plugin failed"))
    with pytest.raises(Failed):
        run_offline_first(None, runs, fail, resolving="x")
    assert runs.calls == [True]  # going online cannot help that

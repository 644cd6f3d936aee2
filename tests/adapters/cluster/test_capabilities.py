"""The capability checks behind ``bkconform doctor`` and the tests' ``require``: no engine,
no subprocess that matters (fakes stand in), nothing installed."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from adapters.cluster import capabilities, container_engine
from adapters.cluster.capabilities import (
    Capability,
    CheckResult,
    all_required_ok,
    java_version,
    run_check,
    run_command,
)
from adapters.cluster.container_engine import (
    DNS_PACKAGES,
    ENGINE_PACKAGES,
    ContainerEngine,
    ContainerEngineError,
    EnginePaths,
    EngineSetup,
)


def test_engine_packages_include_what_name_resolution_needs() -> None:
    # Bookworm's podman networks through CNI; names resolve only with the dnsname plugin,
    # which nothing pulls in (not even as a recommendation).
    for package in (
        "podman",
        "runc",
        "containernetworking-plugins",
        DNS_PACKAGES["cni"],
        "iptables",
        "debootstrap",
        "debian-archive-keyring",
    ):
        assert package in ENGINE_PACKAGES


def completed(stdout: bytes, code: int = 0) -> subprocess.CompletedProcess[bytes]:
    return subprocess.CompletedProcess(["x"], code, stdout, b"")


@pytest.mark.parametrize(
    ("code", "stdout", "expected"),
    [
        (0, b"install ok installed", True),
        (0, b"deinstall ok config-files", False),
        (1, b"", False),
    ],
)
def test_package_installed_asks_dpkg(
    monkeypatch: pytest.MonkeyPatch, code: int, stdout: bytes, expected: bool
) -> None:
    calls: list[list[str]] = []

    def run(argv: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        calls.append(argv)
        return completed(stdout, code)

    monkeypatch.setattr(container_engine.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(container_engine.subprocess, "run", run)
    assert container_engine.package_installed("golang-github-x") is expected
    assert calls == [["/usr/bin/dpkg-query", "-W", "-f=${Status}", "golang-github-x"]]


def test_missing_packages_without_dpkg_fall_back_to_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(container_engine, "package_installed", lambda _name: None)
    monkeypatch.setattr(
        container_engine.shutil, "which", lambda name: None if name == "nft" else "/bin/x"
    )
    # No command stands for the DNS plugin: it cannot be judged without dpkg, so it counts.
    assert container_engine.missing_debian_packages(["nftables", "iptables", "dnsname"]) == [
        "nftables"
    ]


def test_a_package_with_no_command_is_missing_when_dpkg_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = {"podman": True, DNS_PACKAGES["cni"]: False}
    monkeypatch.setattr(container_engine, "package_installed", lambda name: installed[name])
    assert container_engine.missing_debian_packages(["podman", DNS_PACKAGES["cni"]]) == [
        DNS_PACKAGES["cni"]
    ]


def test_netavark_brings_aardvark_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container_engine, "package_installed", lambda name: name == "netavark")
    assert container_engine.engine_packages()[-1] == "aardvark-dns"
    monkeypatch.setattr(container_engine, "package_installed", lambda _name: False)
    assert container_engine.engine_packages() == ENGINE_PACKAGES


def test_install_packages_updates_then_installs_without_recommends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        assert kwargs["timeout"] == 12
        assert kwargs["env"]["DEBIAN_FRONTEND"] == "noninteractive"
        calls.append(argv)
        return completed(b"")

    monkeypatch.setattr(container_engine.os, "geteuid", lambda: 0)
    monkeypatch.setattr(container_engine.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(container_engine.subprocess, "run", run)
    container_engine.install_packages(["nftables"], lambda _line: None, timeout=12)
    assert calls == [
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "nftables"],
    ]


def test_install_packages_names_the_command_when_not_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(container_engine.os, "geteuid", lambda: 1000)
    with pytest.raises(container_engine.ContainerEngineError, match="apt-get install nftables"):
        container_engine.install_packages(["nftables"], lambda _line: None)


def test_ensure_engine_completes_the_packages_of_an_answering_podman(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    paths = container_engine.EnginePaths(tmp_path)
    engine = ContainerEngine("unix:///x.sock", "/usr/bin/podman")
    installed: list[Sequence[str]] = []
    monkeypatch.setattr(container_engine, "find_engine", lambda _paths: engine)
    monkeypatch.setattr(container_engine, "can_install_packages", lambda: True)
    monkeypatch.setattr(container_engine, "missing_packages", lambda: [DNS_PACKAGES["cni"]])
    monkeypatch.setattr(
        container_engine, "install_packages", lambda packages, _log: installed.append(packages)
    )
    setup = container_engine.ensure_engine(paths)
    assert setup == EngineSetup(engine, installed=[DNS_PACKAGES["cni"]])
    assert installed == [[DNS_PACKAGES["cni"]]]
    # install=False (the docker target, the doctor) never installs.
    installed.clear()
    assert container_engine.ensure_engine(paths, install=False).installed == []
    assert installed == []


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ("no version here", None),
    ],
)
def test_java_version(output: str, major: int | None) -> None:
    assert java_version(output) == major


def test_run_command_reports_missing_commands_and_timeouts() -> None:
    assert run_command(["bkconform-no-such-command"], 5)[0] == 127
    code, output = run_command(["sleep", "5"], 0.2)
    # 124: the command was stopped at its timeout, not waited out.
    assert code == 124 and "did not finish" in output


def fake_commands(
    monkeypatch: pytest.MonkeyPatch, answers: dict[str, tuple[int, str]]
) -> list[list[str]]:
    calls: list[list[str]] = []

    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        calls.append(list(argv))
        return answers.get(argv[0], (127, f"{argv[0]}: command not found"))

    monkeypatch.setattr(capabilities, "run_command", run)
    return calls


def test_java_check_needs_17(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", "")
    monkeypatch.setattr(
        "adapters.installations.java.shutil.which", lambda *_a, **_k: "/usr/bin/java"
    )
    fake_commands(monkeypatch, {"/usr/bin/java": (0, 'openjdk version "11.0.2"')})
    result = capabilities.check_java(5)
    assert not result.ok and "Java 11 < 17" in result.detail
    assert "openjdk-17-jre-headless" in result.fix
    fake_commands(monkeypatch, {"/usr/bin/java": (0, 'openjdk version "17.0.15" 2025')})
    assert capabilities.check_java(5).ok


@pytest.mark.parametrize(
    ("check", "package"),
    [
        (capabilities.check_openssl, "openssl"),
        (capabilities.check_nftables, "nftables"),
        (capabilities.check_iptables, "iptables"),
        (capabilities.check_maven, "maven"),
    ],
)
def test_missing_commands_name_their_package(
    monkeypatch: pytest.MonkeyPatch, check: Any, package: str
) -> None:
    fake_commands(monkeypatch, {})
    result = check(5)
    assert not result.ok
    assert result.fix == f"apt-get install {package}"
    assert result.packages == (package,)


def test_working_commands_report_their_version(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_commands(
        monkeypatch,
        {"nft": (0, "nftables v1.0.6 (Lester Gooch #5)"), "openssl": (0, "OpenSSL 3.0.19")},
    )
    assert capabilities.check_nftables(5).detail == "nftables v1.0.6 (Lester Gooch #5)"
    assert calls[0] == ["nft", "list", "tables"]  # it must work, not just exist
    result = capabilities.check_openssl(5)
    assert result.ok and result.fix == "" and result.detail == "OpenSSL 3.0.19"


def test_network_namespaces_need_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities.os, "geteuid", lambda: 1000)
    result = capabilities.check_network_namespaces(5)
    assert not result.ok and result.fix == "run as root"


def test_network_namespace_probe_is_created_and_deleted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities.os, "geteuid", lambda: 0)
    monkeypatch.setattr(capabilities.shutil, "which", lambda _name: "/usr/sbin/ip")
    calls = fake_commands(monkeypatch, {"ip": (0, "")})
    assert capabilities.check_network_namespaces(5).ok
    assert [c[:3] for c in calls] == [["ip", "netns", "add"], ["ip", "netns", "del"]]
    assert calls[0][3] == calls[1][3]


def test_container_packages_check_lists_what_setup_installs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(capabilities, "engine_packages", lambda: ENGINE_PACKAGES)
    monkeypatch.setattr(
        capabilities, "missing_debian_packages", lambda _names: [DNS_PACKAGES["cni"]]
    )
    result = capabilities.check_container_packages(5)
    assert not result.ok
    assert "bkconform docker setup" in result.fix
    assert f"apt-get install --no-install-recommends {DNS_PACKAGES['cni']}" in result.fix
    monkeypatch.setattr(capabilities, "missing_debian_packages", lambda _names: [])
    assert capabilities.check_container_packages(5).ok


@pytest.mark.parametrize(
    "check",
    [
        capabilities.check_podman_api,
        capabilities.check_local_images,
        capabilities.check_container_dns,
    ],
)
def test_container_checks_without_an_engine_say_setup(
    monkeypatch: pytest.MonkeyPatch, check: Any
) -> None:
    monkeypatch.setattr(capabilities, "_engine", lambda: None)
    result = check(5)
    assert not result.ok and result.fix.startswith("bkconform docker setup")


def test_run_check_bounds_a_hanging_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities, "CHECK_GRACE", 0.1)

    def hang(_timeout: float) -> CheckResult:
        time.sleep(3)
        return CheckResult("hang", True, "late")

    result = run_check(Capability("hang", "hangs", hang), timeout=0.2)
    assert not result.ok and "did not finish within" in result.detail


def test_run_check_reports_a_crashing_check() -> None:
    def crash(_timeout: float) -> CheckResult:
        raise RuntimeError("boom")

    result = run_check(Capability("crash", "crashes", crash, required=False), timeout=1)
    assert not result.ok and "boom" in result.detail and not result.required


def test_only_required_failures_count() -> None:
    results = [
        CheckResult("a", True, ""),
        CheckResult("b", False, "", required=False),
    ]
    assert all_required_ok(results)
    assert not all_required_ok([*results, CheckResult("c", False, "")])


def test_every_capability_has_a_unique_name() -> None:
    names = [capability.name for capability in capabilities.CAPABILITIES]
    assert len(names) == len(set(names))
    assert {"java", "container-dns", "nftables", "iptables", "openssl", "spark"} <= set(names)


def test_bookkeeper_from_bookkeeper_home_or_an_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    launcher = tmp_path / "bin" / "bookkeeper"
    monkeypatch.setenv("BOOKKEEPER_HOME", str(tmp_path))
    result = capabilities.check_bookkeeper_home(5)
    assert not result.ok and "bkconform bookkeeper install" in result.fix
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    assert capabilities.check_bookkeeper_home(5).ok
    monkeypatch.delenv("BOOKKEEPER_HOME")
    monkeypatch.setattr(capabilities, "_installed_bookkeepers", lambda: ["4.17.3"])
    assert capabilities.check_bookkeeper_home(5).detail == "installed: 4.17.3"
    monkeypatch.setattr(capabilities, "_installed_bookkeepers", lambda: [])
    assert not capabilities.check_bookkeeper_home(5).ok


class FakeTags:
    base = "localhost/bkconform/debian:1"
    zookeeper = "localhost/bkconform/zookeeper:1"
    refbookie = "localhost/bkconform/refbookie:1"


@pytest.mark.parametrize(
    ("present", "ok"),
    [
        ({FakeTags.base, FakeTags.zookeeper, FakeTags.refbookie}, True),
        # Only the reference bookie is stale (a source edit): rebuilt on first use.
        ({FakeTags.base, FakeTags.zookeeper}, True),
        ({FakeTags.base, FakeTags.refbookie}, False),
        (set(), False),
    ],
)
def test_local_images_check(monkeypatch: pytest.MonkeyPatch, present: set[str], ok: bool) -> None:
    from adapters.cluster import container_images

    engine = ContainerEngine(docker_host="unix:///nowhere", cli="podman")
    monkeypatch.setattr(capabilities, "_engine", lambda: engine)
    monkeypatch.setattr(container_images, "local_image_tags", lambda: FakeTags())
    monkeypatch.setattr(container_images, "image_exists", lambda _engine, tag: tag in present)
    result = capabilities.check_local_images(5)
    assert result.ok is ok
    if not ok:
        assert result.fix.startswith("bkconform docker setup")


def test_transient_engine_starts_a_service_only_for_the_checks_and_stops_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = ContainerEngine(docker_host="unix:///transient", cli="podman")
    started: list[Path] = []
    stopped: list[Path] = []
    monkeypatch.setattr(capabilities, "find_engine", lambda _paths: None)
    monkeypatch.setattr(capabilities.shutil, "which", lambda _name: "/usr/bin/podman")

    def start(paths: EnginePaths) -> tuple[ContainerEngine, int]:
        started.append(paths.directory)
        return engine, 4242

    monkeypatch.setattr(capabilities, "start_service", start)
    monkeypatch.setattr(capabilities, "stop_service", lambda paths: stopped.append(paths.directory))
    assert capabilities._engine() is None
    with capabilities.transient_engine():
        assert capabilities._engine() is engine
        assert "started for these checks" in capabilities.check_podman_api(5).detail
    assert capabilities._engine() is None
    assert started == stopped and len(started) == 1
    assert not started[0].exists()


def test_transient_engine_starts_nothing_without_podman(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capabilities, "find_engine", lambda _paths: None)
    monkeypatch.setattr(capabilities.shutil, "which", lambda _name: None)

    def start(_paths: EnginePaths) -> tuple[ContainerEngine, int]:
        raise AssertionError("no service may start without podman")

    monkeypatch.setattr(capabilities, "start_service", start)
    with capabilities.transient_engine():
        assert capabilities._engine() is None


def test_transient_engine_reports_a_service_that_does_not_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(capabilities, "find_engine", lambda _paths: None)
    monkeypatch.setattr(capabilities.shutil, "which", lambda _name: "/usr/bin/podman")

    def start(_paths: EnginePaths) -> tuple[ContainerEngine, int]:
        raise ContainerEngineError("podman system service exited with 125")

    monkeypatch.setattr(capabilities, "start_service", start)
    lines: list[str] = []
    with capabilities.transient_engine(lines.append):
        assert capabilities._engine() is None
    assert lines and "exited with 125" in lines[0]


def test_run_checks_starts_an_engine_only_when_a_check_needs_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[str] = []

    @contextlib.contextmanager
    def engine(log: Any = None) -> Iterator[None]:
        started.append("engine")
        yield

    monkeypatch.setattr(capabilities, "transient_engine", engine)
    monkeypatch.setattr(
        capabilities, "run_check", lambda cap, _timeout: CheckResult(cap.name, True, "fine")
    )
    seen: list[str] = []
    results = capabilities.run_checks(["maven", "openssl"], on_result=lambda r: seen.append(r.name))
    assert [r.name for r in results] == seen == ["maven", "openssl"] and started == []
    capabilities.run_checks(["maven", "container-dns"])
    assert started == ["engine"]

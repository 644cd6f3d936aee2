"""``bkconform doctor`` as a user sees it, with the checks faked: one line per capability,
the fix under each failure, exit code 0 only when every required capability works."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator

import pytest

from adapters.cluster import capabilities
from adapters.cluster.capabilities import Capability, CheckResult
from conformance.cli import main


def fake_checks(monkeypatch: pytest.MonkeyPatch, results: dict[str, CheckResult]) -> list[str]:
    ran: list[str] = []

    def run_check(capability: Capability, timeout: float) -> CheckResult:
        ran.append(capability.name)
        assert timeout == 7.0
        return results.get(capability.name, CheckResult(capability.name, True, "fine"))

    @contextlib.contextmanager
    def no_engine(log: Callable[[str], None] = print) -> Iterator[None]:
        # The checks are faked: no podman service may start for them.
        yield

    monkeypatch.setattr(capabilities, "run_check", run_check)
    monkeypatch.setattr(capabilities, "transient_engine", no_engine)
    return ran


DNS_FAILURE = CheckResult(
    "container-dns",
    False,
    "names do not resolve",
    "apt-get install golang-github-containernetworking-plugin-dnsname",
)


def test_all_working_exits_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran = fake_checks(monkeypatch, {})
    assert main(["doctor", "--timeout", "7"]) == 0
    out = capsys.readouterr().out
    assert "every required capability works" in out
    assert "[  ok] container-dns" in out
    assert len(ran) == len(capabilities.CAPABILITIES)


def test_a_required_failure_prints_its_fix_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_checks(monkeypatch, {"container-dns": DNS_FAILURE})
    assert main(["doctor", "--timeout", "7"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] container-dns" in out
    assert "fix: apt-get install golang-github-containernetworking-plugin-dnsname" in out
    assert "1 required capabilities do not work: container-dns" in out


def test_an_optional_failure_warns_only(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    optional = CheckResult(
        "debootstrap-cache", False, "no tarball", "bkconform docker setup", required=False
    )
    fake_checks(monkeypatch, {"debootstrap-cache": optional})
    assert main(["doctor", "--timeout", "7"]) == 0
    assert "[warn] debootstrap-cache" in capsys.readouterr().out


def test_json_and_only(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ran = fake_checks(monkeypatch, {"container-dns": DNS_FAILURE})
    code = main(["doctor", "--json", "--timeout", "7", "--only", "java", "--only", "container-dns"])
    assert code == 1
    assert ran == ["java", "container-dns"]
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False
    assert [c["name"] for c in document["checks"]] == ["java", "container-dns"]
    assert document["checks"][1]["fix"] == DNS_FAILURE.fix


def test_unknown_capability_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["doctor", "--only", "teleport"])
    assert exited.value.code == 2


def test_doctor_installs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every check runs with the installers unavailable: none may reach for them.
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("doctor must not install anything")

    import adapters.cluster.container_engine as container_engine

    monkeypatch.setattr(container_engine, "install_packages", refuse)
    monkeypatch.setattr(container_engine, "ensure_engine", refuse)
    monkeypatch.setattr(container_engine, "start_service", refuse)
    # The real checks (bounded): whatever their verdicts here, the guards above hold.
    assert main(["doctor", "--json", "--timeout", "20", "--only", "container-packages"]) in (0, 1)
    assert main(["doctor", "--json", "--timeout", "20", "--only", "java"]) in (0, 1)

"""``tests.capability.require``: a failed check whose packages can be installed is installed
and checked again; what still fails fails where it could have been installed (or under CI) and
skips elsewhere, with the fix."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from adapters.cluster.capabilities import CheckResult
from tests import capability


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    capability._results.clear()


def scripted(monkeypatch: pytest.MonkeyPatch, *answers: bool) -> list[Sequence[str]]:
    queue = list(answers)
    installed: list[Sequence[str]] = []

    def run_check(name: str) -> CheckResult:
        ok = queue.pop(0)
        return CheckResult(
            name,
            ok,
            "works" if ok else "missing",
            "apt-get install nftables",
            packages=("nftables",),
        )

    monkeypatch.setattr(capability, "run_check", run_check)
    monkeypatch.setattr(capability, "can_install_packages", lambda: True)
    monkeypatch.setattr(
        capability, "install_packages", lambda packages, _log: installed.append(packages)
    )
    return installed


def test_missing_package_is_installed_then_rechecked(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = scripted(monkeypatch, False, True)
    capability.require("nftables")
    assert installed == [("nftables",)]
    capability.require("nftables")  # cached: no second check or install
    assert installed == [("nftables",)]


def test_still_missing_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, False, False)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="Fix: apt-get install nftables"):
        capability.require("nftables")


def test_still_missing_after_installing_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, False, False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.fail.Exception, match="nftables does not work here"):
        capability.require("nftables")


def test_nothing_is_installed_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = scripted(monkeypatch, False)
    monkeypatch.setattr(capability, "can_install_packages", lambda: False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="Fix: apt-get install nftables"):
        capability.require("nftables")
    assert installed == []

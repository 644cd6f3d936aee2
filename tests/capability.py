"""Tests ask for a machine capability through the checks ``bkconform doctor`` runs.

:func:`require` runs the capability's check (:mod:`adapters.cluster.capabilities`). When it
fails and names Debian packages, and this process can install them (root, apt-get), they are
installed through the same path as ``bkconform docker setup``
(:func:`adapters.cluster.container_engine.install_packages`) and the check runs again: a fresh
CI machine (root, apt) runs every test instead of skipping. What still does not work fails the
test where the project could have installed it (root with apt-get) or under CI (``CI`` set),
and skips it elsewhere (a developer's machine without root), with the fix in the reason.
"""

from __future__ import annotations

import os
import threading

import pytest

from adapters.cluster.capabilities import CheckResult, run_check
from adapters.cluster.container_engine import (
    ContainerEngineError,
    can_install_packages,
    install_packages,
)

_lock = threading.Lock()
_results: dict[str, CheckResult] = {}


def _log(line: str) -> None:
    print(f"[capability] {line}", flush=True)


def strict() -> bool:
    """True when a capability that does not work must fail the test, not skip it."""
    return bool(os.environ.get("CI")) or can_install_packages()


def check(name: str) -> CheckResult:
    """The capability's check, installing its packages first when it fails and we can."""
    with _lock:
        if name in _results:
            return _results[name]
        result = run_check(name)
        if not result.ok and result.packages and can_install_packages():
            try:
                install_packages(result.packages, _log)
            except ContainerEngineError as exc:
                _log(f"installing {' '.join(result.packages)} failed: {exc}")
            result = run_check(name)
        _results[name] = result
        return result


def require(name: str) -> None:
    """Skip (fail under CI) the calling test unless capability ``name`` works here."""
    result = check(name)
    if result.ok:
        return
    reason = f"{name} does not work here: {result.detail}. Fix: {result.fix}"
    if strict():
        pytest.fail(reason)
    pytest.skip(reason)

"""The bkconform pytest plugin: conformance properties as collected tests.

    pytest --pyargs conformance --bk-target model|local|docker|external [--bk-zk HOST:PORT]
           [--bk-profile ci|nightly|qualify] [--bk-seconds S]

Installed with the package (entry point ``pytest11``), so it works from any directory. The
properties live in ``conformance/properties/``. A failing property shows the run's verdict,
findings and sequence diagram.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from conformance.search.runner import PROFILES, SearchSettings
from conformance.targets.base import Target

TARGETS = ("model", "local", "docker", "external")

# The same budgets as Hypothesis settings profiles, for properties written with @given.
for _name, _search in PROFILES.items():
    settings.register_profile(
        f"bkconform-{_name}",
        deadline=None,
        suppress_health_check=list(HealthCheck),
        max_examples=_search.max_examples,
        derandomize=_name == "ci",  # ci: the same examples on every run
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bkconform", "BookKeeper conformance")
    group.addoption("--bk-target", choices=TARGETS, default="model", help="where properties run")
    group.addoption(
        "--bk-profile",
        choices=tuple(PROFILES),
        default=None,
        help="search budget and Hypothesis settings profile for the properties "
        "(ci: fixed seed, bounded; default ci)",
    )
    group.addoption(
        "--bk-seconds",
        type=float,
        default=None,
        help="time budget of each search property (overrides the profile's)",
    )
    group.addoption("--bk-zk", default=None, help="ZooKeeper HOST:PORT of --bk-target external")
    group.addoption(
        "--bk-bookkeeper-home",
        default=None,
        help="a real BookKeeper distribution for --bk-target local (default: reference bookies)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance: a bkconform conformance property")
    # Only when asked: the plugin is installed, so it also loads in unrelated test runs.
    profile = config.getoption("--bk-profile", default=None)
    if profile is not None:
        settings.load_profile(f"bkconform-{profile}")


@pytest.fixture
def bk_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """A fresh, unopened target as chosen by ``--bk-target``; closed after the test."""
    # Imported here, not at plugin load: the plugin loads in every pytest run of this
    # environment, and must not pull the adapters in before a test session asks for them.
    from conformance.targets.external_target import ExternalTarget
    from conformance.targets.local_target import LocalTarget
    from conformance.targets.model_target import ModelTarget

    name = request.config.getoption("--bk-target")
    home = request.config.getoption("--bk-bookkeeper-home")
    target: Target
    if name == "model":
        target = ModelTarget()
    elif name == "local":
        target = LocalTarget(bookkeeper_home=Path(home) if home else None)
    elif name == "docker":
        from conformance.targets.docker_target import DockerTarget

        target = DockerTarget()
    else:
        zk = request.config.getoption("--bk-zk")
        if not zk:
            raise pytest.UsageError("--bk-target external needs --bk-zk HOST:PORT")
        target = ExternalTarget(zk)
    try:
        yield target
    finally:
        target.close()


@pytest.fixture
def bk_search(request: pytest.FixtureRequest) -> SearchSettings:
    """The search budget chosen by ``--bk-profile`` (default ci) and ``--bk-seconds``."""
    search = PROFILES[request.config.getoption("--bk-profile") or "ci"]
    seconds = request.config.getoption("--bk-seconds")
    if seconds is not None:
        search = dataclasses.replace(search, time_budget=seconds)
    return search

"""The bkconform pytest plugin: conformance properties as collected tests.

    pytest --pyargs conformance --bk-target model|local [--bk-profile ci|nightly|qualify]

Installed with the package (entry point ``pytest11``), so it works from any directory. The
properties live in ``conformance/properties/``. A failing property shows the run's verdict,
findings and sequence diagram.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from conformance.targets.base import Target

TARGETS = ("model", "local")
PROFILES = {
    # Derandomized and bounded, for CI.
    "ci": {"max_examples": 50, "derandomize": True},
    "nightly": {"max_examples": 1_000},
    "qualify": {"max_examples": 10_000},
}

for _name, _options in PROFILES.items():
    settings.register_profile(
        f"bkconform-{_name}",
        deadline=None,
        suppress_health_check=list(HealthCheck),
        **_options,  # type: ignore[arg-type]
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bkconform", "BookKeeper conformance")
    group.addoption("--bk-target", choices=TARGETS, default="model", help="where properties run")
    group.addoption(
        "--bk-profile",
        choices=tuple(PROFILES),
        default=None,
        help="Hypothesis settings profile for the properties (ci: derandomized and bounded)",
    )
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
    from conformance.targets.local_target import LocalTarget
    from conformance.targets.model_target import ModelTarget

    name = request.config.getoption("--bk-target")
    home = request.config.getoption("--bk-bookkeeper-home")
    target: Target = (
        ModelTarget()
        if name == "model"
        else LocalTarget(bookkeeper_home=Path(home) if home else None)
    )
    try:
        yield target
    finally:
        target.close()

"""The bkconform pytest plugin: conformance properties as collected tests.

    pytest --pyargs conformance --bk-target model|local|docker|external [--bk-zk HOST:PORT]
           [--bk-profile ci|nightly|qualify] [--bk-seconds S]

Installed with the package (entry point ``pytest11``), so it works from any directory. The
properties live in ``conformance/properties/``. A failing property shows the run's verdict,
findings and sequence diagram.

Because the entry point loads this module in *every* pytest run of the environment, loading it
is cheap and cannot fail: it imports only pytest and the standard library. Hypothesis, the
search and the targets are imported when a run uses them (``--bk-profile``, the ``bk_target``
and ``bk_search`` fixtures, the properties); if one of them cannot be imported, that run stops
with a ``pytest.UsageError`` naming the option or fixture and the missing package, and every
other run is left alone.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

# The target kinds' own module imports nothing: the plugin loads in every pytest run and must
# not pull the adapters in before a test asks for a target.
from conformance.target_kinds import TARGET_KINDS as TARGETS

if TYPE_CHECKING:
    from conformance.search.runner import SearchSettings
    from conformance.targets.base import Target

#: The names of ``conformance.search.runner.PROFILES``, repeated here so that ``--bk-profile``
#: can offer them without importing Hypothesis (a test keeps the two in step).
PROFILE_NAMES = ("ci", "nightly", "qualify")
#: Our fixtures: a test that requests one needs the search and the targets.
FIXTURES = ("bk_target", "bk_search")
PROPERTIES_DIR = Path(__file__).resolve().parent / "properties"


def _load(module: str, used_by: str) -> ModuleType:
    """Import ``module`` for ``used_by`` (an option or fixture), or stop the run saying why."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (getattr(exc, "name", None) or module).split(".")[0]
        raise pytest.UsageError(
            f"{used_by} needs the {missing!r} package, which cannot be imported in this Python "
            f"({sys.executable}): {exc}. Install bkconform with its dependencies "
            "(pip install bkconform) in the environment pytest runs in."
        ) from exc


def register_profiles(used_by: str = "--bk-profile") -> None:
    """Register the search budgets as Hypothesis profiles ``bkconform-<name>``.

    For properties written with ``@given``: done when ``--bk-profile`` is given (which also
    loads its profile) and when a test first uses our fixtures, never at plugin load.
    Idempotent; imports Hypothesis.
    """
    hypothesis = _load("hypothesis", used_by)
    runner = _load("conformance.search.runner", used_by)
    for name, search in runner.PROFILES.items():
        hypothesis.settings.register_profile(
            f"bkconform-{name}",
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
            max_examples=search.max_examples,
            derandomize=name == "ci",  # ci: the same examples on every run
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("bkconform", "BookKeeper conformance")
    group.addoption("--bk-target", choices=TARGETS, default="model", help="where properties run")
    group.addoption(
        "--bk-profile",
        choices=PROFILE_NAMES,
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
        "--bk-bookie-kind",
        choices=("bookkeeper", "reference"),
        default="bookkeeper",
        help="bookies of --bk-target local|docker: bookkeeper (real BookKeeper, the default) or "
        "reference (the project's test double)",
    )
    group.addoption(
        "--bk-bookkeeper-home",
        default=None,
        help="a real BookKeeper distribution for --bk-target local|docker (default: "
        "BOOKKEEPER_HOME, else the default version installed from Maven Central on first use)",
    )
    group.addoption(
        "--bk-bookkeeper",
        default=None,
        metavar="VERSION|DIR",
        help="real BookKeeper for --bk-target local|docker: a version (installed from Maven "
        "Central on first use) or a BOOKKEEPER_HOME directory",
    )
    group.addoption(
        "--bk-zookeeper",
        default=None,
        metavar="VERSION|DIR",
        help="the ZooKeeper of --bk-target local: a release (installed from Maven Central on "
        "first use) or a directory; default ZOOKEEPER_HOME, else the release the default "
        "BookKeeper depends on",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "conformance: a bkconform conformance property")
    # Only when asked: the plugin is installed, so it also loads in unrelated test runs.
    profile = config.getoption("--bk-profile", default=None)
    if profile is not None:
        register_profiles()
        _load("hypothesis", "--bk-profile").settings.load_profile(f"bkconform-{profile}")


def pytest_collectstart(collector: pytest.Collector) -> None:
    """Our properties need the search and the targets: check before importing them."""
    if isinstance(collector, pytest.Module) and collector.path.resolve().parent == PROPERTIES_DIR:
        _require_search(f"the bkconform properties ({collector.path.name})")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses our fixtures stops the run up front if their packages are missing."""
    for item in items:
        used = [name for name in FIXTURES if name in getattr(item, "fixturenames", ())]
        if used:
            _require_search(f"the {used[0]} fixture of {item.nodeid}")
            return


def _require_search(used_by: str) -> None:
    _load("hypothesis", used_by)
    _load("conformance.targets.base", used_by)
    register_profiles(used_by)  # imports the search


@pytest.fixture
def bk_target_spec(request: pytest.FixtureRequest) -> Any:
    """The :class:`~conformance.targets.spec.TargetSpec` ``--bk-target`` and its options name
    (the same the CLI and the Spark shards build their targets from): a test takes its
    configuration as the target's bookies store entries (``spec.as_stored(cfg)``)."""
    # Imported here, not at plugin load: the plugin loads in every pytest run of this
    # environment, and must not pull the adapters in before a test session asks for them.
    name = request.config.getoption("--bk-target")
    option = f"--bk-target {name}"
    specs = _load("conformance.targets.spec", option)
    home = request.config.getoption("--bk-bookkeeper-home")
    try:
        return specs.TargetSpec(
            kind=name,
            bookie_kind=request.config.getoption("--bk-bookie-kind"),
            bookkeeper=request.config.getoption("--bk-bookkeeper"),
            bookkeeper_home=str(home) if home is not None else None,
            zookeeper=request.config.getoption("--bk-zk"),
            zookeeper_release=request.config.getoption("--bk-zookeeper"),
        )
    except ValueError as exc:
        raise pytest.UsageError(f"{option}: {exc}") from exc


@pytest.fixture
def bk_target(request: pytest.FixtureRequest, bk_target_spec: Any) -> Iterator[Target]:
    """A fresh, unopened target as chosen by ``--bk-target``; closed after the test."""
    option = f"--bk-target {request.config.getoption('--bk-target')}"
    errors = _load("adapters.cluster.errors", option)
    try:
        target: Target = bk_target_spec.build()
    except (ValueError, errors.ClusterError) as exc:
        raise pytest.UsageError(f"{option}: {exc}") from exc
    try:
        yield target
    finally:
        target.close()


@pytest.fixture
def bk_search(request: pytest.FixtureRequest) -> SearchSettings:
    """The search budget chosen by ``--bk-profile`` (default ci) and ``--bk-seconds``."""
    runner = _load("conformance.search.runner", "the bk_search fixture (--bk-profile)")
    search: SearchSettings = runner.PROFILES[request.config.getoption("--bk-profile") or "ci"]
    seconds = request.config.getoption("--bk-seconds")
    if seconds is not None:
        search = dataclasses.replace(search, time_budget=seconds)
    return search

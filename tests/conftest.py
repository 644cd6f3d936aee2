"""Suite-wide guard: no process started by any test outlives the test session.

At the end of the session every descendant of this pytest process, and every process whose
command line names the session's temporary base directory (processes that were orphaned and
re-parented), is reported and killed, and the session fails. Per-test checks (for example in
``tests/adapters/conftest.py``) say which test leaked; this one makes sure nothing
escapes, whichever package started it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from adapters.cluster.container_engine import (
    ContainerEngine,
    EnginePaths,
    ensure_engine,
    stop_service,
)
from adapters.processes import processes_matching
from tests.bookkeeper_fixtures import bookkeeper_home, java_client_home  # noqa: F401

# `make mutate` runs the fast suite once per mutant, two at a time on a loaded machine
# (pyproject's [tool.mutmut] selects this profile): a mutant must be judged by what the tests
# check, not by Hypothesis's timing health checks or by which random examples it drew.
settings.register_profile(
    "mutation",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-tests-ok",
        action="store_true",
        help="exit 0, not 5, when the marker selection leaves no test (tox runs the suite as "
        "two selections, the processes-free tests in parallel and the cluster tests one at a "
        "time; a path given to tox may hold only one kind)",
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and session.config.getoption(
        "--no-tests-ok"
    ):
        session.exitstatus = pytest.ExitCode.OK


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces or parentheses: fields follow the last ")".
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] == "Z" else int(fields[1])


def descendants(root: int) -> list[int]:
    """Live (non-zombie) processes below ``root`` in the process tree."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent_of(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _describe(pid: int) -> str:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        cmdline = "?"
    return f"{pid}: {cmdline[:200]}"


@pytest.fixture(scope="session", autouse=True)
def no_process_left_behind(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    base = tmp_path_factory.getbasetemp()
    yield
    # Teardown of this fixture runs last: every other fixture has stopped its processes.
    deadline = time.monotonic() + 10
    leftovers = set(descendants(os.getpid())) | set(processes_matching(f"{base}{os.sep}"))
    while leftovers and time.monotonic() < deadline:  # allow exits already under way
        time.sleep(0.1)
        leftovers = {p for p in leftovers if _parent_of(p) is not None}
    described = [_describe(pid) for pid in sorted(leftovers)]
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not described, f"the test session left processes behind: {described}"


@pytest.fixture(autouse=True)
def py4j_as_py4j_answers() -> Iterator[None]:
    """A SparkContext patches py4j's ``get_return_value`` process-wide (pyspark's
    ``install_exception_handler``) and leaves the patch when it stops; the patch then turns
    every Java exception of our own gateways (the Java client's EFENCED, for one) into an
    ``AssertionError`` (``SparkContext._jvm is None``). The Spark tests and the Java-client
    tests share the cluster run's process: each test starts with py4j's own function."""
    import sys

    if "py4j.java_gateway" in sys.modules:
        import py4j.java_gateway
        import py4j.protocol

        py4j.java_gateway.get_return_value = py4j.protocol.get_return_value
    yield


@pytest.fixture(scope="session")
def container_engine() -> Iterator[ContainerEngine]:
    """An answering container engine for the tests that run containers: set up here if
    needed (as root, podman is installed where no engine answers); a service started here
    stops at the end of the session."""
    paths = EnginePaths.default()
    setup = ensure_engine(paths, install=os.geteuid() == 0)
    try:
        yield setup.engine
    finally:
        if setup.started_pid is not None:
            stop_service(paths)

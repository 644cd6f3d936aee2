"""Real BookKeeper for the tests that need it: ``BOOKKEEPER_HOME`` when it is set, else the
default version installed from Maven Central (once; later sessions reuse the install in
``$BKCONFORM_HOME/bookkeeper``, and ``mvn -o`` when the jars are already in ``~/.m2``).

No test skips for want of BookKeeper: an install that fails fails the tests that need it,
with the installer's message (which names the artifact and why).

Registered from ``tests/conftest.py`` (``pytest_plugins``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.installations.bookkeeper import DEFAULT_VERSION, BookKeeperInstallError, install

#: The Java-client tests run against each: 4.11.1 has Defect 1 (recovery reads do not fence),
#: the default version is fixed.
JAVA_CLIENT_VERSIONS = ("4.11.1", DEFAULT_VERSION)


def installed_home(version: str) -> Path:
    """The install of ``version`` (made now if missing); the test fails if it cannot be."""
    try:
        return install(version).home
    except BookKeeperInstallError as exc:
        pytest.fail(f"BookKeeper {version} could not be installed: {exc}", pytrace=False)


def default_home() -> Path:
    """``BOOKKEEPER_HOME`` if set, else the default version's install."""
    given = os.environ.get("BOOKKEEPER_HOME")
    return Path(given) if given else installed_home(DEFAULT_VERSION)


@pytest.fixture(scope="session")
def bookkeeper_home() -> Path:
    """A real BookKeeper distribution (see the module docstring)."""
    return default_home()


@pytest.fixture(scope="session", params=JAVA_CLIENT_VERSIONS)
def java_client_home(request: pytest.FixtureRequest) -> Path:
    """Each version of :data:`JAVA_CLIENT_VERSIONS`, installed; ``BOOKKEEPER_HOME``, when set,
    stands for the default version."""
    version = str(request.param)
    if version == DEFAULT_VERSION:
        return default_home()
    return installed_home(version)

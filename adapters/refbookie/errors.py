"""Errors of the reference bookie (a test double), under one root: :class:`RefBookieError`."""

from __future__ import annotations

from adapters.errors import AdapterError


class RefBookieError(AdapterError):
    """Root of the reference bookie's own errors (wire errors are ``adapters.bookkeeper``'s)."""


class ConfigError(RefBookieError, ValueError):
    """A configuration file or value the reference bookie cannot use (exit code 2)."""


class StartupError(RefBookieError):
    """The bookie cannot start: e.g. its cookie does not match, or ZooKeeper is unreachable."""

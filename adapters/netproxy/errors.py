"""Every error the frame proxy raises, under one root: :class:`NetProxyError`."""

from __future__ import annotations

from adapters.errors import AdapterError
from adapters.loop_thread import LoopThreadErrors


class NetProxyError(AdapterError):
    """Root of the proxy's errors."""


class InvalidPolicy(NetProxyError, ValueError):
    """A rule, match or action that cannot mean anything (e.g. a negative delay)."""


class ProxyTimeout(NetProxyError, TimeoutError):
    """A bounded wait ended first: no matching frame arrived, or the proxy loop did not answer."""

    retriable = True


class ProxyClosed(NetProxyError):
    """The proxy (or its group) is closed, or was never started."""


class ProxyStartError(NetProxyError):
    """The proxy could not listen (or its event loop thread did not start)."""


class NotHeld(NetProxyError, KeyError):
    """A release or discard named a frame the proxy does not hold (any more)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "frame not held"


#: What the proxy's loop and its core raise when closed, timed out, or not started.
PROXY_ERRORS = LoopThreadErrors(ProxyClosed, ProxyTimeout, ProxyStartError)


class RoutingError(NetProxyError):
    """Clients could not be routed through the proxies (ZooKeeper state, unknown bookie)."""


class UnknownBookKeeperVersion(RoutingError):
    """A BookKeeper version string (or distribution) this module cannot read."""

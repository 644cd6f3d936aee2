"""Every error the ZooKeeper proxy raises, under one root: :class:`ZkProxyError`."""

from __future__ import annotations

from adapters.errors import AdapterError
from adapters.loop_thread import LoopThreadErrors


class ZkProxyError(AdapterError):
    """Root of the ZooKeeper proxy's errors."""


class MalformedPacket(ZkProxyError, ValueError):
    """Bytes that are not the jute encoding the packet's kind calls for (too short, a negative
    length, invalid UTF-8), or a length prefix the proxy refuses."""


class InvalidRule(ZkProxyError, ValueError):
    """A match or hold that cannot mean anything (a negative wait, a rule on replies)."""


class ZkProxyTimeout(ZkProxyError, TimeoutError):
    """A bounded wait ended first: no matching packet arrived, the server did not answer the
    expiry in time, or the proxy loop did not answer a call."""

    retriable = True


class ZkProxyClosed(ZkProxyError):
    """The proxy is closed, or was never started."""


class ZkProxyStartError(ZkProxyError):
    """The proxy could not listen (or its event loop thread did not start)."""


class NotHeld(ZkProxyError, KeyError):
    """A release named a request the proxy does not hold (never held, released, or lost with
    its connection)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "request not held"


#: What the proxies' loops and cores raise when closed, timed out, or not started.
PROXY_ERRORS = LoopThreadErrors(ZkProxyClosed, ZkProxyTimeout, ZkProxyStartError)


class NoSession(ZkProxyError):
    """An expiry was asked for before the proxy saw the server grant the client a session."""


class ExpiryFailed(ZkProxyError):
    """The server did not close the session: unreachable, or it answered the closeSession with
    an error."""

    retriable = True


__all__ = [
    "ExpiryFailed",
    "InvalidRule",
    "MalformedPacket",
    "NoSession",
    "NotHeld",
    "ZkProxyClosed",
    "ZkProxyError",
    "ZkProxyStartError",
    "ZkProxyTimeout",
]

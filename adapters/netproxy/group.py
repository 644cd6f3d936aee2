"""Proxies on a background event loop, driven from synchronous code with bounded waits.

::

    with ProxyGroup() as proxies:
        b1 = proxies.add("b1", "127.0.0.1", 3181)     # listens on 127.0.0.1:<b1.port>
        b1.add_rule(FrameMatch.request(Operation.READ_ENTRY, flags={FrameFlag.FENCE_LEDGER}),
                    Hold())
        fence = b1.wait_for_frame(FrameMatch.request(Operation.READ_ENTRY), timeout=5)
        b1.release(fence.frame_id)
    # every socket, task and the loop thread are gone here

One loop thread serves every proxy of the group, so the frame log is one total order across
bookies. Every call crosses to that thread and waits at most ``call_timeout`` seconds (waits
for frames take their own timeout); nothing here can block forever.
"""

from __future__ import annotations

from collections.abc import Iterable

from adapters.bookkeeper.framing import DEFAULT_MAX_FRAME_SIZE
from adapters.bookkeeper.status import StatusCode
from adapters.loop_thread import LoopThread, LoopThreadFacade
from adapters.netproxy.core import DEFAULT_CONNECT_TIMEOUT, ProxyCore
from adapters.netproxy.errors import PROXY_ERRORS, ProxyClosed, ProxyStartError
from adapters.netproxy.log import ConnectionRecord, DeliveryRecord, FrameLog, FrameRecord
from adapters.netproxy.policy import Action, FrameMatch, Rule

DEFAULT_CALL_TIMEOUT = 10.0
_START_TIMEOUT = 10.0


class ProxyGroup(LoopThreadFacade):
    """A background event loop hosting one :class:`BookieProxy` per bookie.

    :meth:`close` closes every proxy (sockets, timers, tasks): frames still held or delayed are
    not sent (they are logged undelivered).
    """

    def __init__(
        self,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        super().__init__(
            LoopThread(
                "netproxy-loop",
                PROXY_ERRORS,
                "the proxy group",
            ),
            call_timeout=call_timeout,
            start_timeout=_START_TIMEOUT,
        )
        self.max_frame_size = max_frame_size
        self.connect_timeout = connect_timeout
        self._log: FrameLog | None = None
        self._proxies: dict[str, BookieProxy] = {}

    # -- lifecycle --------------------------------------------------------------------------

    def _open(self) -> None:
        self._log = self._call(FrameLog)

    async def _close_on_loop(self) -> None:
        for proxy in self._proxies.values():
            await proxy.core.close()

    # -- proxies ----------------------------------------------------------------------------

    def add(
        self,
        name: str,
        target_host: str,
        target_port: int,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
    ) -> BookieProxy:
        """Start a proxy called ``name`` forwarding to ``target_host:target_port``."""
        if name in self._proxies:
            raise ProxyStartError(f"the group already has a proxy named {name!r}")
        frame_log = self._require_log()
        core = ProxyCore(
            name, target_host, target_port, frame_log,
            listen_host=listen_host, listen_port=listen_port,
            max_frame_size=self.max_frame_size, connect_timeout=self.connect_timeout,
        )  # fmt: skip
        self._run(core.start())
        proxy = BookieProxy(self, core)
        self._proxies[name] = proxy
        return proxy

    def proxy(self, name: str) -> BookieProxy:
        try:
            return self._proxies[name]
        except KeyError:
            raise ProxyClosed(f"no proxy {name!r}; proxies are {sorted(self._proxies)}") from None

    @property
    def proxies(self) -> dict[str, BookieProxy]:
        return dict(self._proxies)

    # -- the shared log ---------------------------------------------------------------------

    def frames(self, match: FrameMatch | None = None, *, since: int = 0) -> list[FrameRecord]:
        """Every frame logged by any proxy after frame id ``since`` (that ``match`` matches)."""
        frame_log = self._require_log()
        return self._call(lambda: _select(frame_log.frames, None, match, since))

    def deliveries(self) -> dict[int, DeliveryRecord]:
        frame_log = self._require_log()
        return self._call(lambda: dict(frame_log.deliveries))

    def connections(self) -> list[ConnectionRecord]:
        frame_log = self._require_log()
        return self._call(lambda: [record.snapshot() for record in frame_log.connections])

    def keep_payloads(self, keep: bool = True) -> None:
        """Keep (or stop keeping) the payload of every frame logged from now on, for
        :meth:`payloads`: whole frames, byte for byte, as they crossed the proxy."""
        frame_log = self._require_log()

        def switch() -> None:
            frame_log.keeps_payloads = keep

        self._call(switch)

    def payloads(self, frame_ids: Iterable[int] | None = None) -> dict[int, bytes]:
        """Frame id -> payload (the bytes after the 4-byte length prefix) of the frames logged
        while :meth:`keep_payloads` was on (of ``frame_ids`` only, when given)."""
        frame_log = self._require_log()
        wanted = None if frame_ids is None else set(frame_ids)
        return self._call(
            lambda: {
                frame_id: payload
                for frame_id, payload in frame_log.payloads.items()
                if wanted is None or frame_id in wanted
            }
        )

    def mark(self) -> int:
        """The id of the last frame logged so far (pass it as ``since`` to wait for new ones)."""
        frame_log = self._require_log()
        return self._call(lambda: frame_log.last_frame_id)

    def wait_for_frame(
        self, match: FrameMatch, timeout: float, *, since: int = 0, proxy: str | None = None
    ) -> FrameRecord:
        """The first frame after ``since`` matching ``match`` (at ``proxy``), waiting up to
        ``timeout`` seconds; :class:`ProxyTimeout` if none arrives."""
        frame_log = self._require_log()
        return self._run(
            frame_log.wait_for(match, timeout=timeout, proxy=proxy, since=since),
            timeout=timeout + self.call_timeout,
        )

    # -- crossing to the loop thread ----------------------------------------------------------

    def _require_log(self) -> FrameLog:
        if self._log is None or self._loop_thread.closed:
            raise ProxyClosed("the proxy group is not running (use it in a with block)")
        return self._log


def _select(
    frames: Iterable[FrameRecord], proxy: str | None, match: FrameMatch | None, since: int
) -> list[FrameRecord]:
    return [
        frame
        for frame in frames
        if frame.frame_id > since
        and (proxy is None or frame.proxy == proxy)
        and (match is None or match.matches(frame.info))
    ]


class BookieProxy:
    """The synchronous, thread-safe handle of one bookie's proxy (see :class:`ProxyGroup`)."""

    def __init__(self, group: ProxyGroup, core: ProxyCore) -> None:
        self.group = group
        self.core = core
        self.name = core.name
        self.target = (core.target_host, core.target_port)
        self.host = core.listen_host
        self.port = group._call(lambda: core.port)

    @property
    def address(self) -> str:
        """``host:port`` clients should connect to instead of the bookie."""
        return f"{self.host}:{self.port}"

    def __repr__(self) -> str:
        return f"BookieProxy({self.name} {self.address} -> {self.target[0]}:{self.target[1]})"

    # rules
    def add_rule(self, match: FrameMatch, action: Action, *, times: int | None = None) -> int:
        """Apply ``action`` to the next ``times`` frames ``match`` matches; returns the rule id."""
        rule = Rule(match, action, times)
        return self.group._call(lambda: self.core.add_rule(rule))

    def remove_rule(self, rule_id: int) -> bool:
        return self.group._call(lambda: self.core.remove_rule(rule_id))

    def clear_rules(self) -> None:
        self.group._call(self.core.clear_rules)

    def rules(self) -> list[tuple[int, Rule, int | None]]:
        return self.group._call(self.core.rules)

    # held frames
    def held(self) -> list[FrameRecord]:
        return self.group._call(self.core.held)

    def release(self, frame_id: int) -> bool:
        """Send a held frame; False if its connection closed meanwhile."""
        return self.group._call(lambda: self.core.release(frame_id))

    def release_matching(self, match: FrameMatch) -> list[int]:
        return self.group._call(lambda: self.core.release_matching(match))

    def release_all(self) -> list[int]:
        return self.release_matching(FrameMatch())

    def discard(self, frame_id: int) -> None:
        self.group._call(lambda: self.core.discard(frame_id))

    def forge(self, frame_id: int, status: StatusCode) -> bool:
        """Answer the client with ``status`` in place of a held frame (a held request never
        reaches the bookie; a held response is replaced). False if its connection closed
        meanwhile; :class:`NotHeld` if not held; :class:`InvalidPolicy` if it has no answer
        to forge (undecodable, v2 AUTH) or ``status`` is EOK (the frame then stays held)."""
        return self.group._call(lambda: self.core.forge(frame_id, status))

    # connections
    def reset_connections(self) -> int:
        """Reset every client connection of this proxy now (an RST to the client and to the
        bookie): the client's pending requests fail. Returns how many were reset."""
        return self.group._call(self.core.reset_connections)

    def refuse_connections(self, seconds: float | None = None) -> None:
        """Refuse new connections (ECONNREFUSED) for ``seconds``, or until
        :meth:`accept_connections` when None; open connections go on."""
        self.group._call(lambda: self.core.refuse_connections(seconds))

    def accept_connections(self) -> None:
        """End a refusal now: listen again on the same port."""
        self.group._run(self.core.accept_connections())

    @property
    def refusing(self) -> bool:
        return self.group._call(lambda: self.core.refusing)

    def stall(self, on: bool = True) -> None:
        """Stop (``on``) or resume reading from the clients of this proxy, current and new: the
        clients' send buffers fill and their channels become unwritable (backpressure)."""
        self.group._call(lambda: self.core.stall(on))

    @property
    def stalled(self) -> bool:
        return self.group._call(lambda: self.core.stalled)

    # log
    def frames(self, match: FrameMatch | None = None, *, since: int = 0) -> list[FrameRecord]:
        frame_log = self.group._require_log()
        return self.group._call(lambda: _select(frame_log.frames, self.name, match, since))

    def wait_for_frame(self, match: FrameMatch, timeout: float, *, since: int = 0) -> FrameRecord:
        return self.group.wait_for_frame(match, timeout, since=since, proxy=self.name)

    def connections(self) -> list[ConnectionRecord]:
        return [c for c in self.group.connections() if c.proxy == self.name]

    @property
    def open_connections(self) -> int:
        return self.group._call(lambda: self.core.open_connections)


__all__ = ["DEFAULT_CALL_TIMEOUT", "BookieProxy", "ProxyGroup"]

"""Which packets a rule (or a wait) is about, and the one thing a rule does: hold a request.

A match names operations and a znode path (exact, or a string prefix), never an xid: xids
count a connection's requests, so they differ from run to run while the operation and the
znode do not. A ``multi`` is matched through its sub-operations too: ``ZkMatch.request(
Op.SET_DATA, path=p)`` matches a setData of ``p`` alone or inside a multi, and ``Op.MULTI``
with a path matches a multi that touches it.

Rules apply to requests only: the server answers a connection in order, so holding a reply
would hold every later reply of the connection as well, which holding the request already
does, earlier and visibly.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from adapters.zkproxy.codes import Op
from adapters.zkproxy.errors import InvalidRule
from adapters.zkproxy.packets import Direction, PacketInfo


def _op_set(ops: Iterable[Op]) -> frozenset[Op]:
    result = frozenset(ops)
    for op in result:
        if not isinstance(op, Op):
            raise InvalidRule(f"ZkMatch.ops takes Op values, not {op!r}")
    return result


@dataclass(frozen=True)
class ZkMatch:
    """Which packets are meant; empty or ``None`` fields match anything.

    ``ops``: the packet's operation is one of these (a reply's is its request's). ``path``:
    the znode path is exactly this; ``path_prefix``: it starts with this string (so
    ``/ledgers/idgen/ID-`` matches the id generator's sequential creates). ``err``: replies
    with this error code (0: success).
    """

    ops: AbstractSet[Op] = field(default_factory=frozenset)
    path: str | None = None
    path_prefix: str | None = None
    direction: Direction | None = None
    err: int | None = None

    def __post_init__(self) -> None:
        # Any iterable is accepted for convenience; a frozenset is stored (hashable, exact).
        object.__setattr__(self, "ops", _op_set(self.ops))
        if self.path is not None and self.path_prefix is not None:
            raise InvalidRule("ZkMatch takes a path or a path_prefix, not both")
        if self.err is not None and self.direction is Direction.REQUEST:
            raise InvalidRule("ZkMatch(err=...) matches replies; requests carry no err")

    def matches(self, info: PacketInfo) -> bool:
        if self.direction is not None and info.direction is not self.direction:
            return False
        if self.err is not None and info.err != self.err:
            return False
        if self._fits(info.op, info.path):
            return True
        # A multi carries its operations inside: match the multi by a path it touches, or
        # one of its operations on its own.
        return any(
            self._fits(info.op, sub.path) or self._fits(sub.op, sub.path) for sub in info.sub_ops
        )

    def _fits(self, op: Op, path: str | None) -> bool:
        if self.ops and op not in self.ops:
            return False
        if self.path is not None:
            return path == self.path
        if self.path_prefix is not None:
            return path is not None and path.startswith(self.path_prefix)
        return True

    @classmethod
    def request(cls, *ops: Op, path: str | None = None, path_prefix: str | None = None) -> ZkMatch:
        """Requests of ``ops`` (any when none given) on ``path`` or under ``path_prefix``."""
        return cls(frozenset(ops), path, path_prefix, Direction.REQUEST)

    @classmethod
    def reply(
        cls,
        *ops: Op,
        path: str | None = None,
        path_prefix: str | None = None,
        err: int | None = None,
    ) -> ZkMatch:
        """Replies to requests of ``ops`` on ``path`` or under ``path_prefix``."""
        return cls(frozenset(ops), path, path_prefix, Direction.REPLY, err)

    def describe(self) -> str:
        parts = [self.direction.value if self.direction else "any packet"]
        if self.ops:
            parts.append("|".join(sorted(op.value for op in self.ops)))
        if self.path is not None:
            parts.append(self.path)
        if self.path_prefix is not None:
            parts.append(f"{self.path_prefix}*")
        if self.err is not None:
            parts.append(f"err={self.err}")
        return " ".join(parts)


ANY_PACKET = ZkMatch()


@dataclass(frozen=True)
class Hold:
    """Keep the request until released, or for ``release_after`` seconds when given.

    The connection's later requests wait behind it (ZooKeeper answers in order, and the
    client expects it), except pings: a ping waits at most ``ping_wait`` seconds behind a
    held request and is then sent ahead of it (0, the default: at once; None: pings wait
    like any request). A ping may overtake: both the Java client and kazoo read a ping's reply
    (xid -2) without pairing it with their queue of pending requests, and the server answers it
    like any request. Without pings the session starves: the client gives up on its
    connection when nothing has come back for two thirds of the session timeout, and the
    server expires the session after the whole timeout.
    """

    release_after: float | None = None
    ping_wait: float | None = 0.0

    def __post_init__(self) -> None:
        if self.release_after is not None and not self.release_after >= 0:
            raise InvalidRule(f"Hold needs release_after >= 0, got {self.release_after!r}")
        if self.ping_wait is not None and not self.ping_wait >= 0:
            raise InvalidRule(f"Hold needs ping_wait >= 0 or None, got {self.ping_wait!r}")


@dataclass(frozen=True)
class Rule:
    """Hold the next ``times`` requests ``match`` matches (``None``: every one)."""

    match: ZkMatch
    hold: Hold = field(default_factory=Hold)
    times: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.match, ZkMatch):
            raise InvalidRule(f"a Rule matches with a ZkMatch, not {self.match!r}")
        if not isinstance(self.hold, Hold):
            raise InvalidRule(f"a Rule's action is a Hold, not {self.hold!r}")
        if self.match.direction is Direction.REPLY:
            raise InvalidRule("rules hold requests; a reply waits behind its held request")
        if self.times is not None and self.times < 1:
            raise InvalidRule(f"Rule.times must be >= 1 or None, got {self.times}")


__all__ = ["ANY_PACKET", "Hold", "Rule", "ZkMatch"]

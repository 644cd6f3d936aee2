"""Programmable policies: which frames a rule matches, and what happens to them.

A rule is a :class:`FrameMatch` and an action. Matching uses what a frame *means*
(direction, operation, ledger, entry, flags), never its txnId: a client opens connections
lazily and sends its fence reads in no fixed order, so txnIds differ from run to run while the
meaning does not. The first live rule that matches a frame decides; a frame no rule matches is
forwarded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy.errors import InvalidPolicy
from adapters.netproxy.frames import Direction, FrameFlag, FrameInfo, Operation


def _flag_set(flags: Iterable[FrameFlag], name: str) -> frozenset[FrameFlag]:
    result = frozenset(flags)
    for flag in result:
        if not isinstance(flag, FrameFlag):
            raise InvalidPolicy(f"FrameMatch.{name} takes FrameFlag values, not {flag!r}")
    return result


@dataclass(frozen=True)
class FrameMatch:
    """Which frames a rule (or a wait) is about; ``None`` fields match anything.

    ``flags``: the frame has every one of these (for a response: the request it answers had
    them); ``without_flags``: it has none of these. ``decoded=False`` matches undecodable frames
    only, ``True`` decodable ones only.
    """

    direction: Direction | None = None
    operation: Operation | None = None
    ledger_id: int | None = None
    entry_id: int | None = None
    flags: AbstractSet[FrameFlag] = field(default_factory=frozenset)
    without_flags: AbstractSet[FrameFlag] = field(default_factory=frozenset)
    decoded: bool | None = None

    def __post_init__(self) -> None:
        # Accept any iterable of flags for convenience, but store frozensets (hashable, exact).
        object.__setattr__(self, "flags", _flag_set(self.flags, "flags"))
        object.__setattr__(self, "without_flags", _flag_set(self.without_flags, "without_flags"))
        if self.flags & self.without_flags:
            both = ", ".join(sorted(flag.value for flag in self.flags & self.without_flags))
            raise InvalidPolicy(f"FrameMatch requires and forbids the same flags: {both}")
        if self.operation is Operation.UNDECODABLE and self.decoded is True:
            raise InvalidPolicy("FrameMatch(operation=UNDECODABLE, decoded=True) matches nothing")

    def matches(self, frame: FrameInfo) -> bool:
        return (
            (self.direction is None or frame.direction is self.direction)
            and (self.operation is None or frame.operation is self.operation)
            and (self.ledger_id is None or frame.ledger_id == self.ledger_id)
            and (self.entry_id is None or frame.entry_id == self.entry_id)
            and self.flags <= frame.flags
            and not (self.without_flags & frame.flags)
            and (self.decoded is None or frame.decoded == self.decoded)
        )

    @classmethod
    def request(cls, operation: Operation | None = None, **fields: object) -> FrameMatch:
        return cls(Direction.REQUEST, operation, **fields)  # type: ignore[arg-type]

    @classmethod
    def response(cls, operation: Operation | None = None, **fields: object) -> FrameMatch:
        return cls(Direction.RESPONSE, operation, **fields)  # type: ignore[arg-type]


ANY_FRAME = FrameMatch()


@dataclass(frozen=True)
class Forward:
    """Send the frame on at once (the default for frames no rule matches)."""


@dataclass(frozen=True)
class Drop:
    """Never send the frame: a lost message. The sender sees nothing (it times out)."""


@dataclass(frozen=True)
class Delay:
    """Send the frame after ``seconds``; later frames on the connection may overtake it."""

    seconds: float

    def __post_init__(self) -> None:
        if not self.seconds >= 0:
            raise InvalidPolicy(f"Delay needs seconds >= 0, got {self.seconds!r}")


@dataclass(frozen=True)
class Hold:
    """Keep the frame until released (:meth:`~adapters.netproxy.BookieProxy.release`), or until
    ``release_after`` seconds have passed when given."""

    release_after: float | None = None

    def __post_init__(self) -> None:
        if self.release_after is not None and not self.release_after >= 0:
            raise InvalidPolicy(f"Hold needs release_after >= 0, got {self.release_after!r}")


@dataclass(frozen=True)
class Reorder:
    """Hold the next ``count`` matching frames, then send them in ``order``.

    ``order`` lists arrival indexes (0 = the first frame held), a permutation of
    ``range(count)``. When ``release_after`` is given and fewer than ``count`` frames arrived
    by then, the held ones go out in arrival order.
    """

    count: int
    order: Sequence[int]
    release_after: float | None = None

    def __post_init__(self) -> None:
        if self.count < 1:
            raise InvalidPolicy(f"Reorder needs count >= 1, got {self.count}")
        if sorted(self.order) != list(range(self.count)):
            raise InvalidPolicy(
                f"Reorder order {list(self.order)} is not a permutation of range({self.count})"
            )
        object.__setattr__(self, "order", tuple(self.order))
        if self.release_after is not None and not self.release_after >= 0:
            raise InvalidPolicy(f"Reorder needs release_after >= 0, got {self.release_after!r}")


@dataclass(frozen=True)
class Disconnect:
    """Drop the frame and close its connection (both sides), like a bookie refusing input."""


@dataclass(frozen=True)
class Forge:
    """Answer the client with ``status`` instead of the bookie's answer.

    On a request: the bookie never sees it; the proxy answers the client at once with the
    error response a bookie sends for that request (same operation, txnId, ledger, entry and
    protocol). On a response: the bookie did the work (stored the entry, fenced the ledger),
    and the client is told ``status`` instead (apache/bookkeeper#3005: an entry on a bookie
    whose client was told the add failed). See :mod:`adapters.netproxy.forge` for the shapes.

    A Forge rule passes over frames that have no answer to forge (undecodable frames, v2
    AUTH): later rules decide those. ``EOK`` is refused: a forged success would need what only
    the bookie has (a read's entry body), and these are forged *error* answers.
    """

    status: StatusCode

    def __post_init__(self) -> None:
        if not isinstance(self.status, StatusCode):
            raise InvalidPolicy(f"Forge takes a StatusCode, not {self.status!r}")
        if self.status is StatusCode.EOK:
            raise InvalidPolicy("Forge forges error answers; EOK is not one")


Action = Forward | Drop | Delay | Hold | Reorder | Disconnect | Forge


@dataclass(frozen=True)
class Rule:
    """``match`` -> ``action`` for the next ``times`` matching frames (``None``: every one).

    A :class:`Reorder` rule always applies to exactly its ``count`` frames.
    """

    match: FrameMatch
    action: Action
    times: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(
            self.action, Forward | Drop | Delay | Hold | Reorder | Disconnect | Forge
        ):
            raise InvalidPolicy(f"unknown proxy action {self.action!r}")
        if self.times is not None and self.times < 1:
            raise InvalidPolicy(f"Rule.times must be >= 1 or None, got {self.times}")
        if isinstance(self.action, Reorder) and self.times is not None:
            raise InvalidPolicy("a Reorder rule applies to its count frames; do not set times")


__all__ = [
    "ANY_FRAME",
    "Action",
    "Delay",
    "Disconnect",
    "Drop",
    "Forge",
    "Forward",
    "FrameMatch",
    "Hold",
    "Reorder",
    "Rule",
]

"""Gates in the bookie's JVM, the harness's side: :class:`GateClient` drives the gate agent
(:mod:`adapters.cluster.gate_agent`) over its line protocol on 127.0.0.1.

A gate stops a bookie's thread at the entry or the exit of one method (a :class:`GatePoint`),
for one ledger or any, until the harness releases it::

    with GateClient.connect(*cluster.gate_address(bookie_id)) as gates:
        gate = gates.arm(GatePoint.STORAGE_ADD, At.ENTRY, ledger=ledger_id)
        ...send the add...
        hold = gates.wait_held(gate, timeout=10.0)   # the add's thread is held
        ...the add's answer does not come...
        gates.release(hold)                          # and now it does

Every wait is bounded on both sides: each call here has a timeout (:class:`GateTimeout`), and
the agent lets a held thread go on by itself after its hold limit, saying so (an expiry:
:class:`GateHoldExpired` from the next :meth:`GateClient.wait_held` or from releasing that
hold). Both are harness errors: the schedule the harness asked for did not happen, so a run
that meets one is undecided, never judged. Closing the connection (or losing it) disarms every
gate and releases every held thread. The protocol and what a hold may add to a run (a client's
timeout firing, a thread pool's other requests queued behind the held one) are in
docs/adapters/gates.md.
"""

from __future__ import annotations

import collections
import contextlib
import enum
import socket
import time
from dataclasses import dataclass
from types import TracebackType

from adapters.errors import ClusterError

PROTOCOL = "bkconform-gates"
PROTOCOL_VERSION = "1"
#: How long a call waits for the agent's answer unless told otherwise.
DEFAULT_TIMEOUT = 10.0
#: How many threads one gate may hold at most (the agent's bound too).
MAX_COUNT = 1000
#: A line longer than this is no line of the protocol (a wrong peer, or garbage).
MAX_LINE = 64 * 1024


class GatePoint(enum.Enum):
    """Where a gate can stop a thread: ``Class.method`` in ``org.apache.bookkeeper.bookie``, as
    in BookKeeper 4.17.3 and 4.18.0 (the agent's table, ``GateAgent.POINTS``, is the same)."""

    #: The ledger handle's lookup (and creation) by every add, fence and write of a LAC.
    LEDGER_HANDLE = "HandleFactoryImpl.getHandle"
    #: The fenced check an add makes, inside ``synchronized (handle)``.
    FENCED_CHECK = "LedgerDescriptorImpl.isFenced"
    #: The fence itself: the ledger storage's fenced flag set.
    SET_FENCED = "LedgerDescriptorImpl.setFenced"
    #: The fence and its journal record, a ``synchronized`` method of the handle.
    FENCE_AND_LOG = "LedgerDescriptorImpl.fenceAndLogInJournal"
    #: An add's write to the ledger storage (before its journal write).
    STORAGE_ADD = "LedgerDescriptorImpl.addEntry"
    #: An explicit LAC's write to the ledger storage.
    EXPLICIT_LAC = "LedgerDescriptorImpl.setExplicitLac"
    #: A read from the ledger storage (every read, recovery reads included).
    STORAGE_READ = "LedgerDescriptorImpl.readEntry"
    #: A record queued for the journal: an add's entry, and the fence's (entry -0x2000) and the
    #: master key's (-0x1000: before a ledger's first add, on the add's thread) records. The
    #: overload taking the ledger id only.
    JOURNAL_ADD = "Journal.logAddEntry"
    #: A fencing read's fence, before the handle's lookup.
    FENCE_LEDGER = "BookieImpl.fenceLedger"
    #: A read's entry from the bookie (every read; a fencing read's after its fence).
    BOOKIE_READ = "BookieImpl.readEntry"


class At(enum.Enum):
    """Where in the method the thread stops: before its body, or after it (returned or
    thrown)."""

    ENTRY = "entry"
    EXIT = "exit"


@dataclass(frozen=True)
class Gate:
    """An armed gate: it holds up to ``count`` threads reaching ``point`` (for ``ledger``, or
    any ledger when None)."""

    id: int
    point: GatePoint
    at: At
    ledger: int | None
    count: int


@dataclass(frozen=True)
class Hold:
    """A thread held at a gate (the agent's ``HELD``): its ledger and entry when the point
    knows them."""

    id: int
    gate: int
    point: GatePoint
    at: At
    ledger: int | None
    entry: int | None
    thread: str


@dataclass(frozen=True)
class Expiry:
    """A hold the agent ended by itself after its hold limit (its ``EXPIRED``)."""

    hold: int
    gate: int
    after_ms: int
    thread: str


class GateError(ClusterError):
    """Root of the gates' errors. Not retriable by default: a gate that did not hold or
    release as asked is a harness error, which makes the run undecided."""

    retriable = False


class GateArgumentError(GateError, ValueError):
    """A call names no gate the agent could arm (a negative ledger, a count out of range)."""


class GateRefused(GateError):
    """The agent answered ``ERR``: an unknown point, a hold already released, another harness
    already connected; the message is the agent's."""


class GateTimeout(GateError):
    """The agent did not answer, or no thread reached the gate, within the timeout."""


class GateHoldExpired(GateError):
    """The agent released a held thread by itself after its hold limit: the harness did not
    release it in time, so the interleaving it asked for is not the one that ran."""


class GateProtocolError(GateError):
    """The peer said something that is no line of the gate protocol."""


class GateConnectionLost(GateError):
    """The connection to the agent failed or ended (the bookie's JVM exited?)."""

    retriable = True


def _fields(words: list[str], line: str) -> dict[str, str]:
    """``key=value`` words; ``thread=`` is last and takes the rest of the line (a thread's
    name may hold spaces)."""
    found: dict[str, str] = {}
    for index, word in enumerate(words):
        key, equals, value = word.partition("=")
        if not equals:
            raise GateProtocolError(f"not key=value: {word!r} in {line!r}")
        if key == "thread":
            found[key] = " ".join([value, *words[index + 1 :]])
            break
        found[key] = value
    return found


def _optional_int(text: str) -> int | None:
    return None if text == "-" else int(text)


def parse_hold(line: str) -> Hold:
    """A ``HELD`` line of the agent."""
    fields = _fields(line.split(" ")[1:], line)
    try:
        return Hold(
            id=int(fields["hold"]),
            gate=int(fields["gate"]),
            point=GatePoint(fields["point"]),
            at=At(fields["at"]),
            ledger=_optional_int(fields["ledger"]),
            entry=_optional_int(fields["entry"]),
            thread=fields["thread"],
        )
    except (KeyError, ValueError) as exc:
        raise GateProtocolError(f"malformed HELD line {line!r}: {exc!r}") from exc


def parse_expiry(line: str) -> Expiry:
    """An ``EXPIRED`` line of the agent."""
    fields = _fields(line.split(" ")[1:], line)
    try:
        return Expiry(
            hold=int(fields["hold"]),
            gate=int(fields["gate"]),
            after_ms=int(fields["after-ms"]),
            thread=fields["thread"],
        )
    except (KeyError, ValueError) as exc:
        raise GateProtocolError(f"malformed EXPIRED line {line!r}: {exc!r}") from exc


class GateClient:
    """One connection to one bookie's gate agent; :meth:`connect` it, :meth:`close` it (or use
    it as a context manager). Not thread-safe: one harness thread drives it."""

    def __init__(self, sock: socket.socket, peer: str, *, timeout: float = DEFAULT_TIMEOUT):
        self._sock = sock
        self.peer = peer
        self.timeout = timeout
        self._buffer = b""
        self._holds: collections.deque[Hold] = collections.deque()
        #: Expiries not yet raised by :meth:`wait_held`.
        self._unreported: list[Expiry] = []
        #: Every expiry seen, by hold id.
        self.expired: dict[int, Expiry] = {}
        self.hold_limit_ms: int | None = None
        self._closed = False

    @classmethod
    def connect(cls, host: str, port: int, *, timeout: float = DEFAULT_TIMEOUT) -> GateClient:
        """Connect and read the agent's greeting, both within ``timeout``."""
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise GateConnectionLost(
                f"cannot connect to the gate agent at {host}:{port}: {exc} (was the bookie "
                "started with gates, BookieSettings(gates=True)?)"
            ) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = cls(sock, f"{host}:{port}", timeout=timeout)
        try:
            client._greeting(time.monotonic() + timeout)
        except BaseException:
            client.close()
            raise
        return client

    def _greeting(self, deadline: float) -> None:
        line = self._read_line(deadline, "the agent's greeting")
        if line.startswith("ERR "):
            raise GateRefused(f"the gate agent at {self.peer} refused: {line[4:]}")
        words = line.split(" ")
        if words[:3] != ["HELLO", PROTOCOL, PROTOCOL_VERSION]:
            raise GateProtocolError(
                f"{self.peer} is no gate agent of protocol {PROTOCOL_VERSION}: it said {line!r}"
            )
        limit = _fields(words[3:], line).get("hold-limit-ms")
        self.hold_limit_ms = None if limit is None else int(limit)

    # Commands --------------------------------------------------------------------------------

    def arm(
        self,
        point: GatePoint,
        at: At = At.ENTRY,
        *,
        ledger: int | None = None,
        count: int = 1,
        timeout: float | None = None,
    ) -> Gate:
        """Arm a gate: the next ``count`` threads reaching ``point`` (for ``ledger``; None: any
        ledger) are held there."""
        if not isinstance(point, GatePoint) or not isinstance(at, At):
            raise GateArgumentError(f"a point is a GatePoint and at is an At: {point!r}, {at!r}")
        if ledger is not None and (isinstance(ledger, bool) or ledger < 0):
            raise GateArgumentError(f"a ledger id is a non-negative int, got {ledger!r}")
        if isinstance(count, bool) or not 1 <= count <= MAX_COUNT:
            raise GateArgumentError(f"a gate holds 1 to {MAX_COUNT} threads, got {count!r}")
        which = "*" if ledger is None else str(ledger)
        answer = self._command(f"ARM {point.value} {at.value} {which} {count}", timeout)
        return Gate(self._number(answer, "ARMED"), point, at, ledger, count)

    def wait_held(self, gate: Gate | None = None, *, timeout: float | None = None) -> Hold:
        """The next thread held at ``gate`` (any gate when None), as the agent reported it.

        :raises GateHoldExpired: a hold expired meanwhile (reported once).
        :raises GateTimeout: no thread was held there within ``timeout``.
        """
        deadline = self._deadline(timeout)
        while True:
            self._raise_expiries()
            for hold in self._holds:
                if gate is None or hold.gate == gate.id:
                    self._holds.remove(hold)
                    return hold
            where = "any gate" if gate is None else f"gate {gate.id} ({gate.point.value})"
            self._event(self._read_line(deadline, f"a thread held at {where}"))

    def release(self, hold: Hold, *, timeout: float | None = None) -> None:
        """Let the held thread go on.

        :raises GateHoldExpired: the agent had released it by itself already."""
        try:
            answer = self._command(f"RELEASE {hold.id}", timeout)
        except GateRefused:
            if hold.id in self.expired:
                raise self._expired_error(self.expired[hold.id]) from None
            raise
        self._number(answer, "RELEASED")

    def release_all(self, *, timeout: float | None = None) -> int:
        """Let every held thread go on; how many were held."""
        return self._number(self._command("RELEASE-ALL", timeout), "RELEASED-ALL")

    def disarm(self, gate: Gate, *, timeout: float | None = None) -> int:
        """Disarm ``gate`` and release the threads it holds; how many it held."""
        answer = self._command(f"DISARM {gate.id}", timeout)
        words = answer.split(" ")
        if words[:2] != ["DISARMED", str(gate.id)] or len(words) != 3:
            raise GateProtocolError(f"unexpected answer to DISARM {gate.id}: {answer!r}")
        return int(_fields(words[2:], answer)["released"])

    def points(self, *, timeout: float | None = None) -> dict[str, str]:
        """Each point's state in the bookie: ``installed``, ``pending`` (its class is not
        loaded yet), ``missing`` (this release has no such method) or ``error``."""
        answer = self._command("POINTS", timeout)
        words = answer.split(" ")
        if words[0] != "POINTS":
            raise GateProtocolError(f"unexpected answer to POINTS: {answer!r}")
        return dict(word.partition("=")[::2] for word in words[1:])

    def close(self) -> None:
        """End the connection: the agent disarms every gate and releases every held thread."""
        if self._closed:
            return
        self._closed = True
        # Closing a socket that already failed may fail too; it is closed either way.
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> GateClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # The line protocol -----------------------------------------------------------------------

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.timeout if timeout is None else timeout)

    def _command(self, line: str, timeout: float | None) -> str:
        """Send one command, return its ``OK`` answer's rest (events met meanwhile are kept)."""
        if self._closed:
            raise GateConnectionLost(f"the gate client of {self.peer} is closed")
        deadline = self._deadline(timeout)
        try:
            self._sock.settimeout(max(0.001, deadline - time.monotonic()))
            self._sock.sendall(line.encode() + b"\n")
        except OSError as exc:
            raise GateConnectionLost(f"sending {line!r} to {self.peer}: {exc}") from exc
        while True:
            try:
                answer = self._read_line(deadline, f"the answer to {line!r}")
            except GateTimeout:
                # A late answer would be taken for the next command's: the connection is of no
                # more use, and closing it makes the agent release everything.
                self.close()
                raise
            if answer.startswith("OK "):
                return answer[3:]
            if answer.startswith("ERR "):
                raise GateRefused(f"the gate agent at {self.peer} refused {line!r}: {answer[4:]}")
            self._event(answer)

    def _event(self, line: str) -> None:
        kind = line.split(" ", 1)[0]
        if kind == "HELD":
            self._holds.append(parse_hold(line))
        elif kind == "EXPIRED":
            expiry = parse_expiry(line)
            self.expired[expiry.hold] = expiry
            self._unreported.append(expiry)
            # A hold that expired is no longer held: forget it if it was never waited for.
            self._holds = collections.deque(h for h in self._holds if h.id != expiry.hold)
        else:
            raise GateProtocolError(f"unexpected line from the gate agent at {self.peer}: {line!r}")

    def _raise_expiries(self) -> None:
        if self._unreported:
            expiry = self._unreported.pop(0)
            raise self._expired_error(expiry)

    def _expired_error(self, expiry: Expiry) -> GateHoldExpired:
        return GateHoldExpired(
            f"the gate agent at {self.peer} released hold {expiry.hold} (gate {expiry.gate}, "
            f"thread {expiry.thread}) by itself after {expiry.after_ms} ms: the harness did not "
            "release it in time, so the run did not follow the schedule it asked for"
        )

    @staticmethod
    def _number(answer: str, word: str) -> int:
        parts = answer.split(" ")
        if len(parts) != 2 or parts[0] != word or not parts[1].isdigit():
            raise GateProtocolError(f"expected '{word} <number>', got {answer!r}")
        return int(parts[1])

    def _read_line(self, deadline: float, waiting_for: str) -> str:
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise GateProtocolError(f"{self.peer} sent a line over {MAX_LINE} bytes")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise GateTimeout(f"{waiting_for} did not come from {self.peer} in time")
            try:
                self._sock.settimeout(remaining)
                chunk = self._sock.recv(4096)
            except TimeoutError:
                continue  # the deadline check above raises
            except OSError as exc:
                raise GateConnectionLost(f"reading from {self.peer}: {exc}") from exc
            if not chunk:
                raise GateConnectionLost(
                    f"the gate agent at {self.peer} closed the connection while the harness "
                    f"waited for {waiting_for} (the bookie's JVM exited?)"
                )
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return raw.decode().rstrip("\r")
        except UnicodeDecodeError as exc:
            raise GateProtocolError(f"{self.peer} sent bytes that are no UTF-8 line") from exc


__all__ = [
    "DEFAULT_TIMEOUT",
    "At",
    "Expiry",
    "Gate",
    "GateArgumentError",
    "GateClient",
    "GateConnectionLost",
    "GateError",
    "GateHoldExpired",
    "GatePoint",
    "GateProtocolError",
    "GateRefused",
    "GateTimeout",
    "Hold",
    "parse_expiry",
    "parse_hold",
]

"""A fake gate agent for the harness side's tests: a Python socket server that speaks the gate
protocol (docs/adapters/gates.md) and holds nothing; each test says when a thread is "held"."""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

from adapters.cluster.gates import GatePoint

GREETING = "HELLO bkconform-gates 1 hold-limit-ms=30000"


class FakeGateAgent:
    """Serves one connection at 127.0.0.1:``port``. ``greeting`` is its first line (None: it
    says nothing); with ``silent`` it reads commands and never answers."""

    def __init__(
        self,
        *,
        greeting: str | None = GREETING,
        silent: bool = False,
        points: frozenset[str] = frozenset(p.value for p in GatePoint),
    ) -> None:
        self.greeting = greeting
        self.silent = silent
        #: The points this agent knows (an older agent may know fewer).
        self.points = points
        self.commands: list[str] = []
        self.holds: set[int] = set()
        self._next_gate = 1
        self._next_hold = 1
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._connection: socket.socket | None = None
        self._connected = threading.Event()
        self._send_lock = threading.Lock()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def __enter__(self) -> FakeGateAgent:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._server.close()
        if self._connection is not None:
            with contextlib.suppress(OSError):
                self._connection.shutdown(socket.SHUT_RDWR)
            self._connection.close()
        self._thread.join(timeout=5.0)

    def send(self, line: str) -> None:
        """Send ``line`` as the agent would, whenever the test says."""
        if not self._connected.wait(5.0) or self._connection is None:
            raise AssertionError("no harness connected to the fake agent")
        with self._send_lock:
            self._connection.sendall(line.encode() + b"\n")

    def hold(
        self,
        gate: int,
        *,
        point: GatePoint = GatePoint.STORAGE_ADD,
        at: str = "entry",
        ledger: int | None = 7,
        entry: int | None = 0,
        thread: str = "BookieWriteThreadPool-OrderedExecutor-0-0",
    ) -> int:
        """Report a thread held at ``gate``; its hold id."""
        hold = self._next_hold
        self._next_hold += 1
        self.holds.add(hold)
        text = "-" if ledger is None else str(ledger)
        entry_text = "-" if entry is None else str(entry)
        self.send(
            f"HELD hold={hold} gate={gate} point={point.value} at={at} ledger={text} "
            f"entry={entry_text} thread={thread}"
        )
        return hold

    def expire(self, hold: int, gate: int, after_ms: int = 30000) -> None:
        self.holds.discard(hold)
        self.send(f"EXPIRED hold={hold} gate={gate} after-ms={after_ms} thread=worker 1")

    def disconnect(self) -> None:
        assert self._connection is not None
        self._connection.shutdown(socket.SHUT_RDWR)

    def _serve(self) -> None:
        try:
            connection, _ = self._server.accept()
        except OSError:
            return
        self._connection = connection
        self._connected.set()
        if self.greeting is not None:
            self.send(self.greeting)
        buffer = b""
        while True:
            try:
                chunk = connection.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                raw, _, buffer = buffer.partition(b"\n")
                line = raw.decode()
                self.commands.append(line)
                if not self.silent:
                    with contextlib.suppress(OSError):
                        self.send(self._answer(line))

    def _answer(self, line: str) -> str:
        words = line.split(" ")
        if words[0] == "ARM":
            if words[1] not in self.points:
                return f"ERR unknown point {words[1]}"
            gate = self._next_gate
            self._next_gate += 1
            return f"OK ARMED {gate}"
        if words[0] == "RELEASE":
            hold = int(words[1])
            if hold not in self.holds:
                return f"ERR no thread is held as hold {hold}"
            self.holds.discard(hold)
            return f"OK RELEASED {hold}"
        if words[0] == "RELEASE-ALL":
            released, self.holds = len(self.holds), set()
            return f"OK RELEASED-ALL {released}"
        if words[0] == "DISARM":
            return f"OK DISARMED {words[1]} released=0"
        if words[0] == "POINTS":
            return "OK POINTS " + " ".join(f"{p.value}=installed" for p in GatePoint)
        return f"ERR unknown command {words[0]}"

"""A writer's pipelined adds through the Java client, with each acknowledgement timestamped.

``LedgerHandle.addEntry`` blocks until the entry is acknowledged, so a writer that sends its
next entry before the previous one is confirmed (what BookKeeper's writers do, and what
exposes its ensemble-change races) needs ``asyncAddEntry`` and a callback. py4j runs no Java
callback without a callback server; instead a small Java class shipped as source
(``java_sources/bkconform/AddRecorder.java``) is compiled against the distribution's jars on
first use (cached under ``$BKCONFORM_HOME/add-recorder/``) and records each callback's code,
entry id and ``System.nanoTime()``, which on Linux is ``time.monotonic()``'s clock.

::

    classes = recorder_classes(bookkeeper_home)      # put it on the JVM's classpath
    adds = PipelinedAdds(ledger, 3)
    for index in range(3):
        adds.add(index, b"entry %d" % index)
    adds.wait(timeout=10)
    for outcome in adds.outcomes(): ...               # AddOutcome(index, code, entry_id, at)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from adapters.installations import java
from adapters.installations.errors import JavaNotFound
from adapters.installations.java_programs import JavaCompileError, JavaProgram, compiled_classes
from adapters.javaclient.client import JavaLedger, java_class
from adapters.javaclient.errors import BK_ERRORS_BY_CODE, JavaClientError
from adapters.user_state import bkconform_home

CLASS_NAME = "bkconform.AddRecorder"
#: BookKeeper's ``BKException.Code.OK``.
OK = 0


def source_text() -> str:
    node = resources.files("adapters.javaclient") / "java_sources" / "bkconform"
    return (node / "AddRecorder.java").read_text(encoding="utf-8")


def recorder_classes(
    home: Path, *, root: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The class directory of the add recorder, compiled against ``home/lib`` if not cached."""
    try:
        javac = java.find_javac(environ)
    except JavaNotFound as exc:
        raise JavaClientError(
            f"no javac: the Java client's add recorder is compiled on first use ({exc})"
        ) from exc
    jars = sorted(p for p in (home / "lib").glob("*.jar") if "bookkeeper-server" in p.name)
    if not jars:
        raise JavaClientError(f"{home}/lib has no bookkeeper-server jar to compile against")
    base = (bkconform_home(environ) / "add-recorder") if root is None else root
    try:
        return compiled_classes(
            JavaProgram(CLASS_NAME, source_text()),
            lib=home / "lib",
            key_jars=jars,
            javac=javac,
            base=base,
        )
    except JavaCompileError as exc:
        raise JavaClientError(f"the add recorder cannot be built: {exc}") from exc


def code_name(code: int) -> str:
    """``-6`` -> ``"NotEnoughBookies"``; unknown codes by number."""
    if code == OK:
        return "OK"
    error = BK_ERRORS_BY_CODE.get(code)
    return error.__name__.removeprefix("BK") if error else f"code {code}"


@dataclass(frozen=True)
class AddOutcome:
    """The callback of add number ``index``: BookKeeper's return code, the entry id it got,
    and when (``time.monotonic()`` seconds). ``code`` None: no callback yet."""

    index: int
    code: int | None
    entry_id: int | None
    at: float | None

    @property
    def acknowledged(self) -> bool:
        return self.code == OK

    def describe(self) -> str:
        if self.code is None:
            return f"add {self.index}: no callback"
        entry = f"e{self.entry_id}" if self.entry_id is not None and self.entry_id >= 0 else "-"
        return f"add {self.index} ({entry}): {code_name(self.code)}"


class PipelinedAdds:
    """``count`` adds of one writer ledger, sent without waiting (see the module docstring)."""

    def __init__(self, ledger: JavaLedger, count: int) -> None:
        if count < 1:
            raise JavaClientError(f"a pipelined writer sends >= 1 adds, got {count}")
        self.ledger = ledger
        self.count = count
        gateway = ledger.client.gateway
        recorder_class = java_class(gateway, CLASS_NAME)
        self._recorder = gateway.call(lambda: recorder_class(count), what="new AddRecorder")
        self._gateway = gateway

    def add(self, index: int, data: bytes, *, timeout: float | None = None) -> None:
        """``asyncAddEntry`` of add number ``index`` (returns once it is queued)."""
        if not 0 <= index < self.count:
            raise JavaClientError(f"add number {index} is outside 0..{self.count - 1}")
        payload = bytearray(data)
        handle = self.ledger.handle
        self._gateway.call(
            lambda: self._recorder.add(handle, index, payload),
            timeout=timeout,
            what=f"asyncAddEntry {self.ledger.ledger_id} #{index}",
        )

    def wait(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) for every callback; False if some never came."""
        millis = max(0, int(timeout * 1000))
        return bool(
            self._gateway.call(
                lambda: self._recorder.awaitAll(millis),
                timeout=timeout + 5.0,
                what="AddRecorder.await",
            )
        )

    def outcomes(self) -> list[AddOutcome]:
        def read() -> list[AddOutcome]:
            found = []
            for index in range(self.count):
                if not self._recorder.completed(index):
                    found.append(AddOutcome(index, None, None, None))
                    continue
                found.append(
                    AddOutcome(
                        index,
                        int(self._recorder.code(index)),
                        int(self._recorder.entryId(index)),
                        int(self._recorder.completedAtNanos(index)) / 1e9,
                    )
                )
            return found

        outcomes: list[AddOutcome] = self._gateway.call(read, what="AddRecorder results")
        return outcomes


def java_monotonic(ledger: JavaLedger) -> float:
    """``System.nanoTime()`` in the JVM, in seconds (compare with ``time.monotonic()``)."""
    gateway = ledger.client.gateway
    recorder_class = java_class(gateway, CLASS_NAME)
    return int(gateway.call(recorder_class.now, what="AddRecorder.now")) / 1e9


__all__ = [
    "CLASS_NAME",
    "OK",
    "AddOutcome",
    "PipelinedAdds",
    "code_name",
    "java_monotonic",
    "recorder_classes",
    "source_text",
]

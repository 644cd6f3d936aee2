"""The run directory, the one place a run's results are written (Jepsen's store is the anchor).

``runs/<UTC time>-<target>-<name>/`` is written *as the run goes*, so that a run that dies midway
(``kill -9``, the OOM killer, a CI timeout) still leaves its history:

- ``results.json``, written when the run starts with ``"state": "running"`` and
  ``"verdict": "undecided"`` and what is known then (name, configuration, target, system under
  test, versions, ``started``, and under ``process`` the pid, start time, host and boot id that
  let a reader tell a live run from a dead one); replaced atomically (a temporary file renamed)
  when the run ends by the final one: ``"state": "finished"``, the verdict, findings, ``finished``
  and ``history`` (``lines``, ``examples`` and ``story``: which lines tell the story below).
  A run stopped by an exception it did not handle ends ``"state": "interrupted"``, undecided;
- ``history.jsonl``, one line per step as soon as the step is judged (flushed per line, fsync'd
  at the end of each example): the engine's step record (action, request, predicted and observed
  answers, divergences, violations, error) with ``"example"``: the example's number, counted from
  1 in the order examples ran on the target, and for a search ``"phase"`` (replay, hypothesis,
  corpus, shrink, minimise). A search's history is every example's steps in order; when it has a
  finding, the shrunk finding's own steps are appended at the end with ``"example": "finding"``
  (they also ran as one of the numbered examples). A scenario or replay is one example, ``1``;
- ``trace.txt`` (the numbered trace), ``sequence.txt`` (sequencediagram.org text) and
  ``sequence.svg`` (the same diagram, self-contained): the story, written at the end.

A run on a cluster that outlives it (``--target external``) also records, under ``ledgers`` in
the final ``results.json`` (:meth:`RunWriter.record`), what became of the ledgers it created:
its run id (the mark in their custom metadata), how many it created and deleted, the ids of
those it kept and why (``--keep-ledgers``, or a finding's, listed in ``finding_ledgers``), and
what it could not delete.

Readers go through :func:`read_results` and :func:`read_history`: a run whose ``results.json``
still says running but whose process is gone reads ``"state": "died"`` and undecided; a partial
last line of ``history.jsonl`` (the kill came mid-write) is skipped, every complete line kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from adapters.installations.system import SystemUnderTest
from adapters.process_records import describe_self, liveness
from conformance.engine import Outcome, StepRecord
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.render import numbered_trace, sequence_diagram
from model.bookkeeper.svg import sequence_svg

RESULTS = "results.json"
HISTORY = "history.jsonl"

#: ``results.json``'s ``state`` as written: while the run goes, once it ended normally, or
#: after an exception it did not handle.
RUNNING, FINISHED, INTERRUPTED = "running", "finished", "interrupted"
#: ``state`` as :func:`read_results` reads a ``running`` run whose process is gone.
DIED = "died"
#: The ``example`` of the history lines that repeat a search's shrunk finding.
FINDING = "finding"

Example = int | str


def versions(**extra: str) -> dict[str, str]:
    """Versions of what a run depends on, plus ``extra`` (e.g. the cluster's)."""
    found = {"python": platform.python_version(), "platform": platform.platform(), **extra}
    for package in ("bkconform", "hypothesis", "kazoo", "protobuf"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def system_record(system: SystemUnderTest) -> dict[str, str]:
    """``results.json``'s ``system_under_test``."""
    return {**system.as_dict(), "summary": system.render()}


def system_header(system: SystemUnderTest) -> str:
    """The console header's line naming what a run runs against."""
    return f"System under test: {system.render()}"


def new_run_dir(root: Path, *labels: str) -> Path:
    """``<root>/<UTC time>-<label>-<label>...``, made fresh (a suffix keeps same-second runs
    apart). Every engine's runs go through here: BookKeeper (target, scenario) and Zab."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = "-".join((stamp, *labels))
    path = root / base
    suffix = 1
    while path.exists():
        suffix += 1
        path = root / f"{base}-{suffix}"
    path.mkdir(parents=True)
    return path


def utc_now() -> str:
    """The time now, as ``results.json`` writes ``started`` and ``finished``
    (``2026-11-26T14:03:43Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_json_atomically(path: Path, data: dict[str, Any], *, sort_keys: bool = False) -> None:
    """Write ``data`` to ``path`` as indented JSON; readers see the old file or the new one,
    never half of one (also across a crash): a temporary file, fsync'd, renamed over it."""
    temporary = path.with_name(f".{path.name}.tmp")
    with temporary.open("w", encoding="utf-8") as out:
        out.write(json.dumps(data, indent=2, sort_keys=sort_keys) + "\n")
        out.flush()
        os.fsync(out.fileno())
    temporary.replace(path)


def add_to_results(run_dir: Path, key: str, value: Any) -> None:
    """Add what a command learnt after its run ended (a report scenario's window, judged
    from the finished record) to the run's final ``results.json``, atomically."""
    path = run_dir / RESULTS
    results = json.loads(path.read_text())
    results[key] = value
    write_json_atomically(path, results)


class RunDirectoryWriter(ABC):
    """What every engine's run-directory writer shares (:class:`RunWriter` for BookKeeper,
    :class:`conformance.zab.rundir.ZabRunWriter` for Zab): it is a context manager, and leaving
    the ``with`` block while the run is still :data:`RUNNING` (an exception, or no ``finish``)
    ends the run :data:`INTERRUPTED`, undecided, saying why; the history file is closed either
    way. A process killed outright leaves ``running``, which readers see as died.

    A subclass sets :attr:`state`, closes its history in :meth:`_close_history` and writes an
    undecided run's final ``results.json`` in :meth:`_write_undecided_results`.
    """

    state: str | None

    def interrupt(self, reason: str) -> None:
        """End the run undecided, saying why (an exception stopped it)."""
        self._close_history()
        self.state = INTERRUPTED
        self._write_undecided_results(f"the run was interrupted: {reason}")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.state == RUNNING:
            self.interrupt(repr(exc) if exc is not None else "the writer was left unfinished")
        self._close_history()

    @abstractmethod
    def _close_history(self) -> None:
        """Flush, fsync and close the history file, if it is open."""

    @abstractmethod
    def _write_undecided_results(self, error: str) -> None:
        """Write the final ``results.json`` of a run that ended undecided, saying why in
        ``error`` (:meth:`interrupt`: ``state`` is already :data:`INTERRUPTED`)."""


class RunWriter(RunDirectoryWriter):
    """Writes one run directory as the run goes (see the module docstring)::

        with RunWriter(path, name="run", cfg=cfg, target=..., system=...) as writer:
            writer.start()
            ...  writer.step(example, phase, record); writer.example_done(example) ...
            writer.finish(outcome, story=FINDING)

    It is a :class:`conformance.search.runner.StepSink`. Leaving the ``with`` block by an
    exception before :meth:`finish` ends the run ``interrupted`` (undecided); a process killed
    outright leaves ``running``, which readers see as died (:class:`RunDirectoryWriter`).
    """

    def __init__(
        self,
        path: Path,
        *,
        name: str,
        cfg: ModelConfig,
        target: dict[str, str],
        system: SystemUnderTest,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """``target`` and ``extra``: what is known at the start (``finish`` may add to both)."""
        self.path = path
        self.name = name
        self.cfg = cfg
        self.target = dict(target)
        self.system = system
        self.extra = dict(extra or {})
        self.started = ""
        self.lines = 0
        self.examples: set[Example] = set()
        self.state: str | None = None
        self._history: IO[str] | None = None

    # Writing ------------------------------------------------------------------------------

    def start(self) -> Self:
        """Write ``results.json`` as running and open ``history.jsonl``."""
        self.started = utc_now()
        self._history = (self.path / HISTORY).open("w", encoding="utf-8")
        self.state = RUNNING
        self._write_results(Outcome(Verdict.UNDECIDED, [], []), {})
        return self

    def step(self, example: Example, phase: str | None, record: StepRecord) -> None:
        """Append one judged step; flushed at once (a kill loses no judged step)."""
        line: dict[str, Any] = {"example": example}
        if phase is not None:
            line["phase"] = phase
        line.update(record.as_dict())
        history = self._open_history()
        history.write(json.dumps(line) + "\n")
        history.flush()
        self.lines += 1
        self.examples.add(example)

    def record(self, key: str, value: Any) -> None:
        """Add ``key`` to ``results.json`` from the next write on (:meth:`finish`, or an
        interrupted run's last write): what is known only as the run ends, such as what became
        of the ledgers it created on an external cluster (``ledgers``)."""
        self.extra[key] = value

    def recorder(self, example: Example = 1) -> Callable[[StepRecord], None]:
        """An ``on_record`` callback that appends each record as ``example`` (one-example runs:
        scenarios, replays)."""
        return lambda record: self.step(example, None, record)

    def example_done(self, example: Example) -> None:
        """The example ended: its lines reach the disk (fsync)."""
        history = self._open_history()
        history.flush()
        os.fsync(history.fileno())

    def finish(
        self,
        outcome: Outcome,
        *,
        target: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
        story: Example | None = 1,
        cfg: ModelConfig | None = None,
    ) -> None:
        """Finalise ``results.json`` with the verdict and write the story files.

        ``story``: which history lines tell ``outcome``'s story. :data:`FINDING` appends
        ``outcome.steps`` now, tagged so (a search's shrunk finding); an example number names
        lines already written (a scenario's or replay's example 1); None: no story (a search
        that found nothing). ``cfg``: the configuration the outcome was judged under, when the
        run settled it only at the end (the Java client's scenario learns from the client's
        frames whether recovery reads fence); it replaces the one given at the start.
        """
        if story == FINDING:
            for record in outcome.steps:
                self.step(FINDING, None, record)
        self._close_history()
        if target is not None:
            self.target.update(target)
        if cfg is not None:
            self.cfg = cfg
        self.state = FINISHED
        summary = {"lines": self.lines, "examples": self._count_examples(), "story": story}
        self._write_results(outcome, {"finished": utc_now(), "history": summary, **(extra or {})})
        self._write_story(outcome)

    # Internals ----------------------------------------------------------------------------

    def _open_history(self) -> IO[str]:
        if self._history is None:
            raise RuntimeError("RunWriter: start() first, and no steps after finish()")
        return self._history

    def _close_history(self) -> None:
        if self._history is not None:
            with contextlib.suppress(OSError):
                self._history.flush()
                os.fsync(self._history.fileno())
            self._history.close()
            self._history = None

    def _write_undecided_results(self, error: str) -> None:
        summary = {"lines": self.lines, "examples": self._count_examples(), "story": None}
        self._write_results(
            Outcome(Verdict.UNDECIDED, [], [], error=error),
            {"finished": utc_now(), "history": summary},
        )

    def _count_examples(self) -> int:
        return len([e for e in self.examples if e != FINDING])

    def _write_results(self, outcome: Outcome, more: dict[str, Any]) -> None:
        config = {k: v for k, v in asdict(self.cfg).items() if k != "effective_ensemble_size"}
        results = {
            "name": self.name,
            "state": self.state,
            "verdict": outcome.verdict,
            "exit_code": outcome.exit_code,
            "violations": outcome.violations,
            "divergences": outcome.divergences,
            "error": outcome.error,
            "error_cause": outcome.cause,
            "error_retriable": outcome.retriable,
            "note": outcome.note,
            "steps": len(outcome.steps),
            "started": self.started,
            "process": describe_self(),
            "config": config,
            "config_summary": self.cfg.describe(),
            "target": self.target,
            "system_under_test": system_record(self.system),
            "versions": versions(),
            **self.extra,
            **more,
        }
        write_json_atomically(self.path / RESULTS, results)

    def _write_story(self, outcome: Outcome) -> None:
        if not outcome.trace:
            return  # nothing was found: no story to tell
        cfg, name, path = self.cfg, self.name, self.path
        (path / "trace.txt").write_text(numbered_trace(cfg, outcome.trace) + "\n")
        findings = ", ".join(
            outcome.violations + ([Verdict.DIVERGENCE] if outcome.divergences else [])
        )
        title = f"{name} ({cfg.describe()})"
        note = f"VERDICT: {outcome.verdict}" + (f" ({findings})" if findings else "")
        (path / "sequence.txt").write_text(
            sequence_diagram(cfg, outcome.trace, title=title, final_note=note)
        )
        (path / "sequence.svg").write_text(
            sequence_svg(cfg, outcome.trace, title=title, final_note=note)
        )


def write_run(
    path: Path,
    *,
    name: str,
    cfg: ModelConfig,
    outcome: Outcome,
    target: dict[str, str],
    system: SystemUnderTest,
    extra: dict[str, Any] | None = None,
) -> None:
    """The whole run directory at once, for a run judged after the fact: its steps are
    example 1. ``system``: what the run ran against, recorded as ``system_under_test`` (its
    parts and, under ``summary``, the line the console header printed). A command should rather
    start a :class:`RunWriter` when its run starts, so that a kill leaves a run directory that
    reads as died (the Java client's scenario does)."""
    with RunWriter(path, name=name, cfg=cfg, target=target, system=system) as writer:
        writer.start()
        for record in outcome.steps:
            writer.step(1, None, record)
        writer.example_done(1)
        writer.finish(outcome, extra=extra, story=1)


# Reading -----------------------------------------------------------------------------------


def read_results(path: Path) -> dict[str, Any]:
    """A run directory's ``results.json`` as a reader must take it.

    ``state`` is ``finished``, ``interrupted``, ``running`` (its process still runs, or runs
    where this machine cannot tell) or ``died`` (written as running, its process is gone);
    run directories written before streaming have no state and are finished. Anything but
    finished reads as undecided (``verdict``, ``exit_code``), with ``error`` saying why.
    """
    results: dict[str, Any] = json.loads((path / RESULTS).read_text())
    state = results.get("state", FINISHED)
    process = results.get("process") or {}
    if state == RUNNING and liveness(process) == "dead":
        state = DIED
    results["state"] = state
    if state == FINISHED:
        return results
    results["verdict"] = Verdict.UNDECIDED
    results["exit_code"] = Verdict.UNDECIDED.exit_code
    where = f"pid {process.get('pid')} on {process.get('host')}"
    if state == DIED:
        results["error"] = (
            f"the run died before it finished ({where}, started {results.get('started')}); "
            f"{HISTORY} holds its steps up to then"
        )
    elif state == RUNNING:
        results["error"] = f"the run has not finished ({where}, started {results.get('started')})"
    return results


def iter_history(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of a run directory's ``history.jsonl``, in order. A last line without its
    newline was cut by a kill mid-write and is skipped; a complete line that does not parse
    is an error (ValueError naming it)."""
    with (path / HISTORY).open("rb") as history:
        for number, raw in enumerate(history, start=1):
            if not raw.endswith(b"\n"):
                return  # the partial last line of a run killed mid-write
            try:
                yield json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"{path / HISTORY}, line {number}: {exc}") from exc


def read_history(path: Path) -> list[dict[str, Any]]:
    """Every complete line of ``history.jsonl`` (see :func:`iter_history`)."""
    return list(iter_history(path))


def story_steps(path: Path) -> list[dict[str, Any]]:
    """The history lines that tell the run's story (``results.json``'s ``history.story``): a
    search's shrunk finding, a scenario's or replay's one example; none for a search that found
    nothing or a run that did not finish. Run directories written before streaming: every line.
    """
    results = read_results(path)
    lines = read_history(path)
    if "history" not in results:
        return lines if results["state"] == FINISHED else []
    story = results["history"].get("story")
    return [] if story is None else [line for line in lines if line.get("example") == story]

"""Replay the search corpus on real BookKeeper bookies and on the reference bookie (the test
double of ``adapters/refbookie``) and compare every answer, step by step.

For each configuration (``conformance.distributed.plan.CONFIGURATIONS``) a corpus of choice
sequences is built deterministically from ``--seed``, with no cluster:

* **hypothesis**: the search's Hypothesis phase run on the in-process model target
  (``run_search`` with ``explore=False``), every example it ran; the most dangerous are kept
  (crashes first, then the danger score, then the number of bookie answers);
* **explorer**: the traces that first reached each corner of the model explorer's archive
  (``simulate_randomly(strategy="archive")``, a fixed number of rounds), encoded as choices
  as the search's corpus phase does; the explorer's violating trace when it finds one;
* **database** (``--database DIR``): failures kept in a Hypothesis example database
  (``runs/hypothesis-examples`` of ``bkconform run``) under this configuration's keys.

Every sequence is replayed with ``replay_choices`` on one ``LocalTarget`` with real bookies
(BookKeeper, ``choose_bookies()``) and then on one with reference bookies; each target is
opened once per configuration and closed in a ``finally``. The ``observed`` answer of every
step is compared (the whole dict, the wire status included); a step where one side raised,
and a run that stopped before the other, count as differences; so does the end of the run
(the verdict and the final-state differences from the model) when both ran every step.

Run (about 10-15 minutes for the default corpus on a 2-core machine):

    .venv/bin/python tools/compare_bookies.py --out runs/compare-bookies/report.md
    .venv/bin/python tools/compare_bookies.py --configs limbo-crash no-limbo --per-config 5 \\
        --budget 300 --out /tmp/cmp.md
    .venv/bin/python tools/compare_bookies.py --corpus-only --out /tmp/corpus.md   # no cluster

Writes the Markdown report to ``--out`` and the same data as JSON next to it (``.json``).
Exit code 0 when no difference was found, 1 when some were, 2 when nothing could be compared.
Every process started is stopped on every way out (a ``finally`` per target; SIGTERM and
SIGINT unwind through it; the cluster's own supervision stops children at exit); the total
time is bounded by ``--budget`` (a soft deadline between sequences, and an alarm after it).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's packages come from the tree
    sys.path.insert(0, str(ROOT))

from conformance.engine import Outcome  # noqa: E402
from model.bookkeeper.action_table import Effect, names_with  # noqa: E402

DEFAULT_CONFIGS = ("fenced-recovery", "fragment-recovery", "limbo-crash", "no-limbo")
#: Seconds kept back from ``--budget`` for stopping clusters and writing the report.
RESERVE = 45.0
#: Share of a configuration's time for the real bookies (slower: a JVM per crash).
REAL_SHARE = 0.8


class BudgetExceeded(Exception):
    """The hard deadline passed: stop replaying, close the targets, report what was done."""


# Pure data and comparison (tested without a cluster) -------------------------------------------


@dataclass(frozen=True)
class CorpusItem:
    """One choice sequence to replay, where it came from, and the step bound it was made for
    (the example's length is a choice bounded by ``max_steps``)."""

    source: str
    choices: tuple[int, ...]
    max_steps: int


@dataclass(frozen=True)
class StepAnswer:
    """One step of a replay: the model's action, what the request was (model words, without
    entry numbers), and the target's answer (None: nothing on the wire or in ZooKeeper)."""

    index: int
    action: str
    request: str
    answer: str | None
    detail: str | None = None  # the step's own description, for the example column


@dataclass
class Replayed:
    """One sequence replayed on one target. ``stop`` says why it ended before its length
    (a divergence, a violation, an error, an exception), ``end`` is the verdict and the
    final-state differences from the model."""

    steps: list[StepAnswer]
    end: str
    stop: str | None = None
    verdict: str = "undecided"
    seconds: float = 0.0


@dataclass
class Difference:
    configuration: str
    sequence: int
    source: str
    step: int
    action: str
    request: str
    real: str
    reference: str
    detail: str | None = None

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.configuration, self.action, self.request, self.real, self.reference)


@dataclass
class Comparison:
    sequences: int = 0
    steps: int = 0  # steps both sides ran
    answers: int = 0  # of those, steps where at least one side answered, plus run ends
    differences: list[Difference] = field(default_factory=list)

    def add(self, other: Comparison) -> None:
        self.sequences += other.sequences
        self.steps += other.steps
        self.answers += other.answers
        self.differences.extend(other.differences)


_HOST_PORT = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b|\blocalhost:\d+\b")
_LEDGER = re.compile(r"\bledger (?:id )?\d+\b")
_ENTRY_NUMBERS = re.compile(r" e\d+| \(lac=\d+\)")


def normalise_error(message: str) -> str:
    """An error message without what changes from run to run (endpoints, ledger ids), so
    that the same failure on both sides compares equal and groups together."""
    first = message.strip().splitlines()[0] if message.strip() else "(empty)"
    first = _HOST_PORT.sub("HOST:PORT", first)
    first = _LEDGER.sub("ledger N", first)
    return first[:200]


def render_observed(observed: dict[str, Any]) -> str:
    """``kind STATUS field=value ...``: the whole answer, compact and stable."""
    kind = observed.get("kind", "?")
    status = observed.get("status", "?")
    rest = " ".join(f"{k}={observed[k]}" for k in sorted(observed) if k not in ("kind", "status"))
    return f"{kind} {status}" + (f" {rest}" if rest else "")


def request_kind(action: str, request: str | None) -> str:
    """The request in the model's words without entry numbers: ``add``, ``recovery add``,
    ``fence (read LAC)``, ``recovery read``, ``recovery read, fence``; ``metadata`` for a
    compare-and-set; ``-`` for steps that send nothing."""
    if request:
        return _ENTRY_NUMBERS.sub("", request).strip()
    if action in names_with(Effect.METADATA_WRITE):
        return "metadata"
    return "-"


def answers_of(records: Iterable[Any]) -> list[StepAnswer]:
    """The answers of an engine run (``StepRecord``\\ s, or anything with their fields)."""
    answers = []
    for r in records:
        if r.error is not None:
            answer: str | None = "error: " + normalise_error(r.error)
        elif r.observed is not None:
            answer = render_observed(r.observed)
        else:
            answer = None
        answers.append(
            StepAnswer(r.index, r.action, request_kind(r.action, r.request), answer, r.description)
        )
    return answers


def end_of(outcome: Outcome) -> str:
    """The verdict and the final-state differences (the observer's v2 reads, the znode)."""
    final = sorted(d for d in outcome.divergences if d.startswith("final state"))
    return "; ".join([outcome.verdict, *final])


def stop_of(outcome: Outcome) -> str | None:
    if outcome.error:
        return "error: " + normalise_error(outcome.error)
    if outcome.divergences:
        return "divergence from the model"
    if outcome.violations:
        return "violation: " + ", ".join(outcome.violations)
    return None


def compare(
    configuration: str,
    sequence: int,
    source: str,
    real: Replayed,
    reference: Replayed,
) -> Comparison:
    """Step-by-step comparison of one sequence's two replays.

    The model, not the target, chooses each step, so both replays take the same actions
    until one stops; the first step only one side ran is one difference (the stopped side's
    answer is its reason), unless the last common step already differed (that is the cause).
    The ends (verdict, final state) are compared only when both ran the same steps.
    """
    result = Comparison(sequences=1)
    common = min(len(real.steps), len(reference.steps))
    last_differed = False
    for a, b in zip(real.steps[:common], reference.steps[:common], strict=True):
        result.steps += 1
        last_differed = False
        action = a.action if a.action == b.action else f"{a.action} | {b.action}"
        if a.answer is None and b.answer is None and a.action == b.action:
            continue
        result.answers += 1
        if a.answer != b.answer or a.action != b.action:
            last_differed = True
            result.differences.append(
                Difference(
                    configuration,
                    sequence,
                    source,
                    a.index,
                    action,
                    a.request,
                    a.answer or "(no answer)",
                    b.answer or "(no answer)",
                    a.detail,
                )
            )
    if len(real.steps) != len(reference.steps):
        if not last_differed:
            longer = real if len(real.steps) > len(reference.steps) else reference
            step = longer.steps[common]
            stopped_real = len(real.steps) < len(reference.steps)
            why = f"(stopped: {(real if stopped_real else reference).stop or 'ended'})"
            result.answers += 1
            result.differences.append(
                Difference(
                    configuration,
                    sequence,
                    source,
                    step.index,
                    step.action,
                    step.request,
                    why if stopped_real else (step.answer or "(no answer)"),
                    (step.answer or "(no answer)") if stopped_real else why,
                    step.detail,
                )
            )
    else:
        result.answers += 1
        if real.end != reference.end:
            result.differences.append(
                Difference(
                    configuration,
                    sequence,
                    source,
                    common + 1,
                    "(end of run)",
                    "final state",
                    real.end,
                    reference.end,
                )
            )
    return result


@dataclass
class Group:
    configuration: str
    action: str
    request: str
    real: str
    reference: str
    count: int
    example: dict[str, Any]


def group_differences(differences: Sequence[Difference]) -> list[Group]:
    """Differences grouped by (configuration, action, request, real, reference), most frequent
    first, each with its first occurrence as the example."""
    groups: dict[tuple[str, str, str, str, str], Group] = {}
    for d in differences:
        key = d.key()
        if key not in groups:
            example = {
                "sequence": d.sequence,
                "source": d.source,
                "step": d.step,
                "detail": d.detail,
            }
            groups[key] = Group(*key, count=0, example=example)
        groups[key].count += 1
    return sorted(groups.values(), key=lambda g: (g.configuration, -g.count, g.action))


def rank_examples(candidates: Sequence[tuple[Any, bool, int, int]]) -> list[int]:
    """Indices of (signature, crashed, danger, answers) candidates, best first, keeping the
    first of each signature (the steps taken: choice lists differing only in choices the
    example never read are the same story): a crash first (the limbo stories), then the
    number of answers on the wire, then danger."""
    seen: set[Any] = set()
    unique = []
    for i, (signature, *_rest) in enumerate(candidates):
        if signature not in seen:
            seen.add(signature)
            unique.append(i)
    return sorted(
        unique, key=lambda i: (-candidates[i][1], -candidates[i][3], -candidates[i][2], i)
    )


def interleave(
    first: Sequence[CorpusItem], second: Sequence[CorpusItem], n: int
) -> list[CorpusItem]:
    """``n`` items, alternating between the two sources while both last (no duplicates)."""
    out: list[CorpusItem] = []
    seen: set[tuple[int, ...]] = set()
    queues = [list(first), list(second)]
    turn = 0
    while len(out) < n and any(queues):
        queue = queues[turn % 2] or queues[(turn + 1) % 2]
        item = queue.pop(0)
        if item.choices not in seen:
            seen.add(item.choices)
            out.append(item)
        turn += 1
    return out


# Corpus ---------------------------------------------------------------------------------------


def build_corpus(
    name: str,
    *,
    seed: int,
    per_config: int,
    max_steps: int,
    hypothesis_examples: int,
    explorer_rounds: int,
    database: Path | None,
) -> list[CorpusItem]:
    """The configuration's sequences, from the model alone (no cluster)."""
    from hypothesis.database import DirectoryBasedExampleDatabase, choices_from_bytes

    from conformance.distributed.plan import CONFIGURATIONS
    from conformance.search.danger import danger
    from conformance.search.program import ExampleRun, bookies_own_steps_in, encode_trace
    from conformance.search.runner import SearchSettings, database_key, run_search
    from conformance.targets.model_target import ModelTarget
    from model.bookkeeper.explore import simulate_randomly

    cfg = CONFIGURATIONS[name]
    seen: list[tuple[Any, bool, int, int]] = []
    choices_of: list[tuple[int, ...]] = []

    def collect(_phase: str, run: ExampleRun) -> None:
        steps = run.outcome.steps
        crashed = any(s.action == "BookieRestartsEmpty" for s in steps)
        answered = sum(1 for s in steps if s.observed is not None or s.request)
        signature = tuple(s.description for s in steps)
        seen.append((signature, crashed, run.max_danger, answered))
        choices_of.append(tuple(run.choices))

    settings = SearchSettings(
        max_examples=hypothesis_examples,
        max_steps=max_steps,
        seed=seed,
        time_budget=None,
        explore=False,
    )
    run_search(cfg, ModelTarget(cfg), settings, on_example=collect)
    hypothesis = [CorpusItem("hypothesis", choices_of[i], max_steps) for i in rank_examples(seen)]

    explored = simulate_randomly(
        cfg, seed=seed, depth=max_steps, walks=explorer_rounds, strategy="archive"
    )
    explorer: list[CorpusItem] = []
    # As the search's corpus phase: a trace with the bookies' own steps is no example.
    if explored.violation is not None:
        trace = explored.violation.trace
        if len(trace) - 1 <= max_steps and not bookies_own_steps_in(cfg, trace):
            choices = tuple(encode_trace(cfg, trace, max_steps))
            explorer.append(CorpusItem("explorer violation", choices, max_steps))
    archive = [
        t
        for t in explored.archive or []
        if 1 < len(t) <= max_steps + 1 and not bookies_own_steps_in(cfg, t)
    ]
    # The search's own corpus order: the most dangerous corner first, then the deepest.
    archive.sort(key=lambda t: (-max(danger(cfg, s.state) for s in t), -len(t)))
    explorer += [
        CorpusItem("explorer archive", tuple(encode_trace(cfg, t, max_steps)), max_steps)
        for t in archive
    ]
    corpus = interleave(hypothesis, explorer, per_config)

    if database is not None and database.is_dir():
        db = DirectoryBasedExampleDatabase(str(database))
        known = {c.choices for c in corpus}
        for target_name in ("model", "local", "docker", "external"):
            for steps in sorted({max_steps, 60, 80, 100}):
                for blob in db.fetch(database_key(cfg, target_name, steps)):
                    decoded = choices_from_bytes(blob)
                    if decoded is None or not all(isinstance(c, int) for c in decoded):
                        continue
                    choices = tuple(int(c) for c in decoded)
                    if choices not in known:
                        known.add(choices)
                        corpus.append(CorpusItem(f"database ({target_name})", choices, steps))
    return corpus


# Replay on clusters ---------------------------------------------------------------------------


def replay_on(
    name: str,
    kind: str,
    corpus: Sequence[CorpusItem],
    *,
    work_dir: Path,
    deadline: float,
    log: Callable[[str], None],
) -> tuple[list[Replayed], str]:
    """Replay ``corpus`` in order on one LocalTarget of ``kind`` (``real`` or ``reference``)
    until ``deadline`` (monotonic); the target is opened once and closed in a ``finally``.
    Returns the replays done and the system under test."""
    from adapters.installations.system import BookieChoice
    from conformance.distributed.plan import CONFIGURATIONS
    from conformance.search.runner import replay_choices
    from conformance.targets.local_target import LocalTarget

    cfg = CONFIGURATIONS[name]
    bookies = BookieChoice.reference() if kind == "reference" else None
    target_dir = work_dir / f"{name}-{kind}"
    target_dir.mkdir(parents=True, exist_ok=True)
    target = LocalTarget(bookies=bookies, work_dir=target_dir)
    done: list[Replayed] = []
    system = "unknown"
    try:
        system = target.system_under_test().render()
        started = time.monotonic()
        target.open(cfg)
        log(f"  {kind}: cluster up in {time.monotonic() - started:.1f} s ({system})")
        for number, item in enumerate(corpus, 1):
            if time.monotonic() >= deadline:
                log(f"  {kind}: out of time after {len(done)} of {len(corpus)} sequences")
                break
            started = time.monotonic()
            try:
                run = replay_choices(cfg, target, list(item.choices), max_steps=item.max_steps)
            except BudgetExceeded:
                raise
            except Exception as exc:  # a bug or an outage: a difference, not a crash of ours
                why = f"raised {type(exc).__name__}: {normalise_error(str(exc))}"
                done.append(Replayed([], why, why, "raised", time.monotonic() - started))
                log(f"  {kind} #{number}: raised {exc!r}")
                continue
            outcome = run.outcome
            done.append(
                Replayed(
                    answers_of(outcome.steps),
                    end_of(outcome),
                    stop_of(outcome),
                    outcome.verdict,
                    time.monotonic() - started,
                )
            )
            log(
                f"  {kind} #{number} ({item.source}): {outcome.verdict}, "
                f"{len(outcome.steps)} steps, {time.monotonic() - started:.1f} s"
            )
    finally:
        target.close()
    return done, system


# Report ---------------------------------------------------------------------------------------


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Real bookies vs the reference bookie: every answer of the search corpus",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Real: {report['systems'].get('real', 'unknown')}  ",
        f"Reference: {report['systems'].get('reference', 'unknown')}",
        "",
        f"Seed {report['seed']}, up to {report['per_config']} sequences per configuration, "
        f"steps up to {report['max_steps']}; {report['elapsed']:.0f} s"
        + (" (**stopped by the budget: partial**)" if report["partial"] else "")
        + ".",
        "",
        "| configuration | corpus | sequences compared | steps compared | answers compared "
        "| differences | real: verdicts | reference: verdicts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in report["configurations"]:
        lines.append(
            f"| {c['name']} | {c['corpus']} ({_cell(c['sources'])}) | {c['sequences']} "
            f"| {c['steps']} | {c['answers']} | {c['differences']} "
            f"| {_cell(c['verdicts']['real'])} | {_cell(c['verdicts']['reference'])} |"
        )
    t = report["totals"]
    lines += [
        f"| **total** | {t['corpus']} | {t['sequences']} | {t['steps']} | {t['answers']} "
        f"| {t['differences']} | | |",
        "",
    ]
    if report["errors"]:
        lines += ["Errors:", "", *[f"* {_cell(e)}" for e in report["errors"]], ""]
    seen = [c for c in report["configurations"] if c.get("answers_seen")]
    if seen:
        lines += [
            "## Answers seen (on real bookies; request: answer, count)",
            "",
            *[
                f"* {c['name']}: "
                + "; ".join(f"{k} x{v}" for k, v in c["answers_seen"]["real"].items())
                for c in seen
            ],
            "",
        ]
    if not report["groups"]:
        lines.append("No difference: every compared answer was the same on both.")
        return "\n".join(lines) + "\n"
    lines += [
        "## Differences",
        "",
        "| configuration | action | request | real answer | reference answer | count "
        "| example (sequence, source, step) |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in report["groups"]:
        ex = g["example"]
        lines.append(
            f"| {g['configuration']} | {_cell(g['action'])} | {_cell(g['request'])} "
            f"| {_cell(g['real'])} | {_cell(g['reference'])} | {g['count']} "
            f"| #{ex['sequence']} {ex['source']}, step {ex['step']}: {_cell(ex['detail'] or '')} |"
        )
    return "\n".join(lines) + "\n"


def answer_histogram(replays: Sequence[Replayed]) -> dict[str, int]:
    """How often each (request, answer) was seen: what the corpus exercised."""
    counts: dict[str, int] = {}
    for replay in replays:
        for s in replay.steps:
            if s.answer is not None:
                key = f"{s.request}: {s.answer}"
                counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def _verdicts(replays: Sequence[Replayed]) -> str:
    counts: dict[str, int] = {}
    for r in replays:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the Markdown report (.md)")
    parser.add_argument(
        "--configs", nargs="+", default=list(DEFAULT_CONFIGS), help="configuration names"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-config", type=int, default=15, help="sequences per configuration")
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument(
        "--hypothesis-examples", type=int, default=200, help="examples of the model search"
    )
    parser.add_argument("--explorer-rounds", type=int, default=300)
    parser.add_argument(
        "--database", type=Path, default=None, help="a Hypothesis example database to add"
    )
    parser.add_argument("--budget", type=float, default=900.0, help="total seconds")
    parser.add_argument("--work-dir", type=Path, default=None, help="cluster dirs (kept)")
    parser.add_argument("--corpus-only", action="store_true", help="build the corpus, no cluster")
    args = parser.parse_args(argv)

    from conformance.distributed.plan import CONFIGURATIONS

    unknown = [c for c in args.configs if c not in CONFIGURATIONS]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGURATIONS)}")
    if args.budget <= RESERVE:
        parser.error(f"--budget must be more than {RESERVE:g} s")

    started = time.monotonic()
    soft_deadline = started + args.budget - RESERVE

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    def on_alarm(_signum: int, _frame: FrameType | None) -> None:
        raise BudgetExceeded(f"--budget {args.budget:g} s exceeded")

    def on_term(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)  # unwinds through the targets' finally blocks

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(args.budget - RESERVE / 3)))

    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="compare-bookies-"))
    per_config: list[dict[str, Any]] = []
    totals = Comparison()
    systems: dict[str, str] = {}
    errors: list[str] = []
    partial = False
    total_corpus = 0
    try:
        for position, name in enumerate(args.configs):
            corpus = build_corpus(
                name,
                seed=args.seed,
                per_config=args.per_config,
                max_steps=args.max_steps,
                hypothesis_examples=args.hypothesis_examples,
                explorer_rounds=args.explorer_rounds,
                database=args.database,
            )
            total_corpus += len(corpus)
            sources: dict[str, int] = {}
            for item in corpus:
                sources[item.source] = sources.get(item.source, 0) + 1
            log(f"{name}: {len(corpus)} sequences ({sources})")
            entry: dict[str, Any] = {
                "name": name,
                "corpus": len(corpus),
                "sources": ", ".join(f"{k} {v}" for k, v in sources.items()),
                "blobs": [
                    {"source": c.source, "max_steps": c.max_steps, "blob": _blob(c.choices)}
                    for c in corpus
                ],
                "sequences": 0,
                "steps": 0,
                "answers": 0,
                "differences": 0,
                "verdicts": {"real": "-", "reference": "-"},
            }
            per_config.append(entry)
            if args.corpus_only:
                continue
            now = time.monotonic()
            share = max(0.0, soft_deadline - now) / (len(args.configs) - position)
            real: list[Replayed] = []
            reference: list[Replayed] = []
            try:
                real, systems["real"] = replay_on(
                    name,
                    "real",
                    corpus,
                    work_dir=work_dir,
                    deadline=now + share * REAL_SHARE,
                    log=log,
                )
                reference, systems["reference"] = replay_on(
                    name,
                    "reference",
                    corpus[: len(real)],
                    work_dir=work_dir,
                    deadline=max(now + share, time.monotonic() + 30.0),
                    log=log,
                )
            except BudgetExceeded as exc:
                partial = True
                errors.append(f"{name}: {exc}")
            except Exception as exc:  # a target that does not open: say so, go on
                errors.append(f"{name}: {type(exc).__name__}: {normalise_error(str(exc))}")
                log(traceback.format_exc())
            result = Comparison()
            for number, (a, b) in enumerate(zip(real, reference, strict=False), 1):
                result.add(compare(name, number, corpus[number - 1].source, a, b))
            totals.add(result)
            entry.update(
                sequences=result.sequences,
                steps=result.steps,
                answers=result.answers,
                differences=len(result.differences),
                verdicts={"real": _verdicts(real), "reference": _verdicts(reference)},
                answers_seen={
                    "real": answer_histogram(real),
                    "reference": answer_histogram(reference),
                },
                seconds={
                    "real": round(sum(r.seconds for r in real), 1),
                    "reference": round(sum(r.seconds for r in reference), 1),
                },
            )
            if len(real) < len(corpus) or len(reference) < len(real):
                partial = True
            log(
                f"{name}: {result.sequences} sequences, {result.steps} steps, "
                f"{result.answers} answers compared, {len(result.differences)} differences"
            )
            if partial and time.monotonic() >= soft_deadline:
                errors.append("the budget ran out: later configurations were not replayed")
                break
    except BudgetExceeded as exc:
        partial = True
        errors.append(str(exc))
    finally:
        signal.alarm(0)

    groups = group_differences(totals.differences)
    report: dict[str, Any] = {
        "command": " ".join(["tools/compare_bookies.py", *(argv or sys.argv[1:])]),
        "seed": args.seed,
        "per_config": args.per_config,
        "max_steps": args.max_steps,
        "elapsed": time.monotonic() - started,
        "partial": partial,
        "work_dir": str(work_dir),
        "systems": systems,
        "configurations": per_config,
        "totals": {
            "corpus": total_corpus,
            "sequences": totals.sequences,
            "steps": totals.steps,
            "answers": totals.answers,
            "differences": len(totals.differences),
        },
        "groups": [asdict(g) for g in groups],
        "differences": [asdict(d) for d in totals.differences],
        "errors": errors,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_markdown(report))
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    if args.corpus_only:
        return 0
    if totals.sequences == 0:
        return 2
    return 1 if totals.differences else 0


def _blob(choices: Sequence[int]) -> str:
    from conformance.search.choices import to_blob

    return to_blob(list(choices))


if __name__ == "__main__":
    sys.exit(main())

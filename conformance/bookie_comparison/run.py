"""The whole comparison of real and reference bookies: for each configuration its corpus, replayed
on real bookies and then on reference bookies, every answer compared; the Markdown report and
the same data as JSON; the exit code.

Every process started is stopped on every way out (a ``finally`` per target; SIGTERM and
SIGINT unwind through it; the cluster's own supervision stops children at exit); the total
time is bounded by the budget (a soft deadline between sequences, and an alarm after it).
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from conformance.bookie_comparison.answers import Replayed, normalise_error
from conformance.bookie_comparison.corpus import build_corpus
from conformance.bookie_comparison.differences import Comparison, compare, group_differences
from conformance.bookie_comparison.replay import BudgetExceeded, replay_on
from conformance.bookie_comparison.report import answer_histogram, render_markdown, verdict_counts
from conformance.search.choices import to_blob

DEFAULT_CONFIGS = ("fenced-recovery", "fragment-recovery", "limbo-crash", "no-limbo")
#: Seconds kept back from the budget for stopping clusters and writing the report.
RESERVE = 45.0
#: Share of a configuration's time for the real bookies (slower: a JVM per crash).
REAL_SHARE = 0.8


@dataclass(frozen=True)
class ComparisonSettings:
    """What to compare: the report's path (``out``, Markdown; the JSON goes next to it), the
    configurations (``conformance.distributed.plan.CONFIGURATIONS`` names), the corpus (seed,
    sequences per configuration, step bound, the model search's examples, the explorer's
    rounds, a Hypothesis example database to add), the total ``budget`` in seconds (more than
    :data:`RESERVE`), where the clusters' directories go (kept; default a new temporary one),
    and whether to build the corpus only (no cluster)."""

    out: Path
    configs: Sequence[str]
    seed: int
    per_config: int
    max_steps: int
    hypothesis_examples: int
    explorer_rounds: int
    database: Path | None
    budget: float
    work_dir: Path | None
    corpus_only: bool


def run_comparison(settings: ComparisonSettings, command: str) -> int:
    """Compare, write the report (``command``: how it was run, for the report's first line),
    and return the exit code: 0 when no difference was found (or only the corpus was built),
    1 when some were, 2 when nothing could be compared."""
    started = time.monotonic()
    soft_deadline = started + settings.budget - RESERVE

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f}s] {message}", file=sys.stderr, flush=True)

    def on_alarm(_signum: int, _frame: FrameType | None) -> None:
        raise BudgetExceeded(f"--budget {settings.budget:g} s exceeded")

    def on_term(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)  # unwinds through the targets' finally blocks

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(max(1, int(settings.budget - RESERVE / 3)))

    work_dir = settings.work_dir or Path(tempfile.mkdtemp(prefix="compare-bookies-"))
    per_config: list[dict[str, Any]] = []
    totals = Comparison()
    systems: dict[str, str] = {}
    errors: list[str] = []
    partial = False
    total_corpus = 0
    try:
        for position, name in enumerate(settings.configs):
            corpus = build_corpus(
                name,
                seed=settings.seed,
                per_config=settings.per_config,
                max_steps=settings.max_steps,
                hypothesis_examples=settings.hypothesis_examples,
                explorer_rounds=settings.explorer_rounds,
                database=settings.database,
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
                    {"source": c.source, "max_steps": c.max_steps, "blob": to_blob(list(c.choices))}
                    for c in corpus
                ],
                "sequences": 0,
                "steps": 0,
                "answers": 0,
                "differences": 0,
                "verdicts": {"real": "-", "reference": "-"},
            }
            per_config.append(entry)
            if settings.corpus_only:
                continue
            now = time.monotonic()
            share = max(0.0, soft_deadline - now) / (len(settings.configs) - position)
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
                verdicts={"real": verdict_counts(real), "reference": verdict_counts(reference)},
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
        "command": command,
        "seed": settings.seed,
        "per_config": settings.per_config,
        "max_steps": settings.max_steps,
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
    settings.out.parent.mkdir(parents=True, exist_ok=True)
    settings.out.write_text(render_markdown(report))
    settings.out.with_suffix(".json").write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {settings.out} and {settings.out.with_suffix('.json')}")
    if settings.corpus_only:
        return 0
    if totals.sequences == 0:
        return 2
    return 1 if totals.differences else 0


__all__ = ["DEFAULT_CONFIGS", "REAL_SHARE", "RESERVE", "ComparisonSettings", "run_comparison"]

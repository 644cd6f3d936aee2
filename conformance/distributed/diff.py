"""The observed-vs-model diff and the qualification's aggregates, in plain Python.

The same aggregates are computed as Spark jobs by ``conformance.distributed.spark_job`` (on a
Spark master) and here (``--master none``, and as the recount the tests compare Spark with).

A step is *compared* when it has both a prediction and an observation, and *divergent* when
they differ in a field the model decides (``kind``, ``success``, ``code``, ``lac``, ``data``,
and for metadata writes ``status``); elsewhere ``status`` is the wire's own word and is not
compared (the engine's rule, ``conformance.observations.differences``; the tests check that
both agree on the same rows).

Rows come in typed (``conformance.distributed.schema``); a verdict counted here is read with
``Verdict.named``, so a row read from an old run (whose error shards said ``error``) counts as
undecided.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from conformance.distributed.schema import RowStatus
from conformance.observations import COMPARED_FIELDS, compared_fields
from conformance.verdict import Verdict, worst

#: The engine's rule, shared (``conformance.observations``): the fields compared on every
#: answer, and the kinds whose ``status`` is compared too.
OBSERVATION_FIELDS = COMPARED_FIELDS
Aggregates = dict[str, Any]


def is_divergent(predicted: str | None, observed: str | None) -> bool:
    if predicted is None or observed is None:
        return False
    want, got = json.loads(predicted), json.loads(observed)
    names = compared_fields(want.get("kind"), got.get("kind"))
    unseen = set(got.get("unobserved", ()))
    return any(want.get(name) != got.get(name) for name in names if name not in unseen)


def configuration_verdict(verdicts: Iterable[str | Verdict]) -> Verdict:
    """The worst verdict of a configuration's shards, by the one precedence rule
    (``conformance.verdict``): a shard in error or undecided makes a clean configuration
    undecided; no shard at all decided nothing."""
    return worst(verdicts)


def aggregate(
    steps: Iterable[Mapping[str, Any]],
    shards: Iterable[Mapping[str, Any]],
    findings: Iterable[Mapping[str, Any]],
) -> Aggregates:
    by_action: dict[str, Counter[str]] = defaultdict(Counter)
    by_target: dict[str, Counter[str]] = defaultdict(Counter)
    by_config_steps: dict[str, Counter[str]] = defaultdict(Counter)
    responses: Counter[tuple[str, str]] = Counter()
    for row in steps:
        compared = row["predicted"] is not None and row["observed"] is not None
        divergent = is_divergent(row["predicted"], row["observed"])
        counts = {
            "steps": 1,
            "compared": int(compared),
            "divergences": int(divergent),
            "violations": int(bool(row["violations"])),
            "errors": int(row["error"] is not None),
        }
        by_action[row["action"]].update(counts)
        by_target[row["target"]].update(counts)
        by_config_steps[row["configuration"]].update(counts)
        if row["response"] is not None:
            responses[(row["action"], row["response"])] += 1
    configs: dict[str, dict[str, Any]] = {}
    target_shards: Counter[str] = Counter()
    for row in shards:
        target_shards[row["target"]] += 1
        entry = configs.setdefault(
            row["configuration"],
            {
                "configuration": row["configuration"],
                "config_summary": row["config_summary"],
                "shards": 0,
                "errors": 0,
                "findings": 0,
                "verdicts": Counter(),
            },
        )
        entry["shards"] += 1
        entry["errors"] += int(RowStatus.named(row["status"]) is RowStatus.ERROR)
        entry["findings"] += row["findings"]
        entry["verdicts"][Verdict.named(row["verdict"])] += 1
    by_configuration = []
    for name in sorted(configs):
        entry = configs[name]
        verdicts: Counter[Verdict] = entry.pop("verdicts")
        counted = by_config_steps.get(name, Counter())
        by_configuration.append(
            {
                **entry,
                "verdict": configuration_verdict(verdicts),
                "verdicts": dict(sorted(verdicts.items())),
                "steps": counted["steps"],
                "divergences": counted["divergences"],
            }
        )
    return {
        "by_action": [_counts({"action": a}, by_action[a]) for a in sorted(by_action)],
        "by_configuration": by_configuration,
        "by_target": [
            {**_counts({"target": t}, by_target.get(t, Counter())), "shards": target_shards[t]}
            for t in sorted(set(by_target) | set(target_shards))
        ],
        "responses": [
            {"action": a, "response": r, "count": n} for (a, r), n in sorted(responses.items())
        ],
        "findings": unique_findings(findings),
    }


def _counts(key: dict[str, Any], counts: Counter[str]) -> dict[str, Any]:
    return {
        **key,
        **{k: counts[k] for k in ("steps", "compared", "divergences", "violations", "errors")},
    }


def unique_findings(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Findings de-duplicated by their shrunk trace: one entry per trace, with every shard and
    configuration that found it; the entry's details are those of the lowest shard."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in findings:
        groups[row["trace_key"]].append(row)
    unique = []
    for key, rows in groups.items():
        first = min(rows, key=lambda r: r["shard"])
        unique.append(
            {
                **first,
                "occurrences": len(rows),
                "shards": sorted(r["shard"] for r in rows),
                "configurations": sorted({r["configuration"] for r in rows}),
                "trace_key": key,
            }
        )
    return sorted(unique, key=lambda f: (f["shard"], f["trace_key"]))

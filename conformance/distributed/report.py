"""``report.html`` and ``report.json``: the qualification report, one self-contained page (it
opens offline) and the same content as data.

The report's content is one typed value, :class:`ReportData`, made from the shard rows and the
aggregates by :func:`report_data`: the verdict per configuration, the de-duplicated findings with
their sequence diagrams (inline SVG), the shards in error with their logs, coverage (how often
each model action and each response kind was exercised), per target counts, the steps and
restarts per configuration, every shard and the versions. ``report.json`` is that value as JSON
(:meth:`ReportData.to_json`; :meth:`ReportData.from_json` reads it back); ``report.html`` is its
rendering by the Jinja2 template ``templates/report.html.j2`` (autoescaped: the findings' SVG,
drawn by ``model.bookkeeper.svg``, is the one piece of markup a row carries into the page), with
the steps/s and time-to-first-finding plots drawn from the same data (matplotlib, embedded as
PNG data).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import io
import json
import types
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints

from jinja2 import Environment, PackageLoader, StrictUndefined

from adapters.installations.system import SystemUnderTest
from conformance.distributed.diff import Aggregates
from conformance.distributed.plan import Plan
from conformance.distributed.schema import RowStatus
from conformance.verdict import Verdict, worst
from model.bookkeeper.action_table import ALL_ACTIONS

REPORT_HTML = "report.html"
REPORT_JSON = "report.json"
TEMPLATE = "report.html.j2"


@dataclass(frozen=True)
class Budget:
    """Each shard's budget, as planned."""

    max_examples: int
    max_steps: int
    time_budget: float | None
    explore: bool
    #: The explorer's corpus follows the generated examples while time is left
    #: (``SearchSettings.corpus_until_time_is_up`` on the plan's target).
    corpus_until_time_is_up: bool
    #: The configurations whose shards get another time than ``time_budget``, in words
    #: (``Plan.describe_time_shares``; "" when none does).
    time_shares: str = ""


@dataclass(frozen=True)
class ConfigurationVerdict:
    """A configuration's verdict (the worst of its shards') and its counts."""

    configuration: str
    config_summary: str
    verdict: Verdict
    shards: int
    errors: int
    findings: int
    steps: int
    divergences: int
    verdicts: dict[Verdict, int]  # shards per verdict


@dataclass(frozen=True)
class FindingEntry:
    """A finding de-duplicated by its shrunk trace, with the lowest shard's details."""

    verdict: Verdict
    configuration: str
    shard: int
    violations: list[str]
    divergences: list[str]
    found_by: str
    found_after: float
    found_steps: int
    shrunk_steps: int
    occurrences: int
    shards: list[int]
    configurations: list[str]
    trace_key: str
    blob: str
    sequence_svg: str  # the diagram (model.bookkeeper.svg): inserted into the page as SVG
    trace_text: str
    sequence_text: str


@dataclass(frozen=True)
class ShardErrorEntry:
    """A shard recorded in error: its last error and its log."""

    shard: int
    configuration: str
    attempts: int
    error: str | None
    log: str


@dataclass(frozen=True)
class ActionCoverage:
    """How often a model action ran on the target (every action, exercised or not)."""

    action: str
    steps: int
    compared: int
    divergences: int
    violations: int
    errors: int


@dataclass(frozen=True)
class ResponseCount:
    response: str
    count: int


@dataclass(frozen=True)
class ActionResponses:
    """The observed statuses of one action's steps."""

    action: str
    responses: list[ResponseCount]


@dataclass(frozen=True)
class TargetCounts:
    target: str
    shards: int
    steps: int
    compared: int
    divergences: int


@dataclass(frozen=True)
class ConfigurationEffort:
    """One configuration's search depth and crash cost, over its shards."""

    configuration: str
    shards: int
    steps_per_shard: float  # mean steps on the target
    share_of_most: float  # steps_per_shard over the largest of any configuration
    restarts: int | None  # None: not recorded (a run written before restarts were)
    mean_restart: float | None  # seconds per restart
    restart_share: float | None  # restart seconds over search seconds
    #: What the bookies did on their own over the shards (summed), None: no such actor.
    bookies_own: dict[str, int] | None = None


def configuration_efforts(shards: Iterable[Mapping[str, Any]]) -> list[ConfigurationEffort]:
    """Per configuration: mean target steps per shard (and as a share of the deepest
    configuration's), restarts and their mean duration and share of the search time."""
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in shards:
        grouped[row["configuration"]].append(row)
    means = {name: sum(r["steps"] for r in rows) / len(rows) for name, rows in grouped.items()}
    most = max(means.values(), default=0.0)
    efforts = []
    for name in sorted(grouped):
        rows = grouped[name]
        recorded = [r for r in rows if r.get("restarts") is not None]
        restarts = sum(r["restarts"] for r in recorded) if recorded else None
        seconds = sum(r.get("restart_seconds") or 0.0 for r in recorded)
        searched = sum(r["elapsed"] for r in recorded)
        efforts.append(
            ConfigurationEffort(
                configuration=name,
                shards=len(rows),
                steps_per_shard=means[name],
                share_of_most=means[name] / most if most else 0.0,
                restarts=restarts,
                mean_restart=seconds / restarts if restarts else None,
                restart_share=seconds / searched if restarts and searched else None,
                bookies_own=_bookies_own(rows),
            )
        )
    return efforts


def _bookies_own(rows: list[Mapping[str, Any]]) -> dict[str, int] | None:
    """The shards' ``bookies_own`` tallies, summed (None: no shard has that actor)."""
    tallies = [json.loads(r["bookies_own"]) for r in rows if r.get("bookies_own")]
    if not tallies:
        return None
    summed: dict[str, int] = defaultdict(int)
    for tally in tallies:
        for key, value in tally.items():
            summed[key] += value
    return dict(summed)


@dataclass(frozen=True)
class StorageCell:
    """One configuration on one ledger storage: the worst verdict of its shards (a cell with
    no shard says why in ``not_applicable``)."""

    configuration: str
    ledger_storage: str
    verdict: Verdict | None
    shards: int
    errors: int
    findings: int
    steps_per_shard: float
    not_applicable: str | None = None


def storage_cells(
    shards: Iterable[Mapping[str, Any]],
    *,
    storages: Sequence[str] = (),
    configurations: Sequence[str] = (),
    not_applicable: Mapping[tuple[str, str], str] | None = None,
) -> list[StorageCell]:
    """Per (configuration, ledger storage): the worst verdict of its shards, their findings
    and steps; a planned cell without shards, with why (``not_applicable``). Empty when no
    shard recorded a storage (the model, an external cluster, a run of before)."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in shards:
        storage = row.get("ledger_storage")
        if storage:
            grouped[(row["configuration"], str(storage))].append(row)
    if not grouped and not not_applicable:
        return []
    names = list(configurations) or sorted({c for c, _ in grouped})
    order = list(storages) or sorted({x for _, x in grouped})
    cells = []
    for configuration in names:
        for storage in order:
            rows = grouped.get((configuration, storage), [])
            why = (not_applicable or {}).get((configuration, storage))
            if not rows and why is None:
                continue
            cells.append(
                StorageCell(
                    configuration=configuration,
                    ledger_storage=storage,
                    verdict=worst(r["verdict"] for r in rows) if rows else None,
                    shards=len(rows),
                    errors=sum(1 for r in rows if r["status"] is RowStatus.ERROR),
                    findings=sum(int(r["findings"]) for r in rows),
                    steps_per_shard=sum(r["steps"] for r in rows) / len(rows) if rows else 0.0,
                    not_applicable=why if not rows else None,
                )
            )
    return cells


@dataclass(frozen=True)
class ShardSummary:
    """A shard's line in the report (and what its plots are drawn from)."""

    shard: int
    configuration: str
    seed: int
    status: RowStatus
    verdict: Verdict
    examples: int
    steps: int
    steps_per_second: float
    elapsed: float
    wall: float
    attempts: int
    worker: str
    time_to_first_finding: float | None
    #: The bookies' ledger storage (None: not recorded, or no bookies the suite configures).
    ledger_storage: str | None = None


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows: ``report.json``, and what ``report.html`` renders."""

    verdict: Verdict
    target: str
    master: str
    master_seed: int
    planned_shards: int
    budget: Budget
    elapsed: float  # running the shards, s
    systems: list[SystemUnderTest]
    configurations: list[ConfigurationVerdict]
    findings: list[FindingEntry]
    errors: list[ShardErrorEntry]
    actions: list[ActionCoverage]
    responses: list[ActionResponses]
    targets: list[TargetCounts]
    efforts: list[ConfigurationEffort]
    shards: list[ShardSummary]
    versions: dict[str, Any]
    #: Per configuration and ledger storage (empty: no shard recorded a storage).
    storages: list[StorageCell] = dataclasses.field(default_factory=list)

    @property
    def done(self) -> int:
        return sum(1 for shard in self.shards if shard.status is RowStatus.DONE)

    def to_json(self) -> str:
        return json.dumps(_plain(asdict(self)), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ReportData:
        data: ReportData = _decode(cls, json.loads(text))
        return data


def _plain(value: Any) -> Any:
    """``asdict``'s output as JSON's types: every enum as its word, dictionary keys too."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _decode(kind: Any, value: Any) -> Any:
    """``value`` read from JSON as the annotated type ``kind`` (the report's dataclasses, their
    lists, dictionaries, enums and optional fields)."""
    origin = get_origin(kind)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        (inner,) = [arg for arg in get_args(kind) if arg is not type(None)]
        return _decode(inner, value)
    if origin is list:
        (item,) = get_args(kind)
        return [_decode(item, element) for element in value]
    if origin is dict:
        key_type, item_type = get_args(kind)
        return {_decode(key_type, k): _decode(item_type, v) for k, v in value.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = get_type_hints(kind)
        # A field added since the report was written keeps its default.
        return kind(
            **{
                f.name: _decode(hints[f.name], value[f.name])
                for f in dataclasses.fields(kind)
                if f.name in value or f.default is dataclasses.MISSING
            }
        )
    if isinstance(kind, type) and issubclass(kind, Enum):
        return kind(value)
    if kind is float and isinstance(value, int):
        return float(value)
    return value


def report_data(
    *,
    plan: Plan,
    master: str,
    verdict: Verdict,
    aggregates: Aggregates,
    shards: Sequence[Mapping[str, Any]],
    elapsed: float,
) -> ReportData:
    """The report's content, from the plan, the aggregates and the shards' typed rows."""
    budget = plan.budget
    by_action = {r["action"]: r for r in aggregates["by_action"]}
    grouped: dict[str, list[ResponseCount]] = defaultdict(list)
    for r in aggregates["responses"]:
        grouped[r["action"]].append(ResponseCount(r["response"], int(r["count"])))
    ordered = sorted(shards, key=lambda r: int(r["shard"]))
    return ReportData(
        verdict=verdict,
        target=plan.target,
        master=master,
        master_seed=plan.master_seed,
        planned_shards=len(plan.shards),
        budget=Budget(
            budget.max_examples,
            budget.max_steps,
            budget.time_budget,
            budget.explore,
            budget.corpus_until_time_is_up(plan.target),
            plan.describe_time_shares(),
        ),
        elapsed=elapsed,
        systems=shard_systems(ordered),
        configurations=[
            ConfigurationVerdict(
                configuration=r["configuration"],
                config_summary=r["config_summary"],
                verdict=r["verdict"],
                shards=int(r["shards"]),
                errors=int(r["errors"]),
                findings=int(r["findings"]),
                steps=int(r["steps"]),
                divergences=int(r["divergences"]),
                verdicts=dict(r["verdicts"]),
            )
            for r in aggregates["by_configuration"]
        ],
        findings=[
            FindingEntry(**{f.name: finding[f.name] for f in dataclasses.fields(FindingEntry)})
            for finding in aggregates["findings"]
        ],
        errors=[
            ShardErrorEntry(r["shard"], r["configuration"], r["attempts"], r["error"], r["log"])
            for r in ordered
            if r["status"] is RowStatus.ERROR
        ],
        actions=[
            ActionCoverage(
                action,
                *(
                    int(by_action.get(action, {}).get(k, 0))
                    for k in ("steps", "compared", "divergences", "violations", "errors")
                ),
            )
            for action in sorted(set(ALL_ACTIONS) | set(by_action))
        ],
        responses=[ActionResponses(a, v) for a, v in sorted(grouped.items())],
        targets=[
            TargetCounts(r["target"], int(r["shards"]), r["steps"], r["compared"], r["divergences"])
            for r in aggregates["by_target"]
        ],
        efforts=configuration_efforts(ordered),
        shards=[
            ShardSummary(
                **{f.name: r[f.name] for f in dataclasses.fields(ShardSummary) if f.name in r},
            )
            for r in ordered
        ],
        versions=json.loads(ordered[0]["versions"]) if ordered else {},
        storages=storage_cells(
            ordered,
            storages=plan.ledger_storages,
            configurations=plan.configurations,
            not_applicable=plan.not_applicable(),
        ),
    )


def plot_images(shards: Sequence[ShardSummary]) -> list[str]:
    """Steps/s per shard, and time to first finding per configuration: PNG, base64."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    configurations = sorted({row.configuration for row in shards})
    colours = {c: f"C{i % 10}" for i, c in enumerate(configurations)}
    images = []
    figure, axes = pyplot.subplots(figsize=(9, 3.2))
    try:
        for name in configurations:
            mine = [r for r in shards if r.configuration == name]
            axes.bar(
                [r.shard for r in mine],
                [r.steps_per_second for r in mine],
                color=colours[name],
                label=name,
            )
        axes.set_xlabel("shard")
        axes.set_ylabel("steps/s")
        axes.set_title("Steps on the target per second, per shard")
        if configurations:
            axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        images.append(_png(figure))
    finally:
        pyplot.close(figure)
    figure, axes = pyplot.subplots(figsize=(9, 3.2))
    try:
        found_any = False
        labels = []
        for index, name in enumerate(configurations):
            mine = [r for r in shards if r.configuration == name]
            times = [r.time_to_first_finding for r in mine if r.time_to_first_finding]
            if times:
                found_any = True
                axes.scatter(times, [index] * len(times), color=colours[name], zorder=3)
            labels.append(f"{name}\n({len(times)}/{len(mine)} shards found)")
        axes.set_yticks(range(len(configurations)), labels)
        axes.set_ylim(-0.7, max(len(configurations) - 0.3, 0.5))
        axes.set_xlim(left=0)
        axes.set_xlabel("seconds from the shard's start to its first finding")
        axes.set_title("Time to first finding" + ("" if found_any else " (no finding)"))
        axes.grid(axis="x", alpha=0.3)
        images.append(_png(figure))
    finally:
        pyplot.close(figure)
    return images


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


@functools.cache
def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("conformance.distributed", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    environment.filters["fmt"] = format
    environment.filters["pretty_json"] = lambda value: json.dumps(value, indent=2)
    return environment


def render_report(data: ReportData) -> str:
    """``report.html``: the template over the report's data, with its plots."""
    template = _environment().get_template(TEMPLATE)
    return template.render(data=data, plots=plot_images(data.shards))


def shard_systems(shards: Iterable[Mapping[str, Any]]) -> list[SystemUnderTest]:
    """The distinct systems the shards ran against, in shard order (one, unless the run was
    resumed on another installation)."""
    found: list[SystemUnderTest] = []
    for row in sorted(shards, key=lambda r: r["shard"]):
        system = SystemUnderTest.from_dict(row)
        if system not in found:
            found.append(system)
    return found


def write_report(run_dir: Path, data: ReportData) -> Path:
    """Write ``report.html`` and, next to it, ``report.json`` (the same data); the page's path."""
    page = run_dir / REPORT_HTML
    page.write_text(render_report(data))
    (run_dir / REPORT_JSON).write_text(data.to_json())
    return page

"""The Java-client version matrix: the same search against each BookKeeper release, on each
ZooKeeper release.

``bkconform qualify --client java --bookkeeper 4.11.1,4.17.3`` plans one shard per (release,
client role, configuration, seed), per ZooKeeper release with ``--zookeeper 3.8.4,3.9.3``, and
per ledger storage of the bookies with ``--ledger-storage sorted,db`` (on the settings profile
``--settings-profile`` names):
each shard installs nothing itself (the releases are installed once, by the command), starts
its own local cluster of that release (on that ZooKeeper) with a proxy per bookie and that
release's Java client (:class:`~conformance.javaclient.scenario.RecoverySession`), and runs
``bkconform run --client java``'s search with the shard's seed and time budget. Shards run on
Spark (one task each; ``local[N]`` here) or in this process (``--master none``). The matrix,
(release, ZooKeeper, ledger storage) x (configuration, role), is computed from the shards' rows
(on Spark when it ran them) with the one precedence rule: a cell's verdict is the worst of its
shards' (:func:`conformance.verdict.worst`). A cell whose verdict is worse than the same cell of
the release before it (on the same ZooKeeper and storage) is a **regression**; better, a
**fix**; the same against the ZooKeeper release before it (on the same BookKeeper and storage)
is its ``zookeeper_change``.

With ``--client-bookkeeper 4.17.3,4.18.0`` the Java client's release is a dimension of its own:
each bookies' release with each client release (a row per pair, the client named in it;
without it each release runs its own client). A ``change`` then compares the same client on
the bookies' release before.

Each shard writes ``shards/<n>/`` (the search's examples, the finding's plan, record and frames)
and its row to ``java_shards.jsonl``; the command writes ``matrix.json``, ``results.json`` and
``report.html``. A row's ``verdict`` is a :class:`~conformance.verdict.Verdict` and its
``status`` a :class:`~conformance.distributed.schema.RowStatus` (``done``, or ``error`` with the
error in ``error`` and the verdict undecided), as in the qualification's shard rows; they are
words in ``java_shards.jsonl`` (the schema's ``to_storage``/``from_storage``).
"""

from __future__ import annotations

import html
import json
import time
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from adapters.cluster.bookie_profiles import DEFAULT_PROFILE, profile_named, storage_named
from adapters.cluster.bookies import BookieSettings
from adapters.installations.maven import version_key
from adapters.javaclient import BookKeeperVersion
from conformance.distributed.schema import RowStatus, from_storage, to_storage
from conformance.errors import ConformanceError
from conformance.javaclient.plans import PlanError
from conformance.javaclient.roles import DEFAULT_ROLE, role_class, role_from_settings
from conformance.javaclient.writer_plans import DEFAULT_SHAPES, WriterShape
from conformance.verdict import SEVERITY, Verdict, worst

#: The roles a matrix runs when none are named.
DEFAULT_ROLES: tuple[str, ...] = (DEFAULT_ROLE,)
SHARDS_FILE = "java_shards.jsonl"
MATRIX_FILE = "matrix.json"


class MatrixError(ConformanceError, ValueError):
    """A matrix plan that cannot run (no release, a bad budget)."""


@dataclass(frozen=True)
class JavaShard:
    index: int
    #: BookKeeper release (bookies and Java client) and where it is installed.
    version: str
    home: str
    role: str
    configuration: str
    seed: int
    seconds: float
    max_examples: int
    #: The cluster's ZooKeeper, a directory (None: ZOOKEEPER_HOME, else the default release),
    #: and its version ("": not known when planned).
    zookeeper: str | None = None
    zookeeper_version: str = ""
    #: The bookies' ledger storage (``sorted``, ``db``; "": the settings profile's) and
    #: their settings profile ("": the suite's).
    ledger_storage: str = ""
    settings_profile: str = ""
    #: The Java client's own release and distribution, apart from the bookies'
    #: (``--client-bookkeeper``; "" and None: the bookies' release, ``version``).
    client_version: str = ""
    client_home: str | None = None
    #: What builds the shard's role (:meth:`Role.settings`' terms: the writer's ledger
    #: shape...), as the role's column gave it.
    role_settings: Mapping[str, Any] = field(default_factory=dict)

    def cell(self) -> tuple[str, str, str, str, str, str]:
        return (
            self.version,
            self.client_version,
            self.zookeeper_version,
            self.ledger_storage,
            self.configuration,
            self.role,
        )

    def bookie_settings(self) -> BookieSettings:
        """The bookies' settings this shard runs."""
        profile = profile_named(self.settings_profile or DEFAULT_PROFILE)
        storage = storage_named(self.ledger_storage) if self.ledger_storage else None
        settings = BookieSettings(ledger_storage=storage or profile.ledger_storage, profile=profile)
        return settings.with_standby_restarts()


@dataclass(frozen=True)
class Column:
    """A column of the matrix: a role in one configuration, as the role's class names it, and
    the settings that build the role for it."""

    role: str
    configuration: str
    settings: Mapping[str, Any]

    def refusal(self, client: str) -> str | None:
        """Why the Java client of release ``client`` cannot play this column's role (None: it
        can): the role's own word."""
        return role_from_settings(self.settings).refusal(BookKeeperVersion.parse(client))


def columns(roles: Sequence[str], writer_shapes: Sequence[WriterShape]) -> list[Column]:
    """The columns of ``roles``, each role's own (a writer's: one per ledger shape)."""
    found: list[Column] = []
    for role in roles:
        try:
            named = role_class(role).matrix_columns(writer_shapes)
        except PlanError as exc:
            raise MatrixError(str(exc)) from exc
        found += [
            Column(role, configuration, settings) for configuration, settings in named.items()
        ]
    return found


def not_applicable(
    releases: Mapping[str, Path],
    *,
    roles: Sequence[str] = DEFAULT_ROLES,
    writer_shapes: Sequence[WriterShape] = DEFAULT_SHAPES,
    clients: Mapping[str, Path] | None = None,
) -> dict[tuple[str, str, str], str]:
    """(release, configuration, role) -> why it has no shard: a role the client (the
    release's own, or with ``clients`` each of them) cannot play, in the role's words (a
    writer's client that cannot be routed through the proxies)."""
    out = {}
    for version in releases:
        for column in columns(roles, writer_shapes):
            refused = {
                client: why
                for client in (clients or {version: Path()})
                if (why := column.refusal(client)) is not None
            }
            if refused:
                of = f" (client {', '.join(refused)})" if clients else ""
                first = next(iter(refused.values()))
                out[(version, column.configuration, column.role)] = f"not applicable{of}: {first}"
    return out


def plan_matrix(
    releases: Mapping[str, Path],
    *,
    seeds_per_release: int,
    seed: int,
    seconds: float,
    max_examples: int = 10_000,
    roles: Sequence[str] = DEFAULT_ROLES,
    writer_shapes: Sequence[WriterShape] = DEFAULT_SHAPES,
    zookeepers: Mapping[str, Path] | None = None,
    ledger_storages: Sequence[str] = (),
    settings_profile: str = "",
    clients: Mapping[str, Path] | None = None,
) -> list[JavaShard]:
    """One shard per release x ZooKeeper release x ledger storage x column x seed: each role's
    columns are its own (:func:`columns`: the recovering role runs E=WQ=3 AQ=2, what its
    search runs; the writer and the fail-over (``both``) each of ``writer_shapes``); a role the
    release's client cannot play gets no shard (:func:`not_applicable`: a writer of a release
    before 4.12). ``zookeepers``: version -> directory (None: the default one).
    ``ledger_storages``: ``sorted``, ``db`` (none: the settings profile's);
    ``settings_profile``: the bookies' (""; the suite's). ``clients``: the Java client's
    releases, version -> directory, each on each release's bookies (None: each release's own
    client); a writer of a client before 4.12 gets no shard."""
    if not releases:
        raise MatrixError("the matrix needs at least one --bookkeeper release")
    if seeds_per_release < 1 or seconds <= 0:
        raise MatrixError("each release needs >= 1 shard and a budget > 0 s")
    try:
        profile_named(settings_profile or DEFAULT_PROFILE)
        for storage in ledger_storages:
            storage_named(storage)
    except ValueError as exc:
        raise MatrixError(str(exc)) from exc
    if len(set(ledger_storages)) != len(ledger_storages):
        raise MatrixError(f"a ledger storage is named twice: {','.join(ledger_storages)}")
    skipped = {} if clients else not_applicable(releases, roles=roles, writer_shapes=writer_shapes)
    client_releases: list[tuple[str, str | None]] = [
        (client, str(client_home)) for client, client_home in (clients or {}).items()
    ] or [("", None)]
    shards: list[JavaShard] = []
    zookeeper_releases: list[tuple[str, str | None]] = [
        (zk_version, str(zk_home)) for zk_version, zk_home in (zookeepers or {}).items()
    ] or [("", None)]
    for version, home in releases.items():
        for zk_version, zk_home in zookeeper_releases:
            for storage, (client, client_home), column in (
                (x, c, column)
                for x in ledger_storages or [""]
                for c in client_releases
                for column in columns(roles, writer_shapes)
            ):
                if (version, column.configuration, column.role) in skipped or (
                    client and column.refusal(client) is not None
                ):
                    continue
                for n in range(seeds_per_release):
                    shards.append(
                        JavaShard(
                            len(shards),
                            version,
                            str(home),
                            column.role,
                            column.configuration,
                            seed + n,
                            seconds,
                            max_examples,
                            zk_home,
                            zk_version,
                            storage,
                            settings_profile,
                            client,
                            client_home,
                            dict(column.settings),
                        )
                    )
    if not shards:
        raise MatrixError("no release can run any of the roles asked for")
    return shards


#: Runs one shard's search and returns its row (injected in tests).
Executor = Callable[[JavaShard, Path], dict[str, Any]]


def execute_java_shard(shard: JavaShard, run_dir: Path) -> dict[str, Any]:
    """Run one shard: its own cluster of the release, its search; never raises (an error, or a
    search that could not decide, is the row's ``status`` ``error`` with its ``error``, and its
    verdict undecided)."""
    # Imported here: the search (and ZooKeeper's installations) load only where a shard runs.
    from adapters.installations.zookeeper import locate_zookeeper
    from conformance.javaclient.run import SearchRunOptions, search_run

    shard_dir = run_dir / "shards" / str(shard.index)
    shard_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    row: dict[str, Any] = {**asdict(shard), "status": RowStatus.DONE, "error": None}
    settings = shard.bookie_settings()
    # What the bookies ran, whatever the plan left to the profile.
    row["ledger_storage"] = settings.ledger_storage.short_name
    row["settings_profile"] = settings.profile.name
    try:
        role = role_from_settings({**shard.role_settings, "role": shard.role})
        result = search_run(
            SearchRunOptions(
                Path(shard.home),
                shard_dir,
                role,
                zookeeper=None if shard.zookeeper is None else locate_zookeeper(shard.zookeeper),
                seed=shard.seed,
                seconds=shard.seconds,
                max_examples=shard.max_examples,
                bookie_settings=settings,
                client_home=Path(shard.client_home) if shard.client_home else None,
            )
        )
        summary, error = result.summary(), result.outcome.error
        row.update(summary)
        row["verdict"] = Verdict.named(summary.get("verdict"))
        if error is not None:
            row["status"] = RowStatus.ERROR
    except Exception as exc:  # a shard's failure is its row, never the matrix's crash
        row.update(
            status=RowStatus.ERROR,
            verdict=Verdict.UNDECIDED,
            error=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(limit=8),
        )
    row["seconds_total"] = round(time.monotonic() - started, 3)
    return row


def run_matrix(
    shards: Sequence[JavaShard],
    run_dir: Path,
    *,
    master: str,
    executor: Executor | None = None,
) -> list[dict[str, Any]]:
    """Run ``shards`` (Spark on ``master``, or ``none``: here) with ``executor`` (default
    :func:`execute_java_shard`) and return their rows, typed, also written to
    ``java_shards.jsonl``."""
    executor = executor or execute_java_shard
    if master == "none":
        rows = [executor(shard, run_dir) for shard in shards]
    else:
        from conformance.distributed.spark_job import spark_session

        with spark_session(master) as spark:
            rdd = spark.sparkContext.parallelize(list(shards), numSlices=max(1, len(shards)))
            run = executor
            rows = rdd.map(lambda shard: to_storage(run(shard, run_dir))).collect()
    rows = sorted((from_storage(row) for row in rows), key=lambda row: int(row["index"]))
    with (run_dir / SHARDS_FILE).open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(to_storage(row)) + "\n")
    return rows


def _change(now: Verdict, then: Verdict) -> str | None:
    # SEVERITY lists the verdicts worst first.
    if SEVERITY.index(now) < SEVERITY.index(then):
        return "regression"
    if SEVERITY.index(now) > SEVERITY.index(then):
        return "fix"
    return None


def matrix(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One cell per (release, ZooKeeper release, ledger storage, configuration, role): the
    worst verdict of its shards, their examples, the fastest first finding; then, per column,
    ``change`` against the release before it on the same ZooKeeper and storage and
    ``zookeeper_change`` against the ZooKeeper release before it on the same release and
    storage (``regression``, ``fix`` or None)."""
    cells: dict[tuple[str, str, str, str, str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        key = (
            str(row["version"]),
            str(row.get("client_version") or ""),
            str(row.get("zookeeper_version") or ""),
            str(row.get("ledger_storage") or ""),
            str(row["configuration"]),
            str(row["role"]),
        )
        cells.setdefault(key, []).append(row)
    out: list[dict[str, Any]] = []
    for (
        version,
        client_version,
        zookeeper_version,
        storage,
        configuration,
        role,
    ), members in cells.items():
        firsts = [
            float(r["seconds_to_first_finding_from_start"])
            for r in members
            if r.get("seconds_to_first_finding_from_start") is not None
        ]
        out.append(
            {
                "version": version,
                "client_version": client_version,
                "zookeeper_version": zookeeper_version,
                "ledger_storage": storage,
                "configuration": configuration,
                "role": role,
                "verdict": worst(r.get("verdict", Verdict.UNDECIDED) for r in members),
                "shards": len(members),
                "errors": sum(
                    1 for r in members if RowStatus.named(r.get("status")) is RowStatus.ERROR
                ),
                "examples": sum(int(r.get("examples") or 0) for r in members),
                "violations": sorted({v for r in members for v in r.get("violations") or []}),
                "first_finding_seconds": min(firsts) if firsts else None,
                "change": None,
                "zookeeper_change": None,
            }
        )
    out.sort(
        key=lambda c: (
            c["configuration"],
            c["role"],
            c["ledger_storage"],
            version_key(c["client_version"]),
            version_key(c["version"]),
            version_key(c["zookeeper_version"]),
        )
    )
    along_bookkeeper: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
    along_zookeeper: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
    for cell in out:
        # The same client release (none named: each release's own) along both.
        column = (
            cell["configuration"],
            cell["role"],
            cell["ledger_storage"],
            cell["client_version"],
        )
        before = along_bookkeeper.get((*column, cell["zookeeper_version"]))
        if before is not None:
            cell["change"] = _change(cell["verdict"], before["verdict"])
        along_bookkeeper[(*column, cell["zookeeper_version"])] = cell
        before = along_zookeeper.get((*column, cell["version"]))
        if before is not None:
            cell["zookeeper_change"] = _change(cell["verdict"], before["verdict"])
        along_zookeeper[(*column, cell["version"])] = cell
    return out


def matrix_verdict(cells: Iterable[Mapping[str, Any]]) -> Verdict:
    return worst(c["verdict"] for c in cells)


_STYLE = """
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #999; padding: 0.3em 0.7em; text-align: left; }
.clean { background: #d7f5d7; } .violation, .divergence { background: #f8c9c9; }
.undecided { background: #f3e6b3; } .regression { outline: 3px solid #c00; font-weight: bold; }
.fix { outline: 2px dashed #080; } .na { color: #777; background: #eee; }
"""


def render_matrix_report(
    cells: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    *,
    master: str,
    elapsed: float,
    systems: Sequence[str],
    inapplicable: Mapping[tuple[str, str, str], str] | None = None,
) -> str:
    inapplicable = inapplicable or {}
    zookeepers = sorted({str(c.get("zookeeper_version") or "") for c in cells} or {""})
    storages = sorted({str(c.get("ledger_storage") or "") for c in cells} or {""})
    clients = sorted({str(c.get("client_version") or "") for c in cells} or {""})
    rows_of = sorted(
        {
            (
                str(c["version"]),
                str(c.get("client_version") or ""),
                str(c.get("zookeeper_version") or ""),
                str(c.get("ledger_storage") or ""),
            )
            for c in cells
        }
        | {
            (v, cv, zk, x)
            for v, _c, _r in inapplicable
            for cv in clients
            for zk in zookeepers
            for x in storages
        },
        key=lambda row: (
            version_key(row[0]),
            version_key(row[1]),
            version_key(row[2]),
            row[3],
        ),
    )
    columns = sorted(
        {(str(c["configuration"]), str(c["role"])) for c in cells}
        | {(c, r) for _v, c, r in inapplicable}
    )
    by_key = {
        (
            c["version"],
            c.get("client_version") or "",
            c.get("zookeeper_version") or "",
            c.get("ledger_storage") or "",
            c["configuration"],
            c["role"],
        ): c
        for c in cells
    }
    head = "".join(f"<th>{html.escape(cfg)}<br>{html.escape(role)}</th>" for cfg, role in columns)
    body = []
    for version, client_version, zookeeper_version, storage in rows_of:
        tds = []
        for cfg, role in columns:
            cell = by_key.get((version, client_version, zookeeper_version, storage, cfg, role))
            if cell is None:
                why = inapplicable.get((version, cfg, role), "not run")
                tds.append(f'<td class="na">{html.escape(why)}</td>')
                continue
            first = cell["first_finding_seconds"]
            detail = f"{cell['examples']} examples, {cell['shards']} shard(s)"
            if first is not None:
                detail += f"; first finding {first:.0f} s"
            if cell["violations"]:
                detail += "<br>" + html.escape(", ".join(cell["violations"]))
            if cell["errors"]:
                detail += f"<br>{cell['errors']} shard error(s)"
            changes = [cell["change"], _zookeeper_change(cell)]
            change = "".join(f" ({c})" for c in changes if c)
            classes = " ".join(filter(None, [str(cell["verdict"]), *changes]))
            tds.append(
                f'<td class="{classes}"><b>{html.escape(str(cell["verdict"]))}</b>'
                f"{html.escape(change)}<br>{detail}</td>"
            )
        label = (
            html.escape(version)
            + (f"<br>client {html.escape(client_version)}" if client_version else "")
            + (f"<br>ZooKeeper {html.escape(zookeeper_version)}" if zookeeper_version else "")
            + (f"<br>ledger storage {html.escape(storage)}" if storage else "")
        )
        body.append(f"<tr><th>{label}</th>{''.join(tds)}</tr>")
    shard_rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(row.get(k, '')))}</td>"
            for k in (
                "index",
                "version",
                "client_version",
                "zookeeper_version",
                "ledger_storage",
                "settings_profile",
                "role",
                "configuration",
                "seed",
                "status",
                "verdict",
                "examples",
                "guided_examples",
                "seconds_to_first_finding_from_start",
                "error",
            )
        )
        + "</tr>"
        for row in rows
    )
    verdict = matrix_verdict(cells) if cells else Verdict.UNDECIDED
    coverage = _client_coverage_table(rows)
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>bkconform: Java-client version matrix</title>
<style>{_STYLE}</style></head><body>
<h1>The real Java client under search: release x client x ZooKeeper x ledger storage x
configuration x role</h1>
<p>Verdict: <b class="{verdict}">{verdict}</b>. Master {html.escape(master)}; {len(rows)} shards
in {elapsed:.0f} s. Each release runs its own bookies and its own Java client (py4j), with a
frame proxy per bookie, on the ZooKeeper release its row names; a cell is the worst verdict of
its shards. Outlined in red: worse than the release before it on the same ZooKeeper, or than
the ZooKeeper release before it on the same BookKeeper (a regression); dashed green: better (a
fix).</p>
<table><tr><th>release</th>{head}</tr>{"".join(body)}</table>
<h2>Systems under test</h2><ul>{"".join(f"<li>{html.escape(s)}</li>" for s in systems)}</ul>
<h2>Shards</h2>
<table><tr><th>shard</th><th>release</th><th>client</th><th>ZooKeeper</th><th>ledger storage</th>
<th>settings profile</th><th>role</th><th>configuration</th>
<th>seed</th>
<th>status</th><th>verdict</th><th>examples</th><th>guided</th><th>first finding (s)</th>
<th>error</th></tr>{shard_rows}</table>
{coverage}
</body></html>
"""


def _zookeeper_change(cell: Mapping[str, Any]) -> str | None:
    change = cell.get("zookeeper_change")
    return f"{change} on ZooKeeper" if change else None


def _percent(counter: Mapping[str, Any]) -> str:
    covered, missed = int(counter.get("covered", 0)), int(counter.get("missed", 0))
    total = covered + missed
    return f"{covered}/{total} ({100 * covered / total:.0f}%)" if total else "-"


def _client_coverage_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Each shard's line and branch coverage of the client's classes (JaCoCo), per unit."""
    measured = [row for row in rows if isinstance(row.get("client_coverage"), Mapping)]
    if not measured:
        return "<h2>Coverage of the real client</h2><p>Not measured.</p>"
    units = sorted({name for row in measured for name in row["client_coverage"]["units"]})
    head = "".join(f"<th>{html.escape(unit)}</th>" for unit in [*units, "total"])
    body = []
    for row in measured:
        coverage = row["client_coverage"]
        counters = [coverage["units"].get(unit, {}) for unit in units] + [coverage["total"]]
        cells = "".join(
            f"<td>lines {_percent(c.get('lines', {}))}<br>"
            f"branches {_percent(c.get('branches', {}))}</td>"
            for c in counters
        )
        label = f"{row.get('index')}: {row.get('version')} {row.get('role')}"
        body.append(f"<tr><th>{html.escape(label)}</th>{cells}</tr>")
    return (
        "<h2>Coverage of the real client</h2><p>Lines and branches of the client's classes "
        "(JaCoCo) the shard's examples ran.</p>"
        f"<table><tr><th>shard</th>{head}</tr>{''.join(body)}</table>"
    )


__all__ = [
    "DEFAULT_ROLES",
    "MATRIX_FILE",
    "SHARDS_FILE",
    "Column",
    "JavaShard",
    "MatrixError",
    "columns",
    "execute_java_shard",
    "matrix",
    "matrix_verdict",
    "not_applicable",
    "plan_matrix",
    "render_matrix_report",
    "run_matrix",
]

"""``bkconform qualify --client java --bookkeeper 4.11.1,4.17.3``: the version matrix.

The same search (``bkconform run --client java``) against each release: bookies and Java client
of that release, every release installed from Maven Central first (once, here), in each role
asked (``--roles recovery,writer,both``; each role names its own columns: the writer and the
fail-over ``both`` in each of ``--writer-shapes``, default 3/2/2 and 2/1/1; a role a release's
client cannot play, such as a writer before 4.12, is a "not applicable" cell). One shard per
release, column and seed (``--shards`` per release, seeds from ``--seed`` on), each with
``--seconds`` of search, on Spark (``--master local[2]``, the default) or here
(``--master none``). The run directory gets ``java_shards.jsonl`` (a row per shard),
``shards/<n>/`` (each shard's own run directory: examples, finding, frames),
``matrix.json``, ``results.json`` and ``report.html`` (release x configuration x role, each
cell the worst verdict of its shards, a regression against the release before it outlined).
``--client-bookkeeper 4.17.3,4.18.0`` runs each of those Java clients on each release's
bookies (rows: bookies' release x client release). ``--zookeeper 3.8.4,3.9.3`` adds the
ZooKeeper releases as rows: each release on each (the
default: the one a local cluster runs, ZOOKEEPER_HOME or 3.9.3), a change against the
ZooKeeper release before it outlined too.
See conformance/distributed/java_matrix.py.

Exit codes: 0 = every cell clean; 1 = a violation or a divergence in some cell; 2 = undecided
(a release that cannot be had, a shard that could not decide, Spark that did not start).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from adapters.cluster.bookie_profiles import DEFAULT_PROFILE
from adapters.errors import ClusterError
from adapters.installations.bookkeeper import resolve_bookkeeper
from adapters.installations.system import zookeeper_version
from adapters.installations.zookeeper import locate_zookeeper
from adapters.javaclient import distribution_version
from conformance.commands.java_client_scenario import CannotRun, bookkeeper_home
from conformance.commands.options import storages_from_text
from conformance.distributed.java_matrix import (
    DEFAULT_ROLES,
    MATRIX_FILE,
    MatrixError,
    matrix,
    matrix_verdict,
    not_applicable,
    plan_matrix,
    render_matrix_report,
    run_matrix,
)
from conformance.distributed.schema import RowStatus
from conformance.javaclient.plans import PlanError
from conformance.javaclient.writer_plans import DEFAULT_SHAPES, WriterShape
from conformance.rundir import new_run_dir, versions
from conformance.verdict import exit_code_for

EXIT_UNDECIDED = 2
#: Per shard, when --seconds is not given.
DEFAULT_SECONDS = 120.0


def releases_from_args(args: argparse.Namespace) -> dict[str, Path]:
    """``--bookkeeper A,B,...`` (or one ``--bookkeeper-home``): each installed, in order."""
    names = [v.strip() for v in (args.bookkeeper or "").split(",") if v.strip()]
    if not names and not args.bookkeeper_home:
        raise CannotRun(
            "qualify --client java needs the releases to compare: --bookkeeper 4.11.1,4.17.3"
        )
    releases: dict[str, Path] = {}
    for name in names or [""]:
        one = argparse.Namespace(**{**vars(args), "bookkeeper": name or None})
        home = bookkeeper_home(one)
        releases[str(distribution_version(home))] = home
    return releases


def clients_from_args(args: argparse.Namespace) -> dict[str, Path]:
    """``--client-bookkeeper A,B,...``: each Java client release installed now, by version
    (empty: each release runs its own client)."""
    clients: dict[str, Path] = {}
    for name in _names(getattr(args, "client_bookkeeper", None)):
        try:
            home = resolve_bookkeeper(name, progress=True)
        except ClusterError as exc:
            raise CannotRun(f"--client-bookkeeper {name}: {exc}") from exc
        version = str(distribution_version(home))
        if version in clients:
            raise CannotRun(f"--client-bookkeeper: BookKeeper {version} is named twice")
        clients[version] = home
    return clients


def zookeepers_from_args(args: argparse.Namespace) -> dict[str, Path]:
    """``--zookeeper A,B,...``: each ZooKeeper release (or directory) installed now and named
    by its directory, so that every shard runs it; by version. None given: the one a cluster
    runs by default (ZOOKEEPER_HOME, else the default release), named too."""
    names: list[str | None] = [*_names(getattr(args, "zookeeper", None))] or [None]
    found: dict[str, Path] = {}
    for name in names:
        try:
            install = locate_zookeeper(name, progress=True)
        except ClusterError as exc:
            raise CannotRun(f"--zookeeper {name}: {exc}" if name else str(exc)) from exc
        version = zookeeper_version(install.classpath)
        if install.home is None or version is None:
            raise CannotRun(
                f"--zookeeper {name or install.source}: a ZooKeeper of unknown version or "
                "without a directory of its own cannot be a row of the matrix"
            )
        if version in found:
            raise CannotRun(f"--zookeeper: ZooKeeper {version} is named twice")
        found[version] = install.home
    return found


def java_qualify_command(args: argparse.Namespace) -> int:
    try:
        if args.target != "local":
            raise CannotRun(f"--client java runs on --target local only, not {args.target}")
        if getattr(args, "crash_time_share", None) is not None:
            raise CannotRun(
                "--crash-time-share weighs the model client's configurations that crash "
                "bookies; --client java plans its own cells, each with --seconds"
            )
        roles = _names(getattr(args, "roles", None)) or list(DEFAULT_ROLES)
        shapes = [
            WriterShape.parse(text) for text in _names(getattr(args, "writer_shapes", None))
        ] or list(DEFAULT_SHAPES)
        releases = releases_from_args(args)
        clients = clients_from_args(args)
        zookeepers = zookeepers_from_args(args)
        storages = storages_from_text(getattr(args, "ledger_storage", None))
        profile = getattr(args, "settings_profile", None) or DEFAULT_PROFILE
        seconds = args.seconds if args.seconds is not None else DEFAULT_SECONDS
        shards = plan_matrix(
            releases,
            seeds_per_release=args.shards,
            seed=args.seed,
            seconds=seconds,
            max_examples=args.max_examples or 10_000,
            roles=roles,
            writer_shapes=shapes,
            zookeepers=zookeepers,
            ledger_storages=storages,
            settings_profile="" if profile == DEFAULT_PROFILE else profile,
            clients=clients,
        )
        inapplicable = not_applicable(
            releases, roles=roles, writer_shapes=shapes, clients=clients or None
        )
    except (CannotRun, MatrixError, PlanError, ValueError) as exc:
        print(f"bkconform qualify: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    on_storages = ", ".join(storages) or "the profile's storage"
    run_dir = args.run_dir or new_run_dir(args.runs_dir, "local", "qualify-java")
    run_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"Java-client matrix: releases {', '.join(releases)}"
        f"{' with the clients ' + ', '.join(clients) if clients else ''} on ZooKeeper "
        f"{', '.join(zookeepers)}; bookies on {on_storages} (settings profile {profile}); "
        f"{len(shards)} shards "
        f"({args.shards} per release and column, {seconds:.0f} s each) on master "
        f"{args.master}; roles {', '.join(roles)}. Run directory: {run_dir}",
        flush=True,
    )
    for (version, configuration, role), why in sorted(inapplicable.items()):
        print(f"  {version} {configuration} {role}: {why}")
    started = time.monotonic()
    try:
        rows = run_matrix(shards, run_dir, master=args.master)
    except Exception as exc:  # Spark could not start, or its job failed
        print(f"bkconform qualify: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    elapsed = time.monotonic() - started
    cells = matrix(rows)
    verdict = matrix_verdict(cells)
    systems = sorted({str(row.get("system", "")) for row in rows if row.get("system")})
    (run_dir / MATRIX_FILE).write_text(json.dumps(cells, indent=2) + "\n")
    (run_dir / "results.json").write_text(
        json.dumps(
            {
                "name": "qualify-java",
                "verdict": verdict,
                "exit_code": exit_code_for(verdict),
                "master": args.master,
                "releases": {v: str(h) for v, h in releases.items()},
                "zookeepers": {v: str(h) for v, h in zookeepers.items()},
                "clients": {v: str(h) for v, h in clients.items()},
                "ledger_storages": sorted({str(r.get("ledger_storage")) for r in rows}),
                "settings_profile": profile,
                "cells": cells,
                "not_applicable": [
                    {"version": v, "configuration": c, "role": r, "why": why}
                    for (v, c, r), why in sorted(inapplicable.items())
                ],
                "shard_errors": [r["index"] for r in rows if r.get("status") != RowStatus.DONE],
                "elapsed_seconds": round(elapsed, 3),
                "system_under_test": systems,
                "versions": versions(),
            },
            indent=2,
        )
        + "\n"
    )
    report = run_dir / "report.html"
    report.write_text(
        render_matrix_report(
            cells,
            rows,
            master=args.master,
            elapsed=elapsed,
            systems=systems,
            inapplicable=inapplicable,
        )
    )
    for cell in cells:
        changes = [
            cell["change"],
            cell["zookeeper_change"] and f"{cell['zookeeper_change']} on ZooKeeper",
        ]
        change = "".join(f" ({c})" for c in changes if c)
        on_storage = f" on {cell['ledger_storage']}" if cell.get("ledger_storage") else ""
        client = f" with client {cell['client_version']}" if cell.get("client_version") else ""
        print(
            f"  {cell['version']}{client} on ZooKeeper {cell['zookeeper_version']}{on_storage} "
            f"{cell['configuration']} {cell['role']}: {cell['verdict']}"
            f"{change}; {cell['examples']} examples in {cell['shards']} shard(s)"
        )
    for row in rows:
        if row.get("status") != RowStatus.DONE:
            print(f"ERROR shard {row['index']} ({row['version']}): {row.get('error')}")
    print(f"Verdict: {verdict}. Report: {report}")
    return exit_code_for(verdict)


def _names(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


__all__ = ["clients_from_args", "java_qualify_command", "releases_from_args"]

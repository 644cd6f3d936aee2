"""``bkconform cluster up`` / ``bkconform cluster down``: a local cluster for manual work.

``up`` starts ZooKeeper and bookies (real BookKeeper: ``--bookkeeper VERSION|DIR``,
``--bookkeeper-home``, ``BOOKKEEPER_HOME``, else the default version installed from Maven
Central on first use; ``--bookie-kind reference`` for the reference bookie test double),
prints what it runs and where, records
them in ``<work dir>/cluster.json`` and returns, leaving them running. ``down`` stops them::

    bkconform cluster up --bookies 3 --zk 3 --work-dir /tmp/bk
    bkconform cluster down --work-dir /tmp/bk

Without ``--work-dir``, ``up`` uses a fresh temporary directory, and ``down`` stops the
cluster the last ``up`` recorded (``$BKCONFORM_HOME/cluster.json``, default ``~/.bkconform``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from adapters.cluster.detached import (
    DetachedCluster,
    forget,
    read_state,
    resolve_work_dir,
    state_path,
    stop_detached,
    write_state,
)
from adapters.cluster.errors import ClusterError
from adapters.cluster.local import KeepWorkDir, LocalCluster, LocalClusterOptions
from adapters.processes import processes_matching
from conformance.commands.options import (
    add_bookie_options,
    add_zookeeper_option,
    bookie_choice_from_args,
    zookeeper_from_args,
)
from conformance.rundir import system_header


def register(subparsers: Any) -> None:
    """Add ``cluster up`` and ``cluster down`` to a CLI's ``add_subparsers()`` object.

    Each leaf parser sets ``func``: a callable taking the parsed namespace and returning the
    process exit code.
    """
    cluster = subparsers.add_parser(
        "cluster",
        help="start or stop a local cluster that outlives the command",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    actions = cluster.add_subparsers(dest="cluster_command", metavar="{up,down}", required=True)

    up = actions.add_parser("up", help="start ZooKeeper and bookies, record them, return")
    up.add_argument("--bookies", type=_positive_or_zero, default=3, help="bookies (default 3)")
    up.add_argument(
        "--zk", type=_positive, default=1, help="ZooKeeper servers: 1 standalone, 3 ensemble"
    )
    add_bookie_options(up)
    add_zookeeper_option(up)
    up.add_argument("--work-dir", type=Path, default=None, help="keep state and logs here")
    up.add_argument(
        "--start-timeout", type=float, default=60.0, help="seconds per process (default 60)"
    )
    up.set_defaults(func=run_up)

    down = actions.add_parser("down", help="stop every process of a cluster started by up")
    down.add_argument(
        "--work-dir", type=Path, default=None, help="the cluster's work dir (default: the last up)"
    )
    down.set_defaults(func=run_down)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_or_zero(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _fail(command: str, error: Exception) -> int:
    print(f"bkconform cluster {command}: error: {error}", file=sys.stderr)
    return 1


def run_up(args: argparse.Namespace) -> int:
    work_dir: Path | None = args.work_dir.resolve() if args.work_dir else None
    if work_dir is not None and state_path(work_dir).exists():
        running = processes_matching(f"{work_dir}/")
        if running:
            return _fail(
                "up",
                ClusterError(
                    f"a cluster is already running in {work_dir} (pids {running}); "
                    f"run `bkconform cluster down --work-dir {work_dir}` first"
                ),
            )
    try:
        choice = bookie_choice_from_args(args)
        zookeeper = zookeeper_from_args(args)
    except ValueError as exc:
        return _fail("up", exc)
    options = LocalClusterOptions(
        bookies=args.bookies,
        zookeepers=args.zk,
        bookkeeper_home=choice.home,
        use_bookkeeper_home_env=False,
        zookeeper_install=zookeeper,
        work_dir=work_dir,
        keep_work_dir=KeepWorkDir.ON_FAILURE,
        start_timeout=args.start_timeout,
    )
    cluster = LocalCluster(options)
    try:
        cluster.start()
    except ClusterError as exc:
        return _fail("up", exc)
    endpoints = cluster.endpoints()
    system = cluster.system_under_test()
    implementation = cluster.bookie_implementation()
    records = cluster.detach()
    state = DetachedCluster(
        work_dir=cluster.work_dir,
        owns_work_dir=cluster.owns_work_dir,
        implementation=implementation.value if implementation else "none",
        endpoints=endpoints,
        processes=tuple(records),
    )
    path = write_state(state)
    print(system_header(system))
    print(f"zookeeper: {endpoints.zookeeper_connect}")
    print(f"ledgers root: {endpoints.ledgers_root}")
    print(f"metadataServiceUri: {endpoints.metadata_service_uri}")
    for bookie_id, (host, port) in endpoints.bookies.items():
        print(f"bookie: {bookie_id} at {host}:{port} ({state.implementation})")
    print(f"state: {path}")
    print(f"logs: {cluster.work_dir / 'logs'}")
    print(f"stop with: bkconform cluster down --work-dir {cluster.work_dir}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    try:
        work_dir = resolve_work_dir(args.work_dir)
        state = read_state(work_dir)
        stopped = stop_detached(state)
    except ClusterError as exc:
        return _fail("down", exc)
    forget(state)
    print(f"stopped {len(stopped)} processes ({', '.join(stopped) or 'none were running'})")
    return 0

"""``bkconform cluster up`` / ``down``: a local cluster for manual work; ``cluster clean``: the
ledgers bkconform runs left on a cluster.

``up`` starts ZooKeeper and bookies (real BookKeeper: ``--bookkeeper VERSION|DIR``,
``--bookkeeper-home``, ``BOOKKEEPER_HOME``, else the default version installed from Maven
Central on first use; ``--bookie-kind reference`` for the reference bookie test double),
prints what it runs and where, records
them in ``<work dir>/cluster.json`` and returns, leaving them running. ``down`` stops them::

    bkconform cluster up --bookies 3 --zk 3 --work-dir /tmp/bk
    bkconform cluster down --work-dir /tmp/bk

Without ``--work-dir``, ``up`` uses a fresh temporary directory, and ``down`` stops the
cluster the last ``up`` recorded (``$BKCONFORM_HOME/cluster.json``, default ``~/.bkconform``).

``clean`` deletes, from any BookKeeper cluster (``--zk HOST:PORT``, else the last ``up``'s), the
ledgers that ``--target external`` runs which died (``kill -9``) left behind, and with
``--include-kept`` those kept on purpose (``--keep-ledgers``, a finding's). It finds them by
the runs' journals and by reading every ledger's metadata for the suite's mark (``--no-scan``:
the journals only), and deletes only marked ledgers whose run is no longer alive, as
BookKeeper deletes a ledger (``adapters/zookeeper/ledger_marks.py``)::

    bkconform cluster clean --zk zk1:2181 --allow-remote [--ledgers-root /ledgers]
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
from adapters.cluster.external import ExternalCluster
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
    actions = cluster.add_subparsers(
        dest="cluster_command", metavar="{up,down,clean}", required=True
    )

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

    clean = actions.add_parser(
        "clean",
        help="delete the ledgers that bkconform runs which died left on a cluster",
        description="Delete the ledgers bkconform --target external runs left on a cluster and "
        "no longer use: those of runs that died, and with --include-kept those kept on "
        "purpose. Only ledgers carrying the suite's mark (custom metadata bkconform-run) are "
        "ever deleted, never those of a run still alive.",
    )
    clean.add_argument(
        "--zk",
        default=None,
        metavar="HOST:PORT[,...]",
        help="the cluster's ZooKeeper (default: the cluster of the last `cluster up`, or of "
        "--work-dir)",
    )
    clean.add_argument(
        "--work-dir", type=Path, default=None, help="a `cluster up` work dir (instead of --zk)"
    )
    clean.add_argument("--ledgers-root", default="/ledgers", help="default /ledgers")
    clean.add_argument(
        "--allow-remote", action="store_true", help="reach ZooKeeper on other machines"
    )
    clean.add_argument(
        "--include-kept",
        action="store_true",
        help="also delete the ledgers runs kept on purpose (--keep-ledgers, a finding's)",
    )
    clean.add_argument(
        "--no-scan",
        action="store_true",
        help="only the runs' journals: do not read every ledger's metadata for the mark",
    )
    clean.set_defaults(func=run_clean)


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


def run_clean(args: argparse.Namespace) -> int:
    connect, ledgers_root = args.zk, args.ledgers_root
    try:
        if connect is None:
            endpoints = read_state(resolve_work_dir(args.work_dir)).endpoints
            connect, ledgers_root = endpoints.zookeeper_connect, endpoints.ledgers_root
        cluster = ExternalCluster(connect, ledgers_root, allow_remote=args.allow_remote)
        cluster.start()
        try:
            report = cluster.clean_ledgers(include_kept=args.include_kept, scan=not args.no_scan)
        finally:
            cluster.stop()
    except ClusterError as exc:
        return _fail("clean", exc)
    print(f"ZooKeeper {connect}, ledgers root {ledgers_root}:")
    for line in report.describe():
        print(f"  {line}")
    return 1 if report.removal.failed else 0

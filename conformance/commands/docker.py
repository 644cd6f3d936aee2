"""``bkconform docker setup|teardown|up|down``: containerized clusters.

``setup`` makes a container engine answer and builds the local images, idempotently: when no
Docker engine answers it installs what is missing of podman, runc, the CNI plugins with their
DNS plugin (dnsname), iptables and debootstrap with apt (as root), writes the project's
containers.conf, starts podman's Docker API service (socket and pid in
``$BKCONFORM_HOME/docker``), builds the Debian base, ZooKeeper and reference-bookie images
(cached; a second run only checks their tags), then checks that two containers on a project
network resolve each other by name (``bkconform doctor`` reports every capability).
``teardown`` removes every container and network this project labelled and stops the
recorded API service. ``up`` starts a cluster of containers and leaves it running; ``down``
removes it::

    bkconform docker setup
    bkconform docker up --zk 3 --bookies 3
    bkconform docker down
    bkconform docker teardown
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from adapters.cluster.bookies import BookieSettings, LedgerStorage
from adapters.cluster.capabilities import probe_image
from adapters.cluster.container_dns import check_container_dns
from adapters.cluster.container_engine import (
    ContainerEngine,
    EnginePaths,
    ensure_engine,
    find_engine,
    stop_service,
)
from adapters.cluster.container_images import ImageBuilder, ImageSet, official_images
from adapters.cluster.container_labels import CLUSTER_LABEL, labelled_resources, remove_labelled
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions, new_cluster_id
from adapters.cluster.errors import ClusterError


def register(subparsers: Any) -> None:
    """Add the ``docker`` command group to a CLI's ``add_subparsers()`` object."""
    docker = subparsers.add_parser(
        "docker",
        help="container engine setup and containerized clusters",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    actions = docker.add_subparsers(
        dest="docker_command", metavar="{setup,teardown,up,down,status}", required=True
    )

    setup = actions.add_parser(
        "setup", help="install/start a container engine if needed and build the local images"
    )
    setup.add_argument(
        "--no-install", action="store_true", help="fail instead of installing missing packages"
    )
    setup.add_argument("--no-build", action="store_true", help="do not build the local images")
    setup.set_defaults(func=run_setup)

    teardown = actions.add_parser(
        "teardown", help="remove every bkconform container and network, stop the API service"
    )
    teardown.set_defaults(func=run_teardown)

    up = actions.add_parser("up", help="start a containerized cluster and leave it running")
    up.add_argument("--bookies", type=_at_least(0), default=3, help="bookies (default 3)")
    up.add_argument("--zk", type=_at_least(1), default=3, help="ZooKeeper servers (default 3)")
    up.add_argument(
        "--images",
        choices=("local", "official"),
        default="local",
        help="local: the images `setup` builds (reference bookie); official: "
        "apache/bookkeeper and zookeeper from a registry",
    )
    up.add_argument("--bookkeeper-image", default=None, help="override the bookie image")
    up.add_argument("--zookeeper-image", default=None, help="override the ZooKeeper image")
    up.add_argument(
        "--ledger-storage",
        choices=[storage.name.lower() for storage in LedgerStorage],
        default="sorted",
        help="ledgerStorageClass (db = DbLedgerStorage, needed for limbo)",
    )
    up.add_argument(
        "--limbo",
        action="store_true",
        help="dataIntegrityChecking and dataIntegrityStampMissingCookies on (implies --ledger-"
        "storage db)",
    )
    up.add_argument(
        "--start-timeout", type=float, default=120.0, help="seconds per step (default 120)"
    )
    up.set_defaults(func=run_up)

    down = actions.add_parser("down", help="remove a cluster started by up")
    down.add_argument(
        "--cluster-id", default=None, help="the cluster to remove (default: the last `up`)"
    )
    down.add_argument(
        "--all", action="store_true", help="remove every bkconform container and network"
    )
    down.set_defaults(func=run_down)

    status = actions.add_parser("status", help="engine, images and running clusters")
    status.set_defaults(func=run_status)


def _at_least(minimum: int) -> Any:
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _fail(command: str, error: Exception) -> int:
    print(f"bkconform docker {command}: error: {error}", file=sys.stderr)
    return 1


def _say(line: str) -> None:
    print(line, flush=True)


def run_setup(args: argparse.Namespace) -> int:
    paths = EnginePaths.default()
    try:
        started = time.monotonic()
        setup = ensure_engine(paths, install=not args.no_install, log=_say)
        _say(f"engine ready in {time.monotonic() - started:.1f} s")
        if not args.no_build:
            started = time.monotonic()
            tags = ImageBuilder(setup.engine, log=_say).ensure_all()
            _say(f"images ready in {time.monotonic() - started:.1f} s")
            print(f"zookeeper image: {tags.zookeeper}")
            print(f"reference bookie image: {tags.refbookie}")
        image = probe_image(setup.engine)
        if image is None:
            _say("container DNS not checked: no local image yet (run setup without --no-build)")
        else:
            # What every cluster needs: containers resolving each other by name.
            started = time.monotonic()
            check_container_dns(setup.engine, image)
            _say(f"container DNS works ({time.monotonic() - started:.1f} s)")
    except ClusterError as exc:
        return _fail("setup", exc)
    print(f"DOCKER_HOST={setup.engine.docker_host}")
    if setup.engine.is_podman:
        print(f"CONTAINERS_CONF={paths.containers_conf}")
    print("TESTCONTAINERS_RYUK_DISABLED=true")
    return 0


def _engine_or_fail(command: str) -> ContainerEngine | None:
    engine = find_engine()
    if engine is None:
        _fail(command, ClusterError("no container engine answers: run `bkconform docker setup`"))
    return engine


def run_teardown(args: argparse.Namespace) -> int:
    paths = EnginePaths.default()
    engine = find_engine(paths)
    errors: list[str] = []
    if engine is not None:
        client = engine.client()
        try:
            errors = remove_labelled(client, {CLUSTER_LABEL: ""})
        finally:
            client.close()
    stopped = stop_service(paths)
    _forget_clusters(paths)
    print("stopped the podman API service" if stopped else "no podman API service was recorded")
    if errors:
        return _fail("teardown", ClusterError("; ".join(errors)))
    return 0


def _clusters_dir(paths: EnginePaths) -> Path:
    return paths.directory / "clusters"


def _forget_clusters(paths: EnginePaths) -> None:
    directory = _clusters_dir(paths)
    if directory.exists():
        shutil.rmtree(directory, ignore_errors=True)


def run_up(args: argparse.Namespace) -> int:
    engine = _engine_or_fail("up")
    if engine is None:
        return 1
    images: ImageSet | None = official_images() if args.images == "official" else None
    if args.bookkeeper_image or args.zookeeper_image:
        base = images or ImageBuilder(engine).ensure_all().image_set()
        images = ImageSet(
            zookeeper=args.zookeeper_image or base.zookeeper,
            bookie=args.bookkeeper_image or base.bookie,
            bookie_kind=base.bookie_kind,
        )
    storage = LedgerStorage.DB if args.limbo else LedgerStorage[args.ledger_storage.upper()]
    settings = BookieSettings(
        ledger_storage=storage,
        data_integrity_checking=args.limbo,
        stamp_missing_cookies=args.limbo,
    )
    paths = EnginePaths.default()
    work_root = _clusters_dir(paths)
    work_root.mkdir(parents=True, exist_ok=True)
    cluster_id = new_cluster_id()
    # The containers bind-mount their data from here, so it outlives this command.
    work_dir = work_root / cluster_id
    cluster = ContainerCluster(
        ContainerClusterOptions(
            bookies=args.bookies,
            zookeepers=args.zk,
            images=images,
            engine=engine,
            work_dir=work_dir,
            bookie_settings=settings,
            start_timeout=args.start_timeout,
        ),
        cluster_id=cluster_id,
    )
    try:
        cluster.start()
    except ClusterError as exc:
        shutil.rmtree(work_dir, ignore_errors=True)
        return _fail("up", exc)
    endpoints = cluster.endpoints()
    cluster.detach()
    record = {
        "cluster_id": cluster.cluster_id,
        "work_dir": str(work_dir),
        "instance_id": cluster.instance_id,
        "endpoints": endpoints.to_json(),
    }
    state = work_root / f"{cluster.cluster_id}.json"
    state.write_text(json.dumps(record, indent=2) + "\n")
    (work_root / "last").write_text(cluster.cluster_id + "\n")
    print(f"cluster: {cluster.cluster_id} (network {cluster.network_name})")
    print(f"zookeeper: {endpoints.zookeeper_connect}")
    print(f"metadataServiceUri: {endpoints.metadata_service_uri}")
    for bookie_id, (host, port) in endpoints.bookies.items():
        print(f"bookie: {bookie_id} at {host}:{port}")
    print(f"state: {state}")
    print(f"stop with: bkconform docker down --cluster-id {cluster.cluster_id}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    engine = _engine_or_fail("down")
    if engine is None:
        return 1
    paths = EnginePaths.default()
    work_root = _clusters_dir(paths)
    if args.all:
        labels = {CLUSTER_LABEL: ""}
        cluster_id = None
    else:
        cluster_id = args.cluster_id
        if cluster_id is None:
            last = work_root / "last"
            if not last.exists():
                return _fail(
                    "down", ClusterError("no cluster recorded: pass --cluster-id or --all")
                )
            cluster_id = last.read_text().strip()
        labels = {CLUSTER_LABEL: cluster_id}
    client = engine.client()
    try:
        found = labelled_resources(client, labels)
        errors = remove_labelled(client, labels)
    finally:
        client.close()
    for record_id in [cluster_id] if cluster_id else _recorded(work_root):
        shutil.rmtree(work_root / record_id, ignore_errors=True)
        (work_root / f"{record_id}.json").unlink(missing_ok=True)
    last = work_root / "last"
    if last.exists() and (cluster_id is None or last.read_text().strip() == cluster_id):
        last.unlink()
    print(f"removed {len(found['containers'])} containers and {len(found['networks'])} networks")
    if errors:
        return _fail("down", ClusterError("; ".join(errors)))
    return 0


def _recorded(work_root: Path) -> list[str]:
    if not work_root.exists():
        return []
    return [path.stem for path in work_root.glob("*.json")]


def run_status(args: argparse.Namespace) -> int:
    engine = find_engine()
    if engine is None:
        print("engine: none answers (run `bkconform docker setup`)")
        return 1
    print(f"engine: {engine.docker_host} ({Path(engine.cli).name})")
    client = engine.client()
    try:
        found = labelled_resources(client, {CLUSTER_LABEL: ""})
    finally:
        client.close()
    print(f"bkconform containers: {', '.join(found['containers']) or 'none'}")
    print(f"bkconform networks: {', '.join(found['networks']) or 'none'}")
    return 0

"""``bkconform bookkeeper|zookeeper install|list|remove``: real releases from the repository
Maven is configured with (Maven Central unless its settings name a mirror).

``install [VERSION]`` resolves the release (``org.apache.bookkeeper:bookkeeper-server`` or
``org.apache.zookeeper:zookeeper``) and its runtime dependencies with the machine's ``mvn``
into ``$BKCONFORM_HOME/<product>/VERSION`` (default ``~/.bkconform``) and prints the directory:
a BOOKKEEPER_HOME for ``--bookkeeper-home``, a ZooKeeper for ``--zookeeper DIR``.
``--bookkeeper VERSION`` and ``--zookeeper VERSION`` on the other commands do the same on
first use. ``list --available`` asks that repository which versions it serves::

    bkconform bookkeeper install            # the default version
    bkconform bookkeeper install 4.11.1
    bkconform bookkeeper list --available
    bkconform zookeeper install 3.9.2
    bkconform zookeeper list
    bkconform zookeeper remove 3.9.2

Exit codes: 0 done, 1 not found (``remove``), 2 the install failed, an install is broken or
the repository could not be asked (the message says why).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.cluster.errors import ClusterError
from adapters.installations import bookkeeper, releases, source_builds, zookeeper
from adapters.installations.maven import METADATA_TIMEOUT
from adapters.installations.releases import DEFAULT_MAVEN_TIMEOUT, Product

#: What ``install``'s help says of versions: where they come from, never a list of them (which
#: versions a repository serves is its to say, when asked).
VERSIONS_HELP = (
    "any version the repository Maven is configured with serves (`bkconform {directory} list "
    "--available` asks it)"
)


@dataclass(frozen=True)
class ReleaseCommand:
    """A product's command group: its name and how the other commands use an install."""

    product: Product
    use_hint: str  # formatted with version= and home=

    @property
    def versions_help(self) -> str:
        return VERSIONS_HELP.format(directory=self.product.directory)


COMMANDS = (
    ReleaseCommand(
        bookkeeper.BOOKKEEPER,
        "Use it with --bookkeeper {version} or BOOKKEEPER_HOME={home}",
    ),
    ReleaseCommand(
        zookeeper.ZOOKEEPER,
        "Use it with --zookeeper {version} or --zookeeper {home}",
    ),
)


def register(subparsers: Any) -> None:
    """Add ``bookkeeper|zookeeper install|list|remove`` to a CLI's ``add_subparsers()``."""
    for command in COMMANDS:
        _register(subparsers, command)


def _register(subparsers: Any, command: ReleaseCommand) -> None:
    product = command.product
    group = subparsers.add_parser(
        product.directory,
        help=f"install real {product.name} releases with Maven",
        description=f"Install, list and remove {product.name} releases ({product.coordinates} "
        "and its runtime dependencies, resolved by the machine's mvn from the repository it is "
        "configured with: Maven Central unless its settings.xml names a mirror).",
    )
    group.set_defaults(release=command)
    actions = group.add_subparsers(
        dest=f"{product.directory}_command", metavar="{install,list,remove}", required=True
    )
    default = product.default_version
    add = actions.add_parser("install", help=f"install a version (default {default})")
    add.add_argument(
        "version", nargs="?", default=default, help=f"default {default}; {command.versions_help}"
    )
    offline = add.add_mutually_exclusive_group()
    offline.add_argument(
        "--offline", action="store_true", help="only the local Maven repository (mvn -o)"
    )
    offline.add_argument(
        "--online",
        action="store_true",
        help="ask Maven's remote repository even if ~/.m2 has the jars",
    )
    add.add_argument(
        "--force", action="store_true", help="reinstall an installed (or broken) version"
    )
    add.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_MAVEN_TIMEOUT,
        help=f"seconds each mvn call may take (default {DEFAULT_MAVEN_TIMEOUT:.0f})",
    )
    add.add_argument(
        "--maven-repo", type=Path, default=None, help="Maven's local repository (default ~/.m2)"
    )
    add.set_defaults(func=run_install)

    listing = actions.add_parser(
        "list",
        help="the installed versions (--available: the versions Maven's repository serves)",
    )
    listing.add_argument(
        "--available",
        action="store_true",
        help="ask the repository Maven is configured with which versions it serves (its "
        "maven-metadata.xml, read now) and mark those installed",
    )
    listing.add_argument(
        "--timeout",
        type=float,
        default=METADATA_TIMEOUT,
        help=f"seconds to wait on the repository (default {METADATA_TIMEOUT:.0f})",
    )
    listing.set_defaults(func=run_list)

    drop = actions.add_parser("remove", help="delete an installed version")
    drop.add_argument("version")
    drop.set_defaults(func=run_remove)


def run_install(args: argparse.Namespace) -> int:
    command: ReleaseCommand = args.release
    product = command.product
    offline = True if args.offline else False if args.online else None
    started = time.monotonic()
    try:
        done = releases.install(
            product,
            args.version,
            offline=offline,
            force=args.force,
            timeout=args.timeout,
            maven_repo=args.maven_repo,
            progress=True,
        )
    except ClusterError as exc:
        print(f"bkconform {product.directory} install: {exc}", file=sys.stderr)
        return 2
    print(
        f"{product.name} {done.version}: {done.home} ({done.jars} jars, installed "
        f"{done.installed_at}; {time.monotonic() - started:.1f}s)"
    )
    print(command.use_hint.format(version=done.version, home=done.home))
    return 0


def run_list(args: argparse.Namespace) -> int:
    product = args.release.product
    found = releases.installed(product)
    if args.available:
        return _list_available(product, found, args.timeout)
    built = source_builds.installed(source_builds.source_kind(product.directory))
    if not found and not built:
        print(f"no {product.name} installed in {product.install_root()}")
        return 0
    for item in found:
        broken = releases.problems(product, item)
        state = (
            f"\tBROKEN ({releases.describe_problems(broken, 2)}): "
            f"`{product.reinstall_command(item.version)}`"
            if broken
            else ""
        )
        print(
            f"{item.version}\t{item.home}\t{item.jars} jars\tinstalled {item.installed_at}{state}"
        )
    for build in built:
        broken = releases.problems(product, build.installation)
        state = (
            f"\tBROKEN ({releases.describe_problems(broken, 2)}): use --{product.directory} "
            f"{build.checkout} again to rebuild it"
            if broken
            else ""
        )
        print(
            f"{build.name}\t{build.home}\t{build.installation.jars} jars\tbuilt "
            f"{build.built_at} from {build.checkout} at {build.short_commit}"
            f"{' (dirty)' if build.dirty else ''}{state}"
        )
    return 0


def _list_available(
    product: Product, installed: list[releases.Installation], timeout: float
) -> int:
    try:
        served = releases.available(product, timeout=timeout)
    except ClusterError as exc:
        print(f"bkconform {product.directory} list --available: {exc}", file=sys.stderr)
        return 2
    print(
        f"{product.coordinates}: {len(served.versions)} versions served by "
        f"{served.repository.describe()}, asked now"
    )
    here = {item.version: item for item in installed}
    for version in served.versions:
        item = here.get(version)
        mark = "" if item is None else f"\tinstalled ({item.home})"
        print(f"{version}{mark}")
    elsewhere = sorted(set(here) - set(served.versions), key=releases.version_key)
    if elsewhere:
        print(f"installed, not listed by the repository: {', '.join(elsewhere)}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    product = args.release.product
    try:
        removed = releases.remove(product, args.version)
    except ClusterError as exc:
        print(f"bkconform {product.directory} remove: {exc}", file=sys.stderr)
        return 2
    if not removed:
        print(
            f"{product.name} {args.version} is not installed in {product.install_root()}",
            file=sys.stderr,
        )
        return 1
    print(f"removed {product.name} {args.version}")
    return 0

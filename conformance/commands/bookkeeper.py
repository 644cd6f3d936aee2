"""``bkconform bookkeeper install|list|remove``: real BookKeeper from Maven Central.

``install [VERSION]`` resolves ``org.apache.bookkeeper:bookkeeper-server:VERSION`` and its
runtime dependencies with the machine's ``mvn`` into ``$BKCONFORM_HOME/bookkeeper/VERSION``
(default ``~/.bkconform``), with a ``bin/bookkeeper`` launcher and logging configuration, and
prints the directory: a BOOKKEEPER_HOME for ``--bookkeeper-home``. ``--bookkeeper VERSION`` on
the other commands does the same on first use::

    bkconform bookkeeper install            # the default version
    bkconform bookkeeper install 4.11.1
    bkconform bookkeeper list
    bkconform bookkeeper remove 4.11.1

Exit codes: 0 done, 1 not found (``remove``), 2 the install failed (the message says why).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from adapters.cluster.errors import ClusterError
from adapters.installations.bookkeeper import (
    DEFAULT_MAVEN_TIMEOUT,
    DEFAULT_VERSION,
    NOT_SERVED_VERSIONS,
    SERVED_VERSIONS,
    install,
    install_root,
    installed,
    remove,
)


def register(subparsers: Any) -> None:
    """Add ``bookkeeper install|list|remove`` to a CLI's ``add_subparsers()`` object."""
    group = subparsers.add_parser(
        "bookkeeper",
        help="install real BookKeeper versions from Maven Central",
        description=__doc__.split("\n\n")[1].rstrip(":") if __doc__ else None,
    )
    actions = group.add_subparsers(
        dest="bookkeeper_command", metavar="{install,list,remove}", required=True
    )
    add = actions.add_parser("install", help=f"install a version (default {DEFAULT_VERSION})")
    add.add_argument(
        "version",
        nargs="?",
        default=DEFAULT_VERSION,
        help=f"default {DEFAULT_VERSION}; served here: {', '.join(SERVED_VERSIONS)} (not "
        f"served: {', '.join(NOT_SERVED_VERSIONS)})",
    )
    offline = add.add_mutually_exclusive_group()
    offline.add_argument(
        "--offline", action="store_true", help="only the local Maven repository (mvn -o)"
    )
    offline.add_argument(
        "--online", action="store_true", help="ask Maven Central even if ~/.m2 has the jars"
    )
    add.add_argument("--force", action="store_true", help="reinstall an installed version")
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

    listing = actions.add_parser("list", help="the installed versions")
    listing.set_defaults(func=run_list)

    drop = actions.add_parser("remove", help="delete an installed version")
    drop.add_argument("version")
    drop.set_defaults(func=run_remove)


def run_install(args: argparse.Namespace) -> int:
    offline = True if args.offline else False if args.online else None
    started = time.monotonic()
    try:
        done = install(
            args.version,
            offline=offline,
            force=args.force,
            timeout=args.timeout,
            maven_repo=args.maven_repo,
            progress=True,
        )
    except ClusterError as exc:
        print(f"bkconform bookkeeper install: {exc}", file=sys.stderr)
        return 2
    print(
        f"BookKeeper {done.version}: {done.home} ({done.jars} jars, installed "
        f"{done.installed_at}; {time.monotonic() - started:.1f}s)"
    )
    print(f"Use it with --bookkeeper {done.version} or BOOKKEEPER_HOME={done.home}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    found = installed()
    if not found:
        print(f"no BookKeeper installed in {install_root()}")
        return 0
    for item in found:
        print(f"{item.version}\t{item.home}\t{item.jars} jars\tinstalled {item.installed_at}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    try:
        removed = remove(args.version)
    except ClusterError as exc:
        print(f"bkconform bookkeeper remove: {exc}", file=sys.stderr)
        return 2
    if not removed:
        print(f"BookKeeper {args.version} is not installed in {install_root()}", file=sys.stderr)
        return 1
    print(f"removed BookKeeper {args.version}")
    return 0

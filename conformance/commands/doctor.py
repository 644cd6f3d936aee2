"""``bkconform doctor``: does every capability the suite uses work on this machine?

For each one (Java, Maven, ZooKeeper, Spark, openssl, network namespaces, nftables, iptables,
the container packages, the container engine's API, the local images, name resolution between
containers, the debootstrap cache) it prints whether it works here and, when it does not, the
exact command that fixes it. It installs nothing. Exit code 0 when every required capability
works, 1 otherwise::

    bkconform doctor
    bkconform doctor --json
    bkconform doctor --only container-dns --only iptables
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from adapters.cluster.capabilities import (
    BY_NAME,
    DEFAULT_TIMEOUT,
    CheckResult,
    all_required_ok,
    run_checks,
)


def register(subparsers: Any) -> None:
    """Add the ``doctor`` command to a CLI's ``add_subparsers()`` object."""
    doctor = subparsers.add_parser(
        "doctor",
        help="check every capability the suite uses; print the fix for each that fails",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    doctor.add_argument("--json", action="store_true", help="one JSON document on stdout")
    doctor.add_argument(
        "--only",
        action="append",
        choices=sorted(BY_NAME),
        default=None,
        metavar="NAME",
        help=f"check only this capability (repeatable): {', '.join(BY_NAME)}",
    )
    doctor.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds per check (default {DEFAULT_TIMEOUT:.0f})",
    )
    doctor.set_defaults(func=run_doctor)


def format_result(result: CheckResult) -> list[str]:
    mark = "ok" if result.ok else ("FAIL" if result.required else "warn")
    lines = [f"[{mark:>4}] {result.name:<19} {result.detail}  ({result.seconds:.1f} s)"]
    if not result.ok and result.fix:
        lines.append(f"       {'':<19} fix: {result.fix}")
    return lines


def run_doctor(args: argparse.Namespace) -> int:
    def show(result: CheckResult) -> None:
        for line in format_result(result):
            print(line, flush=True)

    if args.json:
        results = run_checks(args.only, args.timeout)
    else:
        results = run_checks(
            args.only,
            args.timeout,
            on_result=show,
            log=lambda line: print(f"       {line}", flush=True),
        )
    ok = all_required_ok(results)
    if args.json:
        print(json.dumps({"ok": ok, "checks": [result.to_json() for result in results]}, indent=2))
    else:
        failed = [r.name for r in results if r.required and not r.ok]
        print(
            "every required capability works"
            if ok
            else f"{len(failed)} required capabilities do not work: {', '.join(failed)}"
        )
    return 0 if ok else 1

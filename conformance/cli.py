"""``bkconform``: the command line.

Each command group lives in ``conformance/commands/<group>.py`` and registers its parsers;
every leaf parser sets ``func(args) -> int``, the process exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from conformance.commands import cluster as cluster_command
from conformance.commands import docker as docker_command
from conformance.commands import doctor as doctor_command
from conformance.commands import encodings as encodings_command
from conformance.commands import model as model_command
from conformance.commands import qualify as qualify_command
from conformance.commands import releases as releases_command
from conformance.commands import run as run_command
from conformance.commands import scenario as scenario_command
from conformance.commands import zab as zab_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bkconform",
        description="Property-based conformance testing for Apache BookKeeper and ZooKeeper.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    model_command.register(subparsers)
    cluster_command.register(subparsers)
    docker_command.register(subparsers)
    doctor_command.register(subparsers)
    run_command.register(subparsers)
    qualify_command.register(subparsers)
    scenario_command.register(subparsers)
    zab_command.register(subparsers)
    releases_command.register(subparsers)
    encodings_command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print("bkconform: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (``bkconform bookkeeper list --available | head``): stop as a
        # Unix tool stopped by SIGPIPE does, without a traceback. What is still buffered for
        # standard output would raise again when Python flushes it at exit: it goes nowhere.
        _discard_stdout()
        return 128 + signal.SIGPIPE
    return code


def _discard_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""``python -m adapters.agent serve ...``: run the fault agent (see docs/adapters/agent.md).

The managed command comes from ``--command 'ARGV'`` (split like a shell would), from
everything after ``--``, or from ``command`` in the ``--config`` TOML file. Flags override the
config file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.agent.config import (
    FIREWALLS,
    build_config,
    parse_assignments,
    read_config_file,
)
from adapters.agent.errors import AgentError, InvalidAgentConfig

EXIT_CONFIG_ERROR = 2
EXIT_FAILED = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.agent",
        description="The bkconform fault agent: a gRPC service controlling one process.",
    )
    commands = parser.add_subparsers(dest="subcommand", required=True)
    serve = commands.add_parser(
        "serve",
        help="run the agent (until SIGTERM/SIGINT)",
        usage="%(prog)s [options] [-- COMMAND ARGS...]",
    )
    serve.add_argument("--config", type=Path, help="TOML file with the settings below")
    serve.add_argument(
        "--listen", help="HOST:PORT to listen on (default 127.0.0.1:7771; port 0: a free port)"
    )
    serve.add_argument(
        "--allow-insecure-remote",
        action="store_true",
        default=None,
        help="allow a non-loopback --listen without TLS (the token then crosses in clear text)",
    )
    serve.add_argument("--token-file", type=Path, help="file holding the shared secret")
    serve.add_argument("--tls-cert", type=Path, help="server certificate (PEM)")
    serve.add_argument("--tls-key", type=Path, help="server private key (PEM)")
    serve.add_argument(
        "--tls-client-ca", type=Path, help="CA (PEM) that client certificates must chain to"
    )
    serve.add_argument(
        "--allow-destructive",
        action="store_true",
        default=None,
        help="answer fault calls (Kill, Pause, Restart, RestartWithJournalOff, Wipe, Partition)",
    )
    serve.add_argument("--command", help="the managed process's command line (shell-split)")
    serve.add_argument("--workdir", type=Path, help="the managed process's working directory")
    serve.add_argument(
        "--data-dir",
        dest="data_dirs",
        type=Path,
        action="append",
        help="a directory whose contents Wipe deletes (repeatable)",
    )
    serve.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="environment (repeatable)"
    )
    serve.add_argument(
        "--journal-off-command",
        help="command line RestartWithJournalOff runs instead of --command",
    )
    serve.add_argument(
        "--journal-off-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment added for RestartWithJournalOff (repeatable), e.g. BOOKIE_CONF=...",
    )
    serve.add_argument("--log-file", type=Path, help="the managed process's stdout+stderr")
    serve.add_argument("--audit-log", type=Path, help="also write the call log to this file")
    serve.add_argument("--zookeeper", help="HOST:PORT[,...] to read the cluster INSTANCEID from")
    serve.add_argument("--ledgers-root", help="ledgers root in ZooKeeper (default /ledgers)")
    serve.add_argument("--instance-id", help="the cluster INSTANCEID, given instead of read")
    serve.add_argument("--firewall", choices=FIREWALLS, help="partition backend (default auto)")
    serve.add_argument(
        "--no-autostart",
        dest="autostart",
        action="store_false",
        default=None,
        help="do not start the process with the agent (wait for a Start call)",
    )
    serve.add_argument("--stop-timeout", type=float, help="seconds between SIGTERM and SIGKILL")
    return parser


_DIRECT = (
    "listen",
    "allow_insecure_remote",
    "token_file",
    "tls_cert",
    "tls_key",
    "tls_client_ca",
    "allow_destructive",
    "command",
    "workdir",
    "data_dirs",
    "journal_off_command",
    "log_file",
    "audit_log",
    "zookeeper",
    "ledgers_root",
    "instance_id",
    "firewall",
    "autostart",
    "stop_timeout",
)


def merged_settings(args: argparse.Namespace, trailing: Sequence[str]) -> dict[str, Any]:
    """Config-file settings overridden by the flags that were given."""
    settings = read_config_file(args.config) if args.config is not None else {}
    for key in _DIRECT:
        value = getattr(args, key)
        if value is not None:
            settings[key] = value
    if args.env:
        settings["env"] = {**settings.get("env", {}), **parse_assignments(args.env, "--env")}
    if args.journal_off_env:
        settings["journal_off_env"] = {
            **settings.get("journal_off_env", {}),
            **parse_assignments(args.journal_off_env, "--journal-off-env"),
        }
    if trailing:
        if args.command is not None:
            raise InvalidAgentConfig("give the command either with --command or after --")
        settings["command"] = list(trailing)
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    trailing: list[str] = []
    if "--" in arguments:
        split = arguments.index("--")
        arguments, trailing = arguments[:split], arguments[split + 1 :]
    args = build_parser().parse_args(arguments)
    from adapters.agent.server import serve  # grpc is imported only when serving

    try:
        settings = merged_settings(args, trailing)
        config = build_config(settings)
    except InvalidAgentConfig as exc:
        print(f"agent: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    try:
        return serve(config, token_file=Path(settings["token_file"]))
    except AgentError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())

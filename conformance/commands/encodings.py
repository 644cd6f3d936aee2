"""``bkconform encodings compare``: do two BookKeeper releases put the same bytes on the wire
and in ZooKeeper, and does each read the other's metadata?

::

    bkconform encodings compare --bookkeeper 4.17.3,4.18.0 [--zookeeper 3.9.5] [--out DIR]
    bkconform encodings compare --bookkeeper 4.17.4,4.18.0 \\
        --from-captures ../shared/golden,tests/conformance/encodings/captures   # no cluster

For each release in turn (the first is the baseline): a local cluster of it (ZooKeeper, three
bookies behind the suite's frame proxies), the golden "session" scenario with its own Java
client, the raw probes of the error kinds, its znodes from ZooKeeper's log, and every listed
release's shell reading its ledger; then every later release is compared with the first, kind
by kind, byte for byte after normalising what varies between runs (txnIds, the ledger id,
bookie ids and ports, cToken). ``--from-captures`` compares captures saved earlier (the
``captures/`` of an earlier run's output, or the golden directory) instead of running clusters.

Writes ``report.md`` and ``report.json`` (and, live, ``captures/`` in the golden format and the
JVMs' and shells' logs) into ``--out`` (default ``<runs-dir>/<time>-local-encodings``).

Exit codes: 0 every kind compared and every difference explained; 1 a difference no rule
explains, or metadata a reader could not read as written; 2 undecided (a capture failed, a kind
seen in one release only, nothing compared).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from adapters.cluster.errors import ClusterError
from adapters.installations.bookkeeper import resolve_bookkeeper
from conformance.commands.options import add_zookeeper_option, zookeeper_from_args
from conformance.rundir import new_run_dir
from conformance.verdict import Verdict


def register(subparsers: Any) -> None:
    group = subparsers.add_parser(
        "encodings",
        help="compare the bytes two BookKeeper releases put on the wire and in ZooKeeper",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = group.add_subparsers(dest="encodings_command", metavar="{compare}", required=True)
    compare = actions.add_parser(
        "compare",
        help="capture each release's frames and znodes and compare them, kind by kind",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    compare.add_argument(
        "--bookkeeper",
        required=True,
        metavar="VERSION,VERSION[,...]",
        help="the releases, the baseline first (installed from Maven Central on first use)",
    )
    add_zookeeper_option(compare)
    compare.add_argument(
        "--from-captures",
        default=None,
        metavar="DIR[,DIR...]",
        help="compare captures saved in these directories (golden format) instead of running "
        "clusters",
    )
    compare.add_argument("--out", type=Path, default=None, help="the output directory")
    compare.add_argument("--runs-dir", type=Path, default=Path("runs"), help="default ./runs")
    compare.set_defaults(func=run_compare)


def _versions(text: str) -> list[str]:
    versions = [v.strip() for v in text.split(",") if v.strip()]
    if len(versions) < 2 or len(set(versions)) != len(versions):
        raise ValueError(f"--bookkeeper names two or more different releases, not {text!r}")
    return versions


def run_compare(args: argparse.Namespace) -> int:
    # Imported here: the capture loads the cluster, proxy and JVM adapters, which the other
    # commands (and ``bkconform --help``) do not need.
    from conformance.encodings.report import EncodingsReport, summary_lines
    from conformance.encodings.run import LiveSettings, capture_all, judge, load_all

    command = "bkconform " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    try:
        versions = _versions(args.bookkeeper)
    except ValueError as exc:
        print(f"bkconform encodings: {exc}", file=sys.stderr)
        return Verdict.UNDECIDED.exit_code
    out = args.out or new_run_dir(args.runs_dir, "local", "encodings")
    out.mkdir(parents=True, exist_ok=True)
    report = EncodingsReport(tuple(versions), command)
    if args.from_captures:
        directories = [Path(d.strip()) for d in args.from_captures.split(",") if d.strip()]
        captures = load_all(versions, directories, report)
    else:
        try:
            homes = {v: resolve_bookkeeper(v, progress=True) for v in versions}
            zookeeper = zookeeper_from_args(args)
        except (ClusterError, ValueError) as exc:
            print(f"bkconform encodings: {exc}", file=sys.stderr)
            return Verdict.UNDECIDED.exit_code
        settings = LiveSettings(homes, out, zookeeper)
        captures = capture_all(settings, report, lambda line: print(line, flush=True))
    judge(captures, report)
    markdown, data = report.write(out)
    for line in summary_lines(report):
        print(line)
    verdict = report.verdict
    print(f"Verdict: {verdict.value}. Report: {markdown} ({data.name} beside it)")
    return verdict.exit_code


__all__ = ["register", "run_compare"]

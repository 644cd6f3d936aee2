"""Pipelined 1 KiB adds from BookieClient to one reference bookie on loopback.

    .venv/bin/python benchmarks/wire_throughput.py [--adds 50000] [--window 256] [--in-process]

Starts the reference bookie (a subprocess by default, journal on with fsync group commit),
prints adds/s and p50/p99 latency, and stops the bookie on every exit path.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.refbookie.config import config_from_properties
from adapters.refbookie.process import RefBookieProcess, write_conf
from adapters.refbookie.server import BookieServer

PAYLOAD = b"x" * 1024
KEY = master_key(b"bench")


def properties(data_dir: Path, journal: bool) -> dict[str, str]:
    return {
        "bookiePort": "0",
        "advertisedAddress": "127.0.0.1",
        "journalDirectories": str(data_dir / "journal"),
        "ledgerDirectories": str(data_dir / "ledgers"),
        "journalWriteData": "true" if journal else "false",
    }


async def run_adds(port: int, adds: int, window: int) -> list[float]:
    bodies = [
        package_entry(DigestType.CRC32C, b"bench", 1, e, e - 1, (e + 1) * len(PAYLOAD), PAYLOAD)
        for e in range(adds)
    ]
    latencies: list[float] = []
    next_entry = iter(range(adds))
    async with await BookieClient.connect("127.0.0.1", port, request_timeout=60) as bookie:

        async def worker() -> None:
            # ``window`` workers each keep one add in flight: ``window`` adds are pipelined.
            for entry_id in next_entry:
                started = time.perf_counter()
                result = await bookie.add(1, entry_id, KEY, bodies[entry_id])
                latencies.append(time.perf_counter() - started)
                if result.status is not StatusCode.EOK:
                    raise RuntimeError(f"add {entry_id}: {result.status.name}")

        await asyncio.gather(*(worker() for _ in range(window)))
    return latencies


def report(latencies: list[float], elapsed: float) -> None:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000
    print(f"adds: {len(ordered)}  payload: {len(PAYLOAD)} B  elapsed: {elapsed:.2f} s")
    print(f"throughput: {len(ordered) / elapsed:,.0f} adds/s")
    print(f"latency: p50 {p50:.2f} ms  p99 {p99:.2f} ms")


async def in_process(data_dir: Path, args: argparse.Namespace) -> None:
    server = BookieServer(config_from_properties(properties(data_dir, not args.no_journal)))
    await server.start()
    try:
        started = time.perf_counter()
        latencies = await run_adds(server.port, args.adds, args.window)
        report(latencies, time.perf_counter() - started)
    finally:
        await server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adds", type=int, default=50_000)
    parser.add_argument("--window", type=int, default=256, help="outstanding adds")
    parser.add_argument("--in-process", action="store_true", help="bookie in this event loop")
    parser.add_argument("--no-journal", action="store_true", help="journalWriteData=false")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wire-bench-") as tmp:
        data_dir = Path(tmp)
        mode = "in-process" if args.in_process else "subprocess"
        journal = "off" if args.no_journal else "on (fsync group commit)"
        print(f"reference bookie: {mode}, journal {journal}, window {args.window}")
        if args.in_process:
            asyncio.run(in_process(data_dir, args))
            return 0
        conf = write_conf(data_dir / "bk_server.conf", properties(data_dir, not args.no_journal))
        with RefBookieProcess(conf, data_dir / "bookie.log", log_level="WARNING") as bookie:
            assert bookie.port is not None
            started = time.perf_counter()
            latencies = asyncio.run(run_adds(bookie.port, args.adds, args.window))
            report(latencies, time.perf_counter() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

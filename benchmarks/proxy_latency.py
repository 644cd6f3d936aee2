"""Added latency of the frame proxy: one-at-a-time reads, direct vs through the proxy, loopback.

    .venv/bin/python benchmarks/proxy_latency.py [--reads 3000] [--size 1024]

Starts a reference bookie subprocess and a ProxyGroup (background loop thread, as the engine
uses it), writes one entry, then times ``--reads`` sequential reads of it on each path,
alternating rounds so that machine noise hits both. A read is two frames (request and
response), so the added latency per frame is half the difference of the medians. The goal in
issue 8 is under 1 ms per frame. Prints numbers only; never asserts on time.
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
from adapters.netproxy import ProxyGroup
from adapters.refbookie.process import RefBookieProcess, write_conf

PW = b"bench"
KEY = master_key(PW)
LEDGER = 1
ROUNDS = 10


def properties(data_dir: Path) -> dict[str, str]:
    return {
        "bookiePort": "0",
        "advertisedAddress": "127.0.0.1",
        "journalDirectories": str(data_dir / "journal"),
        "ledgerDirectories": str(data_dir / "ledgers"),
    }


async def timed_reads(client: BookieClient, count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        result = await client.read(LEDGER, 0)
        latencies.append(time.perf_counter() - started)
        if result.status is not StatusCode.EOK:
            raise RuntimeError(f"read: {result.status.name}")
    return latencies


async def measure(bookie_port: int, proxy_port: int, reads: int, size: int) -> None:
    body = package_entry(DigestType.CRC32C, PW, LEDGER, 0, -1, size, b"x" * size)
    async with (
        await BookieClient.connect("127.0.0.1", bookie_port) as direct,
        await BookieClient.connect("127.0.0.1", proxy_port) as proxied,
    ):
        if (await direct.add(LEDGER, 0, KEY, body)).status is not StatusCode.EOK:
            raise RuntimeError("could not write the entry to read")
        await timed_reads(direct, 200)  # warm up both paths
        await timed_reads(proxied, 200)
        direct_times: list[float] = []
        proxied_times: list[float] = []
        per_round = max(1, reads // ROUNDS)
        for _ in range(ROUNDS):
            direct_times += await timed_reads(direct, per_round)
            proxied_times += await timed_reads(proxied, per_round)
    direct_ms = statistics.median(direct_times) * 1000
    proxied_ms = statistics.median(proxied_times) * 1000
    added = proxied_ms - direct_ms
    print(f"reads per path: {len(direct_times)}  entry: {size} B  (a read = 2 frames)")
    print(f"direct   median round trip: {direct_ms:.3f} ms")
    print(f"proxied  median round trip: {proxied_ms:.3f} ms  ({proxied_ms / direct_ms:.2f}x)")
    print(f"added per round trip: {added:.3f} ms; per frame: {added / 2:.3f} ms (goal < 1 ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reads", type=int, default=3000)
    parser.add_argument("--size", type=int, default=1024, help="entry payload bytes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        data_dir = Path(tmp)
        conf = write_conf(data_dir / "bk_server.conf", properties(data_dir))
        with (
            RefBookieProcess(conf, data_dir / "bookie.log", log_level="WARNING") as bookie,
            ProxyGroup() as group,
        ):
            assert bookie.port is not None
            proxy = group.add("b1", "127.0.0.1", bookie.port)
            asyncio.run(measure(bookie.port, proxy.port, args.reads, args.size))
            print(f"frames logged by the proxy: {len(group.frames())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

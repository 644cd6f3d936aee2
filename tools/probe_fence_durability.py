"""Is a bookie's fence durable across a crash when the bookie holds none of the ledger's entries?

One bookie of a release (installed from Maven Central), our wire client, three ledgers:

- ``fenced, never written``: a fence read (the recovery's), then the old writer's add;
- ``fenced, never written, restarted``: a fence read, a crash and a restart with the bookie's
  data, then the old writer's add;
- ``written, fenced, restarted`` (the control): an add, a fence read, the restart, an add.

An add after a fence must be refused (``EFENCED``). On 4.17.3 the second is accepted: the
fence of a ledger the bookie never stored an entry of is not in its journal's replay (the
master key of such a ledger is never journalled, and the replay of the fence entry needs it),
so the restart loses it, while the fencing reads counted the bookie's ``NoSuchEntry`` answer
towards the fencing quorum. docs/findings/fence-lost-on-restart.md.

    .venv/bin/python tools/probe_fence_durability.py --bookkeeper 4.17.3

Exit 0 when every fence held, 1 when a fence was lost, 2 when the probe could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import package_entry
from adapters.bookkeeper.errors import WireError
from adapters.cluster.local import LocalCluster, LocalClusterOptions
from adapters.cluster.provider import Node
from adapters.installations.bookkeeper import BookKeeperInstallError, resolve_bookkeeper
from adapters.installations.errors import BookKeeperNotFound
from conformance.targets.cluster_target import DIGEST, KEY, PASSWORD

T = TypeVar("T")
#: Every request's timeout (s).
REQUEST_TIMEOUT_S = 10.0


def _entry(ledger: int, entry: int) -> bytes:
    payload = b"probe %d" % entry
    return package_entry(DIGEST, PASSWORD, ledger, entry, entry - 1, len(payload), payload)


def _on(address: tuple[str, int], call: Callable[[BookieClient], Awaitable[T]]) -> T:
    async def run() -> T:
        client = await BookieClient.connect(*address, request_timeout=REQUEST_TIMEOUT_S)
        try:
            return await call(client)
        finally:
            await client.close()

    return asyncio.run(run())


def add(address: tuple[str, int], ledger: int, entry: int) -> str:
    """The old writer's add (no recovery flag): the bookie's status."""
    return _on(address, lambda c: c.add(ledger, entry, KEY, _entry(ledger, entry))).status.name


def fence(address: tuple[str, int], ledger: int) -> str:
    """The recovery's fencing read of the last entry: the bookie's status."""
    return _on(address, lambda c: c.read(ledger, -1, fence=True, master_key=KEY)).status.name


def probe(cluster: LocalCluster) -> dict[str, str]:
    """Case -> the status of the old writer's add after the fence (``EFENCED``: it held)."""
    ((bookie_id, address),) = cluster.endpoints().bookies.items()
    results = {}
    fence(address, 101)
    results["fenced, never written"] = add(address, 101, 0)
    fence(address, 102)
    add(address, 103, 0)
    fence(address, 103)
    node = Node.bookie(bookie_id)
    cluster.crash(node)
    cluster.restart(node)
    address = cluster.endpoints().bookies[bookie_id]
    results["fenced, never written, restarted"] = add(address, 102, 0)
    results["written, fenced, restarted"] = add(address, 103, 1)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bookkeeper", default="4.17.3", help="a release or a home")
    args = parser.parse_args(argv)
    try:
        home = resolve_bookkeeper(args.bookkeeper)
        options = LocalClusterOptions(
            bookies=1, bookkeeper_home=home, use_bookkeeper_home_env=False
        )
        with LocalCluster(options) as cluster:
            results = probe(cluster)
    except (BookKeeperInstallError, BookKeeperNotFound, WireError, OSError) as exc:
        print(f"probe_fence_durability: {exc}", file=sys.stderr)
        return 2
    for case, status in results.items():
        print(f"{case}: the old writer's add -> {status}")
    lost = [case for case, status in results.items() if status != "EFENCED"]
    print("fence lost: " + ", ".join(lost) if lost else "every fence held")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())

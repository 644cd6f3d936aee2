"""A fresh ZooKeeper ensemble whose quorum traffic passes the quorum proxy: what the known-bug
scenarios (:mod:`.known_bugs`) and the guided search's schedules (:mod:`.guided`) run on."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from adapters.cluster.zookeeper import ZooKeeperEnsemble, ZooKeeperTuning
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.zkquorum.proxy import QuorumProxy

#: Holds longer than ``syncLimit`` ticks make a follower drop its connection (the PINGs wait
#: behind the held packet): 40 ticks of 250 ms leave a hold 10 s.
TUNING = ZooKeeperTuning(sync_limit=40)


@contextlib.contextmanager
def proxied_ensemble(
    install: ZooKeeperInstall, work_dir: Path | None, label: str, servers: int = 3
) -> Iterator[tuple[ZooKeeperEnsemble, QuorumProxy, Path]]:
    """An ensemble of ``servers`` of ``install`` routed through a running proxy, in
    ``work_dir`` (None: a temporary directory), not started yet (the caller starts it, so that
    it decides what a failed start means), stopped on every exit path."""
    with tempfile.TemporaryDirectory(prefix=f"bkconform-{label}-") as scratch:
        base = work_dir or Path(scratch)
        with QuorumProxy() as proxy:
            ensemble = ZooKeeperEnsemble(
                install, base, size=servers, tuning=TUNING, quorum_proxy=proxy
            )
            try:
                yield ensemble, proxy, base
            finally:
                ensemble.stop()


__all__ = ["TUNING", "proxied_ensemble"]

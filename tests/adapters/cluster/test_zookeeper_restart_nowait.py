"""``ZooKeeperEnsemble.restart(wait=False)``: start a server and return while it joins."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.zookeeper import locate_zookeeper

pytestmark = pytest.mark.cluster


def test_restart_without_waiting_returns_before_the_server_serves(work_dir: Path) -> None:
    ensemble = ZooKeeperEnsemble(locate_zookeeper(), work_dir, size=3)
    try:
        ensemble.start()
        follower = next(n for n, m in ensemble.modes().items() if m == "follower")
        ensemble.crash(follower)
        started = time.monotonic()
        ensemble.restart(follower, wait=False)
        returned = time.monotonic() - started
        process = ensemble.servers[follower].process
        assert process is not None and process.is_running()
        # A JVM cannot start and sync in this time; the call did not wait for it. Either half
        # suffices: a slower machine makes the JVM's start and sync (seconds, against a 0.2 s
        # probe) slower too, so the server does not serve yet however long the call took.
        assert ensemble.server(follower).mode(timeout=0.2) is None or returned < 0.5
        ensemble.wait_until_serving([follower], 60)
        assert ensemble.modes()[follower] == "follower"
    finally:
        ensemble.stop()

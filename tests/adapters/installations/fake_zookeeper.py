"""An unpacked ZooKeeper binary distribution, as much of one as the locator reads (a server jar
holding ``QuorumPeerMain``): for the tests that name a ZooKeeper without starting it."""

from __future__ import annotations

import zipfile
from pathlib import Path

from adapters.installations.zookeeper import MAIN_CLASS


def zookeeper_distribution(home: Path, version: str) -> Path:
    jar = home / "lib" / f"zookeeper-{version}.jar"
    jar.parent.mkdir(parents=True)
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr(MAIN_CLASS.replace(".", "/") + ".class", b"x")
    return home

"""Locating a ZooKeeper installation: the classpath that starts a ZooKeeper server.

The locator looks, in order, at:

1. ``ZOOKEEPER_HOME``: ``$ZOOKEEPER_HOME/lib/*.jar`` (and top-level jars), with ``conf/``
   first on the classpath so the distribution's own logging configuration applies;
2. Debian's package (``/usr/share/zookeeper``, whose jars live there or in ``/usr/share/java``);
3. the ZooKeeper jar inside the installed ``pyspark`` wheel (``<pyspark>/jars/*``), which is
   always there because the project depends on pyspark.

A candidate counts only if one of its jars contains ``QuorumPeerMain``, the class the local
provider runs (:mod:`adapters.cluster.zookeeper`).
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.installations.errors import ZooKeeperNotFound

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_MAIN_CLASS_ENTRY = MAIN_CLASS.replace(".", "/") + ".class"
DEBIAN_HOME = Path("/usr/share/zookeeper")
DEBIAN_JAVA_DIR = Path("/usr/share/java")


@dataclass(frozen=True)
class ZooKeeperInstall:
    """A runnable ZooKeeper: the classpath to start ``QuorumPeerMain`` with, and its origin."""

    classpath: tuple[str, ...]
    source: str

    def describe(self) -> str:
        return f"ZooKeeper from {self.source}"


def contains_quorum_peer_main(jar: Path) -> bool:
    """True when ``jar`` is a readable jar holding ``QuorumPeerMain``."""
    try:
        with zipfile.ZipFile(jar) as archive:
            return _MAIN_CLASS_ENTRY in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _jars(*directories: Path) -> list[Path]:
    found: list[Path] = []
    for directory in directories:
        if directory.is_dir():
            found.extend(sorted(directory.glob("*.jar")))
    return found


def _with_main_class(jars: Iterable[Path]) -> bool:
    return any(contains_quorum_peer_main(jar) for jar in jars if "zookeeper" in jar.name)


def _from_home(home: Path) -> ZooKeeperInstall | None:
    jars = _jars(home, home / "lib")
    if not _with_main_class(jars):
        return None
    conf = home / "conf"
    entries = ([str(conf)] if conf.is_dir() else []) + [str(jar) for jar in jars]
    return ZooKeeperInstall(tuple(entries), f"ZOOKEEPER_HOME={home}")


def _from_debian(home: Path, java_dir: Path) -> ZooKeeperInstall | None:
    own = _jars(home, home / "lib")
    shared = _jars(java_dir)
    if not _with_main_class(own + shared):
        return None
    # Debian splits the jar and its dependencies into /usr/share/java.
    return ZooKeeperInstall(
        tuple(str(jar) for jar in own + shared), f"Debian package ({home}, {java_dir})"
    )


def pyspark_jars_dir() -> Path | None:
    """The ``jars`` directory of the installed pyspark wheel, found without importing it."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _from_pyspark(jars_dir: Path) -> ZooKeeperInstall | None:
    if not _with_main_class(_jars(jars_dir)):
        return None
    # Spark's jar set holds ZooKeeper's runtime dependencies (netty, slf4j, log4j2, jute).
    return ZooKeeperInstall((str(jars_dir / "*"),), f"pyspark wheel ({jars_dir})")


def locate_zookeeper(
    environ: Mapping[str, str] | None = None,
    *,
    debian_home: Path = DEBIAN_HOME,
    debian_java_dir: Path = DEBIAN_JAVA_DIR,
    pyspark_jars: Path | None = None,
) -> ZooKeeperInstall:
    """Find a runnable ZooKeeper (see the module docstring for the search order)."""
    env = os.environ if environ is None else environ
    tried = []
    home = env.get("ZOOKEEPER_HOME")
    if home:
        found = _from_home(Path(home))
        if found is not None:
            return found
        # An explicit setting that does not work is an error, not a reason to look elsewhere.
        raise ZooKeeperNotFound(
            f"ZOOKEEPER_HOME={home} holds no zookeeper jar with {MAIN_CLASS} "
            "in its lib/ directory; point it at an unpacked apache-zookeeper-X.Y.Z-bin "
            "distribution or unset it"
        )
    tried.append("ZOOKEEPER_HOME (unset)")
    found = _from_debian(debian_home, debian_java_dir)
    if found is not None:
        return found
    tried.append(f"Debian's {debian_home}")
    jars_dir = pyspark_jars if pyspark_jars is not None else pyspark_jars_dir()
    if jars_dir is not None:
        found = _from_pyspark(jars_dir)
        if found is not None:
            return found
        tried.append(f"pyspark's {jars_dir}")
    else:
        tried.append("pyspark (not installed)")
    raise ZooKeeperNotFound(
        "no ZooKeeper found; tried " + ", ".join(tried) + ". Set ZOOKEEPER_HOME to an "
        "unpacked ZooKeeper binary distribution, `apt-get install zookeeper`, or "
        "`pip install pyspark` (its wheel ships a ZooKeeper jar)"
    )


__all__ = [
    "DEBIAN_HOME",
    "DEBIAN_JAVA_DIR",
    "MAIN_CLASS",
    "ZooKeeperInstall",
    "contains_quorum_peer_main",
    "locate_zookeeper",
    "pyspark_jars_dir",
]

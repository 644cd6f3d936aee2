"""A Maven repository and settings of the tests' own: a directory laid out as a remote
repository (its ``maven-metadata.xml`` files), served as ``file://`` or over HTTP by a server in
a thread, and a ``$HOME`` whose ``.m2/settings.xml`` mirrors ``central`` to it. With them the
installers ask no real repository: a test never needs the network."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

#: Test data, not facts about any repository: what the tests' repository lists.
BOOKKEEPER_VERSIONS = ("4.11.1", "4.14.7", "4.16.6", "4.17.0", "4.17.2", "4.17.3", "4.18.2")
ZOOKEEPER_VERSIONS = ("3.6.3", "3.8.4", "3.9.2", "3.9.3", "3.9.5")
JACOCO_VERSIONS = ("0.8.14", "0.8.15", "0.8.16")


def metadata_xml(group: str, artifact: str, versions: Iterable[str]) -> str:
    listed = "".join(f"\n      <version>{version}</version>" for version in versions)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<metadata>
  <groupId>{group}</groupId>
  <artifactId>{artifact}</artifactId>
  <versioning>
    <versions>{listed}
    </versions>
  </versioning>
</metadata>
"""


def write_metadata(repository: Path, group: str, artifact: str, versions: Iterable[str]) -> Path:
    path = repository / group.replace(".", "/") / artifact / "maven-metadata.xml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(metadata_xml(group, artifact, versions))
    return path


def remote_repository(root: Path) -> Path:
    """A remote repository listing the test versions of BookKeeper, ZooKeeper and JaCoCo."""
    write_metadata(root, "org.apache.bookkeeper", "bookkeeper-server", BOOKKEEPER_VERSIONS)
    write_metadata(root, "org.apache.zookeeper", "zookeeper", ZOOKEEPER_VERSIONS)
    for artifact in ("org.jacoco.agent", "org.jacoco.cli"):
        write_metadata(root, "org.jacoco", artifact, JACOCO_VERSIONS)
    return root


def settings_xml(url: str, *, mirror_of: str = "*", extra: str = "") -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror>
      <id>tests</id>
      <mirrorOf>{mirror_of}</mirrorOf>
      <url>{url}</url>
    </mirror>
  </mirrors>{extra}
</settings>
"""


def use_repository(monkeypatch: pytest.MonkeyPatch, home: Path, url: str) -> Path:
    """Make ``home`` the ``$HOME`` whose settings mirror every repository to ``url``."""
    (home / ".m2").mkdir(parents=True, exist_ok=True)
    (home / ".m2" / "settings.xml").write_text(settings_xml(url))
    monkeypatch.setenv("HOME", str(home))
    return home


class _Handler(http.server.SimpleHTTPRequestHandler):
    delay = 0.0

    def do_GET(self) -> None:
        if self.delay:
            time.sleep(self.delay)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the tests' output is theirs


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True  # a delayed answer never holds the test up at shutdown

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up (a timeout test) is expected, not news


@contextlib.contextmanager
def http_repository(root: Path, *, delay: float = 0.0) -> Iterator[str]:
    """Serve ``root`` over HTTP on a loopback port (each answer after ``delay`` seconds);
    yields its URL."""
    handler = functools.partial(type("Handler", (_Handler,), {"delay": delay}), directory=str(root))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    """A loopback URL nothing listens on (connections are refused at once)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/maven2"

"""The podman API service that bkconform starts outlives the command that started it: it must
not depend on that command's working directory (a test's tmp dir, a CI clone), which may be
deleted while the service runs."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from adapters.cluster.container_engine import (
    ContainerEngine,
    EnginePaths,
    start_service,
    stop_service,
)
from adapters.cluster.container_images import ImageBuilder

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_the_service_runs_containers_after_its_starting_directory_is_deleted(
    container_engine: ContainerEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = ImageBuilder(container_engine).ensure_all().base
    # A short directory: the service's unix socket path must stay under 108 bytes.
    root = Path(tempfile.mkdtemp(prefix="bkc-svc-"))
    try:
        paths = EnginePaths(root / "engine")
        paths.directory.mkdir()
        started_in = root / "gone"
        started_in.mkdir()
        monkeypatch.chdir(started_in)
        engine, pid = start_service(paths)
        try:
            monkeypatch.chdir(root)
            started_in.rmdir()
            assert os.readlink(f"/proc/{pid}/cwd") == str(paths.directory)
            client = engine.client()
            try:
                # Detached, then waited for: a foreground run also reads the container's logs,
                # and podman's logs endpoint once hung for the whole 60 s client timeout on a
                # container that had already exited (a fresh-clone CI), which says nothing
                # about the service's directory.
                container = client.containers.run(image, ["true"], detach=True)
                try:
                    assert container.wait(timeout=60)["StatusCode"] == 0
                finally:
                    container.remove(force=True)
            finally:
                client.close()
        finally:
            assert stop_service(paths)
    finally:
        shutil.rmtree(root, ignore_errors=True)

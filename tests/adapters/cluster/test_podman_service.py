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
                assert client.containers.run(image, ["true"], remove=True) == b""
            finally:
                client.close()
        finally:
            assert stop_service(paths)
    finally:
        shutil.rmtree(root, ignore_errors=True)

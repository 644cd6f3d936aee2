"""A regular (non-editable) install of bkconform works outside the source tree.

A fresh venv in a temporary directory gets ``pip install`` of a copy of the project (so no
``build/`` or ``*.egg-info`` lands in the working tree) and pytest; then, from directories that
are not the checkout: ``bkconform --help`` runs, ``bkconform run`` finds Defect 1 on the model,
``pytest --pyargs conformance`` passes on the model, an unrelated pytest run still passes with
our plugin installed, and the container files (``docker/``) are found in the installed package
and the reference-bookie image's wheels can be staged from it. Uses the pip cache: the first
run downloads the dependencies (Spark among them), later ones do not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: What a copy of the project leaves out: environments, caches, build and run output.
NOT_COPIED = shutil.ignore_patterns(
    ".git",
    ".venv",
    ".tox",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
    "runs",
)

CHECK_INSTALLED_DOCKER = """\
import os, sys
from pathlib import Path
from adapters.cluster.container_engine import ContainerEngine
from adapters.cluster.container_images import (
    PACKAGED_DOCKER_DIR, ImageBuilder, docker_dir, local_image_tags,
)

found = docker_dir()
assert found == PACKAGED_DOCKER_DIR, found
for name in ("base", "zookeeper", "refbookie"):
    assert (found / name / "Containerfile").is_file(), name
assert (found / "official" / "compose.yaml").is_file()
assert os.access(found / "refbookie" / "docker-entrypoint.sh", os.X_OK)
print(local_image_tags())
wheels = Path(sys.argv[1])
wheels.mkdir()
engine = ContainerEngine(docker_host="unix:///nonexistent.sock", cli="podman")
ImageBuilder(engine)._stage_wheels(wheels)
print(sorted(path.name for path in wheels.iterdir()))
"""


def _run(
    command: list[str | Path], cwd: Path, timeout: float, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _build_output(root: Path) -> set[str]:
    """What a build in ``root`` would leave (an editable install's egg-info may predate us)."""
    return {path.name for pattern in ("build", "dist", "*.egg-info") for path in root.glob(pattern)}


def _output(done: subprocess.CompletedProcess[str]) -> str:
    out, err = done.stdout[-6000:], done.stderr[-6000:]
    return f"exit {done.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"


@pytest.mark.slow
def test_a_pip_installed_bkconform_works_outside_the_checkout(tmp_path: Path) -> None:
    started = time.monotonic()
    build_output_before = _build_output(REPO)
    # Nothing of the checkout or of this test's environment leaks in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=NOT_COPIED)
    venv = tmp_path / "venv"
    done = _run([sys.executable, "-m", "venv", venv], tmp_path, 300, env)
    assert done.returncode == 0, _output(done)
    python, bkconform = venv / "bin" / "python", venv / "bin" / "bkconform"
    done = _run([python, "-m", "pip", "install", "-q", source, "pytest"], tmp_path, 1800, env)
    assert done.returncode == 0, _output(done)
    installed = time.monotonic()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    done = _run([bkconform, "--help"], elsewhere, 120, env)
    assert done.returncode == 0, _output(done)
    assert "run" in done.stdout

    # Defect 1 on the model; the budget only bounds a loaded machine (it stops at the finding).
    search = ["--no-recovery-read-fence", "--seed", "0", "--seconds", "120", "--fresh", "--quiet"]
    done = _run([bkconform, "run", *search, "--runs-dir", tmp_path / "runs"], elsewhere, 900, env)
    assert done.returncode == 1, _output(done)
    assert "NoDivergenceBetweenClientAndMetaData" in done.stdout

    properties = ["--pyargs", "conformance", "--bk-target", "model", "--bk-profile", "ci"]
    pytest_run: list[str | Path] = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = _run([*pytest_run, *properties, "--bk-seconds", "3"], elsewhere, 900, env)
    assert done.returncode == 0, _output(done)
    assert "10 passed" in done.stdout

    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    (unrelated / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    done = _run([*pytest_run, "test_ok.py"], unrelated, 300, env)
    assert done.returncode == 0, _output(done)
    assert "1 passed" in done.stdout
    done = _run([*pytest_run, "--help"], unrelated, 300, env)
    assert "--bk-target" in done.stdout, _output(done)  # the plugin was loaded

    wheels = tmp_path / "wheels"
    done = _run([python, "-c", CHECK_INSTALLED_DOCKER, wheels], elsewhere, 900, env)
    assert done.returncode == 0, _output(done)
    staged = {path.name.split("-")[0].lower() for path in wheels.iterdir()}
    assert {"bkconform", "kazoo", "protobuf", "crc32c"} <= staged, staged

    # Every data file of the packages is installed with them (generated stubs, .proto, POMs).
    where = "import adapters, pathlib; print(pathlib.Path(adapters.__file__).parent.parent)"
    done = _run([python, "-c", where], elsewhere, 120, env)
    assert done.returncode == 0, _output(done)
    site = Path(done.stdout.strip())
    data = [
        path.relative_to(source)
        for package in ("model", "adapters", "conformance")
        for path in (source / package).rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc")
    ]
    assert data and [path for path in data if not (site / path).is_file()] == []

    assert _build_output(REPO) == build_output_before, "the install wrote into the checkout"
    print(
        f"install {installed - started:.0f} s, checks {time.monotonic() - installed:.0f} s",
        file=sys.stderr,
    )

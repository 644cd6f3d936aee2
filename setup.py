"""One build step pyproject.toml cannot declare: ship ``docker/`` inside the wheel.

``docker/`` (the Containerfiles, entrypoints and compose file) stays at the top of the source
tree, outside the Python packages, so package data cannot reach it. This copies it to
``adapters/cluster/container_files/`` in the build, where
``adapters.cluster.container_images.docker_dir()`` finds it in an installed wheel. An editable
install builds nothing: there ``docker_dir()`` reads the checkout's ``docker/`` directly.
Everything else about the build is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DOCKER_SOURCE = Path(__file__).resolve().parent / "docker"
#: Where the wheel carries it (adapters.cluster.container_images.PACKAGED_DOCKER_DIR).
DOCKER_IN_WHEEL = Path("adapters", "cluster", "container_files")


class BuildPyWithDocker(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if not (DOCKER_SOURCE / "refbookie" / "Containerfile").is_file():
            raise FileNotFoundError(f"{DOCKER_SOURCE}: the container files to ship are missing")
        target = Path(self.build_lib) / DOCKER_IN_WHEEL
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(DOCKER_SOURCE, target, ignore=shutil.ignore_patterns("__pycache__"))

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        target = Path(self.build_lib) / DOCKER_IN_WHEEL
        if target.is_dir():
            outputs += [str(path) for path in sorted(target.rglob("*")) if path.is_file()]
        return outputs


setup(cmdclass={"build_py": BuildPyWithDocker})

"""Reaching a container engine: a Docker engine if one answers, else podman's Docker API.

No Docker engine runs on the machines CI uses, and no image can be pulled there, but podman
(with ``runc``) works as root once it reads a ``containers.conf`` that empties the default
ulimits (``crun`` and the ulimits podman sets by default both fail there). That file is the
project's own: :func:`ensure_engine` writes it into a state directory and hands it to podman
through ``CONTAINERS_CONF``; nothing under ``/etc`` is touched.

``podman system service --time=0 unix://SOCKET`` then serves the Docker API, which the
``docker`` SDK and testcontainers speak. Its pid is recorded next to the socket, so that
:func:`stop_service` (``bkconform docker teardown``) stops exactly that process and no other.

State directory: ``$BKCONFORM_HOME/docker`` (default ``~/.bkconform/docker``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.cluster.errors import ClusterError
from adapters.user_state import bkconform_home

#: What podman needs on this machine kind (see the module docstring); written, never merged.
CONTAINERS_CONF = """\
# Written by bkconform (adapters/cluster/container_engine.py); passed via CONTAINERS_CONF.
[containers]
# Podman's default ulimits cannot be set here (setrlimit fails): inherit the host's.
default_ulimits = []

[engine]
# crun fails on this host's hybrid cgroup setup; runc works.
runtime = "runc"
"""

#: Debian packages :func:`ensure_engine` installs (``apt-get install --no-install-recommends``)
#: when they are missing. Bookworm's podman 4.3 networks through CNI
#: (``containernetworking-plugins``, the first alternative of its ``container-network-stack``
#: dependency); names on a user-defined network resolve only with the ``dnsname`` CNI plugin,
#: which nothing depends on or even recommends: without it ``zk1`` does not resolve and no
#: ensemble forms. ``iptables``: packet-filter partitions (from the host, in a container's
#: network namespace) and CNI's port mappings. ``debootstrap`` and ``debian-archive-keyring``
#: (which it verifies the archive with, only recommended): the Debian base image.
ENGINE_PACKAGES = (
    "podman",
    "runc",
    "containernetworking-plugins",
    "golang-github-containernetworking-plugin-dnsname",
    "iptables",
    "debootstrap",
    "debian-archive-keyring",
)
#: The DNS server of each podman network backend (``podman info``'s ``NetworkBackend``).
DNS_PACKAGES = {
    "cni": "golang-github-containernetworking-plugin-dnsname",
    "netavark": "aardvark-dns",
}
#: Commands that stand for a package where dpkg cannot be asked (not Debian).
PACKAGE_COMMANDS = {
    "podman": "podman",
    "runc": "runc",
    "iptables": "iptables",
    "nftables": "nft",
    "debootstrap": "debootstrap",
    "openssl": "openssl",
    "iproute2": "ip",
}
APT_TIMEOUT = 900.0
DOCKER_SOCKETS = (Path("/var/run/docker.sock"), Path("/run/docker.sock"))
SERVICE_START_TIMEOUT = 30.0
PING_TIMEOUT = 5.0


class ContainerEngineError(ClusterError):
    """No container engine can be reached or set up."""

    retriable = False


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the engine's socket, pid file, log and ``containers.conf`` live."""
    return bkconform_home(environ) / "docker"


@dataclass(frozen=True)
class EnginePaths:
    """The files of the podman API service this project runs."""

    directory: Path

    @property
    def containers_conf(self) -> Path:
        return self.directory / "containers.conf"

    @property
    def socket(self) -> Path:
        return self.directory / "podman.sock"

    @property
    def pid_file(self) -> Path:
        return self.directory / "podman-service.pid"

    @property
    def log_file(self) -> Path:
        return self.directory / "podman-service.log"

    @classmethod
    def default(cls) -> EnginePaths:
        return cls(state_dir())


@dataclass(frozen=True)
class ContainerEngine:
    """How to reach one engine: its Docker API address and its command-line tool.

    ``cli`` is ``podman`` or ``docker`` (image builds go through it: the compat API's build
    endpoint is less complete than either CLI); ``cli_env`` is added to its environment.
    """

    docker_host: str
    cli: str
    cli_env: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_podman(self) -> bool:
        return Path(self.cli).name == "podman"

    def client_environment(self) -> dict[str, str]:
        """What ``docker.from_env(environment=...)`` and testcontainers need."""
        return {"DOCKER_HOST": self.docker_host}

    def client(self, timeout: float = 60.0) -> Any:
        """A ``docker.DockerClient`` for this engine (the caller closes it)."""
        import docker

        return docker.DockerClient(base_url=self.docker_host, timeout=int(timeout))

    def run_cli(
        self,
        args: Sequence[str],
        *,
        timeout: float,
        input_file: Path | None = None,
        log: Callable[[str], None] | None = None,
    ) -> str:
        """Run ``cli args``; return its output, or raise with the output's tail."""
        command = [self.cli, *args]
        if input_file is None:
            return run_command(command, timeout=timeout, env=self.cli_env, log=log)
        with input_file.open("rb") as stdin:
            return run_command(command, timeout=timeout, env=self.cli_env, stdin=stdin, log=log)


def run_command(
    command: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    stdin: Any = subprocess.DEVNULL,
    log: Callable[[str], None] | None = None,
) -> str:
    """Run ``command`` (``env`` added to ours) within ``timeout``; its output, or
    :class:`ContainerEngineError` with the output's tail (or the timeout) and the command."""
    try:
        completed = subprocess.run(
            list(command),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ContainerEngineError(
            f"{' '.join(command)} did not finish within {timeout:.0f} s"
        ) from exc
    output = completed.stdout.decode("utf-8", errors="replace")
    if log is not None:
        for line in output.splitlines():
            log(line)
    if completed.returncode != 0:
        tail = "\n".join(output.splitlines()[-30:])
        raise ContainerEngineError(
            f"{' '.join(command)} failed with exit code {completed.returncode}:\n{tail}"
        )
    return output


def ping(docker_host: str, timeout: float = PING_TIMEOUT) -> bool:
    """True when a Docker API answers at ``docker_host``."""
    from docker.errors import DockerException

    import docker

    try:
        client = docker.DockerClient(base_url=docker_host, timeout=max(1, int(timeout)))
    except DockerException:
        return False
    try:
        return bool(client.ping())
    except (DockerException, OSError, ValueError):
        # requests' errors derive from OSError.
        return False
    finally:
        client.close()


def podman_engine(paths: EnginePaths) -> ContainerEngine:
    podman = shutil.which("podman") or "podman"
    return ContainerEngine(
        docker_host=f"unix://{paths.socket}",
        cli=podman,
        cli_env={"CONTAINERS_CONF": str(paths.containers_conf)},
    )


def find_engine(
    paths: EnginePaths | None = None, environ: Mapping[str, str] | None = None
) -> ContainerEngine | None:
    """An engine that answers right now, or None.

    In order: ``DOCKER_HOST`` when set, a Docker engine on its usual socket, then this
    project's podman service. A Docker engine needs the ``docker`` CLI for image builds.
    """
    paths = paths or EnginePaths.default()
    env = os.environ if environ is None else environ
    ours = podman_engine(paths)
    if env.get("DOCKER_HOST"):
        host = env["DOCKER_HOST"]
        if host == ours.docker_host:
            return ours if ping(host) else None
        if ping(host):
            return _engine_at(host, paths)
    for socket_path in DOCKER_SOCKETS:
        if socket_path.exists() and ping(f"unix://{socket_path}"):
            return _engine_at(f"unix://{socket_path}", paths)
    if paths.socket.exists() and ping(ours.docker_host):
        return ours
    return None


def _engine_at(docker_host: str, paths: EnginePaths) -> ContainerEngine:
    docker_cli = shutil.which("docker")
    if docker_cli is not None:
        return ContainerEngine(docker_host=docker_host, cli=docker_cli)
    # podman's own socket (e.g. podman.socket from systemd) with no docker CLI around.
    cli_env = {"CONTAINER_HOST": docker_host}
    if paths.containers_conf.exists():
        cli_env["CONTAINERS_CONF"] = str(paths.containers_conf)
    return ContainerEngine(
        docker_host=docker_host, cli=shutil.which("podman") or "podman", cli_env=cli_env
    )


def package_installed(name: str, timeout: float = 10.0) -> bool | None:
    """Whether dpkg has the Debian package installed; None when dpkg cannot be asked."""
    dpkg_query = shutil.which("dpkg-query")
    if dpkg_query is None:
        return None
    try:
        completed = subprocess.run(
            [dpkg_query, "-W", "-f=${Status}", name],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    # "install ok installed"; a removed package leaves "deinstall ok config-files".
    return completed.returncode == 0 and completed.stdout.decode().split()[-1:] == ["installed"]


def missing_debian_packages(packages: Sequence[str]) -> list[str]:
    """The packages that are not installed: asked of dpkg (packages with no command, such
    as the DNS plugin, count too), or by their command on ``PATH`` where there is no dpkg."""
    missing = []
    for name in packages:
        installed = package_installed(name)
        if installed is None:
            command = PACKAGE_COMMANDS.get(name)
            installed = command is None or shutil.which(command) is not None
        if not installed:
            missing.append(name)
    return missing


def engine_packages() -> tuple[str, ...]:
    """:data:`ENGINE_PACKAGES`, plus ``aardvark-dns`` where ``netavark`` is installed (podman
    then networks through netavark, whose DNS server that is)."""
    if package_installed("netavark"):
        return (*ENGINE_PACKAGES, DNS_PACKAGES["netavark"])
    return ENGINE_PACKAGES


def missing_packages() -> list[str]:
    """The packages of :func:`engine_packages` that are not installed."""
    return missing_debian_packages(engine_packages())


def can_install_packages() -> bool:
    """True when :func:`install_packages` can work here (root and apt-get)."""
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def install_packages(
    packages: Sequence[str], log: Callable[[str], None], *, timeout: float = APT_TIMEOUT
) -> None:
    """``apt-get update`` then ``apt-get install --no-install-recommends`` (root only)."""
    if not packages:
        return
    if os.geteuid() != 0:
        raise ContainerEngineError(
            f"{', '.join(packages)} missing and not running as root: install them "
            f"(apt-get install {' '.join(packages)}) or start a Docker engine"
        )
    if shutil.which("apt-get") is None:
        raise ContainerEngineError(
            f"{', '.join(packages)} missing and no apt-get here: install them with your "
            "package manager, or start a Docker engine and set DOCKER_HOST"
        )
    for command in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
    ):
        log(" ".join(command))
        run_command(command, timeout=timeout, env={"DEBIAN_FRONTEND": "noninteractive"})


def write_containers_conf(paths: EnginePaths) -> bool:
    """Write the project's ``containers.conf``; True when it changed."""
    paths.directory.mkdir(parents=True, exist_ok=True)
    if paths.containers_conf.exists() and paths.containers_conf.read_text() == CONTAINERS_CONF:
        return False
    paths.containers_conf.write_text(CONTAINERS_CONF)
    return True


def service_pid(paths: EnginePaths) -> int | None:
    """The pid of this project's podman API service, if it still runs."""
    try:
        pid = int(paths.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    # A recycled pid is some other process: only ours names our socket.
    if f"unix://{paths.socket}".encode() not in cmdline:
        return None
    return pid


def start_service(
    paths: EnginePaths, timeout: float = SERVICE_START_TIMEOUT
) -> tuple[ContainerEngine, int]:
    """Start ``podman system service`` on the project's socket; returns the engine and pid.

    The service runs in its own session so that it outlives the command that started it
    (``bkconform docker setup``); :func:`stop_service` stops it.
    """
    engine = podman_engine(paths)
    if shutil.which(engine.cli) is None:
        raise ContainerEngineError("podman is not installed (bkconform docker setup installs it)")
    write_containers_conf(paths)
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    log = paths.log_file.open("ab")
    try:
        process = subprocess.Popen(
            [engine.cli, "system", "service", "--time=0", engine.docker_host],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **engine.cli_env},
            start_new_session=True,
            # Not the caller's directory: the service outlives the command that started it,
            # and its conmon children start in its working directory. Once that directory is
            # deleted (a test's tmp dir, a CI clone), every container start fails with "Failed
            # to get working directory" / "write child: broken pipe".
            cwd=paths.log_file.parent,
        )
    finally:
        log.close()
    paths.pid_file.write_text(f"{process.pid}\n")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            paths.pid_file.unlink(missing_ok=True)
            raise ContainerEngineError(
                f"podman system service exited with {process.returncode}; see {paths.log_file}"
            )
        if paths.socket.exists() and ping(engine.docker_host, timeout=2.0):
            return engine, process.pid
        time.sleep(0.1)
    _terminate(process.pid)
    process.wait(timeout=10)
    paths.pid_file.unlink(missing_ok=True)
    raise ContainerEngineError(
        f"podman system service did not answer on {paths.socket} within {timeout:.0f} s; "
        f"see {paths.log_file}"
    )


def stop_service(paths: EnginePaths, timeout: float = 10.0) -> bool:
    """Stop the recorded podman API service; True when one was running.

    Containers are not touched: they belong to podman, not to the service process.
    """
    pid = service_pid(paths)
    if pid is not None:
        _terminate(pid, timeout)
    paths.pid_file.unlink(missing_ok=True)
    with contextlib.suppress(FileNotFoundError):
        paths.socket.unlink()
    return pid is not None


def _terminate(pid: int, timeout: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    # Our own child lingers as a zombie until reaped: reap it if it is ours.
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


@dataclass
class EngineSetup:
    """What :func:`ensure_engine` found or did."""

    engine: ContainerEngine
    installed: list[str] = field(default_factory=list)
    #: The pid of a service this call started (None when an engine already answered).
    started_pid: int | None = None


def ensure_engine(
    paths: EnginePaths | None = None,
    *,
    install: bool = True,
    log: Callable[[str], None] = lambda _line: None,
) -> EngineSetup:
    """An answering engine, installing podman and starting its API service if needed.

    Idempotent: an engine that answers already is used as it is.
    """
    paths = paths or EnginePaths.default()
    write_containers_conf(paths)
    found = find_engine(paths)
    if found is not None:
        log(f"container engine answers at {found.docker_host} ({Path(found.cli).name})")
        installed: list[str] = []
        if found.is_podman and install and can_install_packages():
            # An engine that answers may still lack what its networks need (the DNS plugin:
            # podman installed by hand or by an older setup); new networks pick it up.
            installed = missing_packages()
            if installed:
                log(f"installing {', '.join(installed)}")
                install_packages(installed, log)
        return EngineSetup(found, installed=installed)
    missing = missing_packages()
    if missing:
        if not install:
            raise ContainerEngineError(
                f"no container engine answers and {', '.join(missing)} is missing: run "
                "`bkconform docker setup`"
            )
        log(f"installing {', '.join(missing)}")
        install_packages(missing, log)
    stale = service_pid(paths)
    if stale is not None:
        # Recorded but not answering: a wedged service; replace it.
        log(f"podman service {stale} does not answer; restarting it")
        _terminate(stale)
    engine, pid = start_service(paths)
    log(f"started podman system service (pid {pid}) on {paths.socket}")
    return EngineSetup(engine, installed=missing, started_pid=pid)

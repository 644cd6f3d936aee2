"""Can containers on a project network resolve each other by name? Checked in seconds.

A :class:`~adapters.cluster.containers.ContainerCluster` names its nodes on its network
(``zk1``, ``bookie1``): ZooKeeper servers find their quorum peers and bookies find ZooKeeper by
those names. Podman resolves them only with its network backend's DNS server (CNI: the
``dnsname`` plugin, Debian package ``golang-github-containernetworking-plugin-dnsname``;
netavark: ``aardvark-dns``); without it every lookup fails, the ensemble never forms and a
cluster start times out after minutes. :func:`check_container_dns` finds out in seconds: on a
fresh labelled network it starts one container with an alias and another that looks the alias
up (``getent hosts``), waits for the second to exit, and removes both containers and the
network on every path. :func:`ensure_container_dns` caches a success per engine.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from typing import Any

from adapters.cluster.container_engine import (
    DNS_PACKAGES,
    ContainerEngine,
    ContainerEngineError,
)
from adapters.cluster.container_labels import CLUSTER_LABEL

#: The clusters' own label, so that ``bkconform docker down --all`` removes what a killed probe
#: leaves.
PROBE_CLUSTER_LABEL = CLUSTER_LABEL
PROBE_LABEL = "bkconform.probe"
PEER_ALIAS = "dnspeer"
DEFAULT_TIMEOUT = 30.0
#: How long the prober keeps retrying the lookup (a name may register a moment late).
LOOKUP_SECONDS = 5

_verified: set[str] = set()
_verified_lock = threading.Lock()


class ContainerDnsError(ContainerEngineError):
    """Containers on a project network cannot resolve each other by name."""


def network_backend(engine: ContainerEngine, timeout: float = 15.0) -> str | None:
    """Podman's network backend (``cni`` or ``netavark``); None for Docker or if unknown."""
    if not engine.is_podman:
        return None
    try:
        output = engine.run_cli(
            ["info", "--format", "{{.Host.NetworkBackend}}"], timeout=timeout
        ).strip()
    except ContainerEngineError:
        return None
    return output or None


def dns_fix(engine: ContainerEngine, timeout: float = 15.0) -> tuple[str, str]:
    """(package, command) that gives this engine's networks name resolution."""
    if not engine.is_podman:
        return "", "a Docker engine resolves names on user networks itself: check its DNS"
    backend = network_backend(engine, timeout)
    package = DNS_PACKAGES.get(backend or "cni", DNS_PACKAGES["cni"])
    return package, f"apt-get install {package} (or `bkconform docker setup`, as root)"


def _prober_script(alias: str) -> str:
    tries = LOOKUP_SECONDS * 4
    return (
        f"i=0; while [ $i -lt {tries} ]; do getent hosts {alias} && exit 0; "
        "i=$((i+1)); sleep 0.25; done; cat /etc/resolv.conf; exit 1"
    )


def check_container_dns(
    engine: ContainerEngine, image: str, *, timeout: float = DEFAULT_TIMEOUT
) -> str:
    """Resolve one container from another by its alias on a fresh network; returns the
    address found, or raises :class:`ContainerDnsError` naming what to install.

    ``image`` needs ``sh``, ``sleep`` and ``getent`` (every Debian-based image). Every
    container and the network are removed whatever happens; no wait exceeds ``timeout``.
    """
    from docker.errors import DockerException
    from docker.types import EndpointConfig

    probe_id = uuid.uuid4().hex[:10]
    name = f"bkconform-dnsprobe{probe_id}"
    labels = {PROBE_CLUSTER_LABEL: f"dnsprobe{probe_id}", PROBE_LABEL: "dns"}
    deadline = time.monotonic() + timeout
    client = engine.client(timeout=max(5.0, timeout))
    created: list[Any] = []
    network: Any = None
    try:
        try:
            network = client.networks.create(name, driver="bridge", labels=labels)
            version = client.api._version
            peer = client.containers.run(
                image,
                entrypoint=["sleep", str(int(timeout) + 30)],
                name=f"{name}-peer",
                hostname=PEER_ALIAS,
                labels=labels,
                network=name,
                networking_config={name: EndpointConfig(version, aliases=[PEER_ALIAS])},
                detach=True,
            )
            created.append(peer)
            prober = client.containers.create(
                image,
                entrypoint=["/bin/sh", "-c", _prober_script(PEER_ALIAS)],
                name=f"{name}-prober",
                labels=labels,
                network=name,
            )
            created.append(prober)
            prober.start()
            remaining = max(1.0, deadline - time.monotonic())
            status = prober.wait(timeout=remaining)
            output = bytes(prober.logs()).decode("utf-8", errors="replace").strip()
        except DockerException as exc:
            raise ContainerEngineError(
                f"the container DNS check could not run containers from {image}: {exc}"
            ) from exc
        except OSError as exc:
            # requests' timeouts and connection errors derive from OSError.
            raise ContainerDnsError(
                f"the container DNS check did not finish within {timeout:.0f} s: {exc}"
            ) from exc
        code = int(status.get("StatusCode", -1)) if isinstance(status, dict) else -1
        if code != 0:
            package, fix = dns_fix(engine)
            what = f"its DNS server ({package}) is missing" if package else "no DNS answers"
            raise ContainerDnsError(
                f"containers on a bkconform network cannot resolve each other by name "
                f"(`getent hosts {PEER_ALIAS}` failed for {LOOKUP_SECONDS} s; exit {code}): "
                f"{what}. ZooKeeper ensembles and bookies in containers cannot form without it. "
                f"Fix: {fix}. Prober output: {output[-300:]!r}"
            )
        return output.split()[0] if output else ""
    finally:
        with contextlib.suppress(Exception):
            # Also a container created by a run() that failed to start it.
            selector = f"{PROBE_CLUSTER_LABEL}={labels[PROBE_CLUSTER_LABEL]}"
            created += client.containers.list(all=True, filters={"label": selector})
        for container in created:
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)
        if network is not None:
            with contextlib.suppress(Exception):
                network.remove()
        with contextlib.suppress(Exception):
            client.close()


def ensure_container_dns(
    engine: ContainerEngine, image: str, *, timeout: float = DEFAULT_TIMEOUT
) -> None:
    """:func:`check_container_dns`, once per engine and process (a success is cached)."""
    with _verified_lock:
        if engine.docker_host in _verified:
            return
    check_container_dns(engine, image, timeout=timeout)
    with _verified_lock:
        _verified.add(engine.docker_host)


def forget_verified() -> None:
    """Drop the cache of :func:`ensure_container_dns` (tests; after installing a plugin)."""
    with _verified_lock:
        _verified.clear()

"""The container DNS check against a fake Docker client: what it runs, what it says when
names do not resolve, and that it removes everything it created on every path."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from adapters.cluster import container_dns
from adapters.cluster.container_dns import (
    PEER_ALIAS,
    ContainerDnsError,
    check_container_dns,
    ensure_container_dns,
)
from adapters.cluster.container_engine import ContainerEngineError
from adapters.cluster.container_labels import CLUSTER_LABEL


@dataclass
class FakeContainer:
    name: str
    code: int = 0
    output: bytes = b""
    removed: bool = False
    started: bool = False

    def start(self) -> None:
        self.started = True

    def wait(self, timeout: float) -> dict[str, int]:
        assert 0 < timeout <= 30
        return {"StatusCode": self.code}

    def logs(self) -> bytes:
        return self.output

    def remove(self, force: bool, v: bool) -> None:
        assert force
        self.removed = True


@dataclass
class FakeNetwork:
    name: str
    labels: dict[str, str]
    removed: bool = False

    def remove(self) -> None:
        self.removed = True


@dataclass
class FakeClient:
    prober: FakeContainer
    fail_run: bool = False
    networks_made: list[FakeNetwork] = field(default_factory=list)
    containers_made: list[FakeContainer] = field(default_factory=list)
    run_kwargs: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False

    def __post_init__(self) -> None:
        client = self

        class Api:
            _version = "1.41"

        class Networks:
            def create(self, name: str, driver: str, labels: dict[str, str]) -> FakeNetwork:
                network = FakeNetwork(name, labels)
                client.networks_made.append(network)
                return network

        class Containers:
            def run(self, image: str, **kwargs: Any) -> FakeContainer:
                client.run_kwargs.append(kwargs)
                if client.fail_run:
                    from docker.errors import ImageNotFound

                    raise ImageNotFound(f"{image}: image not known")
                peer = FakeContainer(kwargs["name"])
                client.containers_made.append(peer)
                return peer

            def create(self, image: str, **kwargs: Any) -> FakeContainer:
                client.run_kwargs.append(kwargs)
                client.prober.name = kwargs["name"]
                client.containers_made.append(client.prober)
                return client.prober

            def list(self, all: bool, filters: dict[str, str]) -> list[FakeContainer]:
                return []

        self.api = Api()
        self.networks = Networks()
        self.containers = Containers()

    def close(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class FakeEngine:
    client_: FakeClient
    docker_host: str = "unix:///fake.sock"
    is_podman: bool = True
    backend: str = "cni"

    def client(self, timeout: float = 60.0) -> FakeClient:
        return self.client_

    def run_cli(self, args: list[str], *, timeout: float) -> str:
        assert args[:2] == ["info", "--format"]
        return self.backend + "\n"


def everything_removed(client: FakeClient) -> bool:
    return (
        all(c.removed for c in client.containers_made)
        and all(n.removed for n in client.networks_made)
        and client.closed
    )


def test_a_resolved_name_passes_and_leaves_nothing() -> None:
    client = FakeClient(FakeContainer("prober", 0, b"10.89.0.2       dnspeer\n"))
    assert check_container_dns(FakeEngine(client), "img", timeout=5) == "10.89.0.2"  # type: ignore[arg-type]
    assert client.prober.started
    peer_kwargs, prober_kwargs = client.run_kwargs
    network = client.networks_made[0]
    assert network.labels[CLUSTER_LABEL].startswith("dnsprobe")  # `docker down --all` sees it
    assert peer_kwargs["networking_config"][network.name]["Aliases"] == [PEER_ALIAS]
    assert f"getent hosts {PEER_ALIAS}" in prober_kwargs["entrypoint"][-1]
    assert everything_removed(client)


@pytest.mark.parametrize(
    ("backend", "package"),
    [("cni", "golang-github-containernetworking-plugin-dnsname"), ("netavark", "aardvark-dns")],
)
def test_an_unresolved_name_fails_naming_the_package(backend: str, package: str) -> None:
    client = FakeClient(FakeContainer("prober", 1, b"nameserver 10.89.0.1\n"))
    engine = FakeEngine(client, backend=backend)
    with pytest.raises(ContainerDnsError, match=f"apt-get install {package}"):
        check_container_dns(engine, "img", timeout=5)  # type: ignore[arg-type]
    assert everything_removed(client)


def test_an_image_that_cannot_run_is_an_engine_error_and_leaves_nothing() -> None:
    client = FakeClient(FakeContainer("prober"), fail_run=True)
    with pytest.raises(ContainerEngineError, match="could not run containers from img"):
        check_container_dns(FakeEngine(client), "img", timeout=5)  # type: ignore[arg-type]
    assert client.networks_made and everything_removed(client)


def test_a_success_is_checked_once_per_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(
        container_dns, "check_container_dns", lambda engine, image, timeout: calls.append(image)
    )
    container_dns.forget_verified()
    engine = FakeEngine(FakeClient(FakeContainer("prober")))
    try:
        ensure_container_dns(engine, "a")  # type: ignore[arg-type]
        ensure_container_dns(engine, "b")  # type: ignore[arg-type]
    finally:
        container_dns.forget_verified()
    assert calls == ["a"]


def test_a_failure_is_not_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(engine: Any, image: str, timeout: float) -> str:
        raise ContainerDnsError("no dns")

    monkeypatch.setattr(container_dns, "check_container_dns", fail)
    container_dns.forget_verified()
    engine = FakeEngine(FakeClient(FakeContainer("prober")))
    for _ in range(2):
        with pytest.raises(ContainerDnsError):
            ensure_container_dns(engine, "a")  # type: ignore[arg-type]

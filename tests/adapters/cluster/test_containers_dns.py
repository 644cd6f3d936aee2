"""The container DNS check on the real engine: a container resolves another by name on a
fresh project network, and nothing the check started is left."""

from __future__ import annotations

import ipaddress
import time

import pytest

from adapters.cluster.capabilities import probe_image, run_check
from adapters.cluster.container_dns import PROBE_LABEL, check_container_dns
from adapters.cluster.container_engine import ContainerEngine
from adapters.cluster.container_images import ImageBuilder
from adapters.cluster.container_labels import labelled_resources

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_containers_resolve_each_other_by_name(container_engine: ContainerEngine) -> None:
    tags = ImageBuilder(container_engine).ensure_all()
    started = time.monotonic()
    address = check_container_dns(container_engine, tags.base, timeout=30)
    # A duration: the check's own waits stop at its 30 s deadline, but its cleanup (removing
    # two containers and a network) is not bounded by it; a success takes a few seconds.
    assert time.monotonic() - started < 30
    ipaddress.ip_address(address)
    client = container_engine.client()
    try:
        assert labelled_resources(client, {PROBE_LABEL: ""}) == {"containers": [], "networks": []}
    finally:
        client.close()


def test_doctor_check_agrees(container_engine: ContainerEngine) -> None:
    ImageBuilder(container_engine).ensure_all()
    assert probe_image(container_engine) is not None
    result = run_check("container-dns")
    assert result.ok, f"{result.detail}; fix: {result.fix}"

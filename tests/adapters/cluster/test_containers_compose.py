"""``docker/official/compose.yaml`` validates, although its images cannot be pulled here.

Neither ``docker compose`` nor ``podman compose`` exists on CI machines, so the file is parsed
with PyYAML (merge keys resolved, as compose resolves them), variables are interpolated the
way compose does (``${VAR:-default}``, ``$$`` for a literal ``$``), and the structure is
checked against what the limbo scenarios need: 3 ZooKeeper servers in one ensemble, bookies
that reach it, advertise host-reachable ids on distinct ports mapped 1:1, keep their journal
on their volume, run DbLedgerStorage by default, and get the two data-integrity keys that the
image's own configuration mapping drops.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from adapters.cluster.bookies import LedgerStorage
from adapters.cluster.container_images import docker_dir
from adapters.cluster.containers import OFFICIAL_BOOKIE_COMMAND

COMPOSE = docker_dir() / "official" / "compose.yaml"
SERVICE_KEYS = {
    "image",
    "restart",
    "hostname",
    "environment",
    "ports",
    "volumes",
    "depends_on",
    "entrypoint",
    "command",
    "healthcheck",
}
_VARIABLE = re.compile(r"\$(\$|\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_]\w*))")


def interpolate(value: Any, environ: dict[str, str]) -> Any:
    """Compose's interpolation: ``${VAR:-default}``, ``${VAR}``, ``$VAR``, ``$$``."""
    if isinstance(value, dict):
        return {key: interpolate(item, environ) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, environ) for item in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(1) == "$":
            return "$"
        name = match.group(2) or match.group(4)
        default = match.group(3)
        if environ.get(name):
            return environ[name]
        if default is None:
            raise AssertionError(f"${{{name}}} has no default in {COMPOSE.name}")
        return default

    return _VARIABLE.sub(replace, value)


def load(environ: dict[str, str] | None = None) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(raw, dict)
    return dict(interpolate(raw, environ or {}))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load()


def zookeepers(compose: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in compose["services"].items() if str(v["image"]).startswith("zoo")}


def bookies(compose: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in compose["services"].items()
        if str(v["image"]).startswith("apache/bookkeeper:")
    }


def test_only_known_top_level_and_service_keys(compose: dict[str, Any]) -> None:
    assert set(compose) - {"services", "volumes", "networks"} == {
        key for key in compose if key.startswith("x-")
    }
    for name, service in compose["services"].items():
        unknown = set(service) - SERVICE_KEYS
        assert not unknown, f"{name}: unexpected keys {unknown}"
        assert service["image"], name


def test_three_zookeeper_servers_form_one_ensemble(compose: dict[str, Any]) -> None:
    servers = zookeepers(compose)
    assert sorted(servers) == ["zk1", "zk2", "zk3"]
    for name, service in servers.items():
        env = service["environment"]
        assert service["image"] == "zookeeper:3.9.3"
        assert env["ZOO_MY_ID"] == name.removeprefix("zk")
        listed = dict(item.split("=", 1) for item in env["ZOO_SERVERS"].split())
        assert listed == {f"server.{i}": f"zk{i}:2888:3888;2181" for i in (1, 2, 3)}
        assert env["ZOO_4LW_COMMANDS_WHITELIST"] == "*"
    host_ports = sorted(s["ports"][0] for s in servers.values())
    assert host_ports == [f"127.0.0.1:{port}:2181" for port in (2181, 2182, 2183)]


def test_bookies_reach_the_ensemble_and_advertise_host_reachable_ids(
    compose: dict[str, Any],
) -> None:
    found = bookies(compose)
    assert len(found) >= 3
    ports = set()
    for name, service in found.items():
        env = service["environment"]
        port = env["BK_bookiePort"]
        ports.add(port)
        # The id a host-side client resolves: 127.0.0.1:<port>, mapped 1:1 to the host.
        assert env["BK_advertisedAddress"] == "127.0.0.1", name
        assert service["ports"] == [f"127.0.0.1:{port}:{port}"], name
        assert env["BK_zkServers"] == "zk1:2181,zk2:2181,zk3:2181"
        assert env["BK_metadataServiceUri"] == (
            "zk+hierarchical://zk1:2181;zk2:2181;zk3:2181/ledgers"
        )
        assert set(service["depends_on"]) == {"zk1", "zk2", "zk3"}
        assert all(v["condition"] == "service_healthy" for v in service["depends_on"].values())
        # The journal must live on the volume, not in the image's /tmp/bk-txn default.
        (volume,) = service["volumes"]
        volume_name, mount = volume.split(":")
        assert volume_name in compose["volumes"]
        assert env["BK_journalDirectories"].startswith(mount + "/")
        assert env["BK_ledgerDirectories"].startswith(mount + "/")
        assert env["BK_autoRecoveryDaemonEnabled"] == "false"
    assert len(ports) == len(found), "every bookie needs its own port"


def test_limbo_keys_are_appended_before_the_entrypoint(compose: dict[str, Any]) -> None:
    for name, service in bookies(compose).items():
        env = service["environment"]
        assert env["BK_ledgerStorageClass"] == LedgerStorage.DB.value, name
        assert env["BK_dataIntegrityChecking"] == "true"
        assert env["BK_dataIntegrityStampMissingCookies"] == "true"
        assert service["entrypoint"] == ["/bin/bash", "-c"]
        # The same command the provider gives the official image.
        assert service["command"] == [OFFICIAL_BOOKIE_COMMAND]
        assert ">> /opt/bookkeeper/conf/bk_server.conf" in service["command"][0]


def test_ledger_storage_and_limbo_are_selectable() -> None:
    chosen = load(
        {
            "BK_LEDGER_STORAGE": LedgerStorage.SORTED.value,
            "BK_DATA_INTEGRITY": "false",
            "BK_VERSION": "4.16.4",
            "ZK_VERSION": "3.8.4",
        }
    )
    for service in bookies(chosen).values():
        assert service["image"] == "apache/bookkeeper:4.16.4"
        assert service["environment"]["BK_ledgerStorageClass"] == LedgerStorage.SORTED.value
        assert service["environment"]["BK_dataIntegrityChecking"] == "false"
    assert {s["image"] for s in zookeepers(chosen).values()} == {"zookeeper:3.8.4"}


def test_every_named_volume_is_declared(compose: dict[str, Any]) -> None:
    used = {
        volume.split(":")[0]
        for service in compose["services"].values()
        for volume in service.get("volumes", [])
        if not volume.startswith(("/", "."))
    }
    assert used == set(compose["volumes"])


def test_interpolation_rejects_a_variable_without_default() -> None:
    with pytest.raises(AssertionError, match="NOPE"):
        interpolate("${NOPE}", {})
    assert interpolate("$${X} ${Y:-y}", {}) == "${X} y"

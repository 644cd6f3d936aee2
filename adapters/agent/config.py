"""The agent's configuration: flags and an optional TOML file, validated before anything runs.

Every refusal here is an :class:`~adapters.agent.errors.InvalidAgentConfig` whose message names
the offending setting, so a misconfigured agent stops at start instead of misbehaving later
(listening on the network in clear text, or wiping a directory it should never touch).
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import stat
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from adapters.agent.errors import InvalidAgentConfig

DEFAULT_LISTEN = "127.0.0.1:7771"
MIN_TOKEN_LENGTH = 16
FIREWALLS = ("auto", "nft", "iptables")
Firewall = Literal["auto", "nft", "iptables"]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of the server's TLS identity; with ``client_ca``, client certificates are
    required and must be signed by it (mutual TLS)."""

    cert: Path
    key: Path
    client_ca: Path | None = None


@dataclass(frozen=True)
class AgentConfig:
    """A validated agent configuration (build it with :func:`load_config` or directly)."""

    command: tuple[str, ...]
    token: str
    log_file: Path
    listen_host: str = "127.0.0.1"
    listen_port: int = 7771
    allow_insecure_remote: bool = False
    tls: TlsFiles | None = None
    allow_destructive: bool = False
    workdir: Path | None = None
    data_dirs: tuple[Path, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    journal_off_command: tuple[str, ...] | None = None
    journal_off_env: Mapping[str, str] = field(default_factory=dict)
    zookeeper: str | None = None
    ledgers_root: str = "/ledgers"
    instance_id: str | None = None
    firewall: Firewall = "auto"
    autostart: bool = True
    stop_timeout: float = 10.0
    audit_log: Path | None = None
    protected_files: tuple[Path, ...] = ()
    """Files the agent needs (token, TLS material, logs): never inside a data dir."""

    def __post_init__(self) -> None:
        validate(self)

    @property
    def journal_off_configured(self) -> bool:
        return self.journal_off_command is not None or bool(self.journal_off_env)


def validate(config: AgentConfig) -> None:
    """Raise :class:`InvalidAgentConfig` unless ``config`` is safe and complete."""
    if not config.command:
        raise InvalidAgentConfig(
            "no managed process: give --command 'ARGV...' (or `-- ARGV...`, or `command` in "
            "the config file)"
        )
    if len(config.token) < MIN_TOKEN_LENGTH:
        raise InvalidAgentConfig(
            f"the token is {len(config.token)} characters; use at least {MIN_TOKEN_LENGTH} "
            "(e.g. `head -c 32 /dev/urandom | base64 > token`)"
        )
    if not 0 <= config.listen_port <= 65535:
        raise InvalidAgentConfig(f"listen port {config.listen_port} is not a TCP port")
    insecure = config.tls is None and not config.allow_insecure_remote
    if insecure and not is_loopback(config.listen_host):
        raise InvalidAgentConfig(
            f"refusing to listen on {config.listen_host} without TLS: the token would "
            "cross the network in clear text. Give --tls-cert/--tls-key (and "
            "--tls-client-ca), or --allow-insecure-remote on a network you trust"
        )
    if config.allow_destructive and (config.zookeeper is None) == (config.instance_id is None):
        raise InvalidAgentConfig(
            "--allow-destructive needs the cluster's identity from exactly one of "
            "--zookeeper HOST:PORT (reads <ledgers-root>/INSTANCEID) or --instance-id"
        )
    if config.instance_id is not None and not config.instance_id.strip():
        raise InvalidAgentConfig("--instance-id is empty")
    if not config.ledgers_root.startswith("/") or config.ledgers_root.endswith("/"):
        raise InvalidAgentConfig(
            f"--ledgers-root {config.ledgers_root!r} must be an absolute znode path such as "
            "/ledgers"
        )
    if config.firewall not in FIREWALLS:
        raise InvalidAgentConfig(f"--firewall must be one of {', '.join(FIREWALLS)}")
    if config.stop_timeout <= 0:
        raise InvalidAgentConfig("--stop-timeout must be positive")
    for directory in config.data_dirs:
        check_data_dir(directory, config.protected_files)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _never_wiped() -> list[Path]:
    """Directories no data dir may be or contain: the agent's own code and Python, home."""
    roots = [Path(__file__).resolve().parents[2], Path(sys.prefix).resolve()]
    roots.append(Path(sys.base_prefix).resolve())
    home = os.environ.get("HOME")
    if home:
        roots.append(Path(home).resolve())
    return roots


def check_data_dir(directory: Path, protected_files: Sequence[Path] = ()) -> None:
    """Refuse data dirs whose wiping could hurt anything but the managed process's data."""
    if not directory.is_absolute() or directory != directory.resolve():
        raise InvalidAgentConfig(
            f"data dir {directory} must be absolute with no symlinks or '..' "
            "(build_config resolves relative paths)"
        )
    # "/", "/var", "/home", "/tmp": a whole top-level tree is never one process's data.
    if len(directory.parts) < 3:
        raise InvalidAgentConfig(
            f"refusing data dir {directory}: wiping it would delete a whole top-level "
            "directory; point --data-dir at the process's own directory (e.g. /data/bk/journal)"
        )
    for root in _never_wiped():
        if directory == root or directory in root.parents:
            raise InvalidAgentConfig(
                f"refusing data dir {directory}: it holds {root}, which the agent must keep"
            )
    for protected in protected_files:
        if directory in protected.resolve().parents:
            raise InvalidAgentConfig(
                f"refusing data dir {directory}: it holds {protected}, a file the agent needs "
                "(token, TLS material or a log); move that file out of the data dir"
            )


def parse_listen(text: str) -> tuple[str, int]:
    """``"127.0.0.1:7771"``, ``"[::1]:7771"`` or ``"localhost:7771"`` -> (host, port)."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise InvalidAgentConfig(f"--listen {text!r} is not HOST:PORT (IPv6 as [ADDR]:PORT)")
    if host.startswith("[") != host.endswith("]"):
        raise InvalidAgentConfig(f"--listen {text!r}: unbalanced brackets around the address")
    return host, int(port_text)


def parse_assignments(items: Sequence[str], what: str) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` -> dict, refusing items without ``=`` or with an empty key."""
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidAgentConfig(f"{what} {item!r} is not KEY=VALUE")
        result[key] = value
    return result


def read_token(path: Path) -> str:
    """The shared secret in ``path`` (surrounding whitespace stripped)."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidAgentConfig(f"cannot read the token file {path}: {exc}") from exc
    if not text:
        raise InvalidAgentConfig(f"the token file {path} is empty")
    return text


def token_file_is_private(path: Path) -> bool:
    """False when group or others may read the token file (the agent warns about it)."""
    return not path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO)


def _argv(value: object, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidAgentConfig(f"{key} must be a string or a list of strings")


def _string_table(value: object, key: str) -> dict[str, str]:
    if isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return dict(value)
    raise InvalidAgentConfig(f"{key} must be a table of strings")


_CONFIG_KEYS = frozenset(
    {
        "listen",
        "token_file",
        "tls_cert",
        "tls_key",
        "tls_client_ca",
        "allow_destructive",
        "allow_insecure_remote",
        "command",
        "journal_off_command",
        "journal_off_env",
        "env",
        "workdir",
        "data_dirs",
        "log_file",
        "audit_log",
        "zookeeper",
        "ledgers_root",
        "instance_id",
        "firewall",
        "autostart",
        "stop_timeout",
    }
)


def read_config_file(path: Path) -> dict[str, Any]:
    """The TOML file's settings, with relative paths made relative to the file's directory."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidAgentConfig(f"cannot read the config file {path}: {exc}") from exc
    settings: dict[str, Any] = dict(raw.get("agent", raw))
    unknown = sorted(set(settings) - _CONFIG_KEYS)
    if unknown:
        raise InvalidAgentConfig(
            f"unknown settings in {path}: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(_CONFIG_KEYS))})"
        )
    base = path.resolve().parent
    path_keys = ("token_file", "tls_cert", "tls_key", "tls_client_ca", "workdir", "log_file")
    for key in (*path_keys, "audit_log"):
        if key in settings:
            settings[key] = base / str(settings[key])
    if "data_dirs" in settings:
        if not isinstance(settings["data_dirs"], list):
            raise InvalidAgentConfig(f"data_dirs in {path} must be a list of paths")
        settings["data_dirs"] = [base / str(d) for d in settings["data_dirs"]]
    return settings


def build_config(settings: Mapping[str, Any]) -> AgentConfig:
    """An :class:`AgentConfig` from merged settings (config-file keys; flags already applied)."""
    if "token_file" not in settings or settings["token_file"] is None:
        raise InvalidAgentConfig("no token: give --token-file (a file holding the shared secret)")
    token_file = Path(settings["token_file"]).resolve()
    host, port = parse_listen(str(settings.get("listen") or DEFAULT_LISTEN))
    tls = _tls(settings)
    workdir = Path(settings["workdir"]).resolve() if settings.get("workdir") else None
    log_file = Path(settings.get("log_file") or (workdir or Path.cwd()) / "managed-process.log")
    audit_log = Path(settings["audit_log"]).resolve() if settings.get("audit_log") else None
    protected = [token_file, log_file.resolve()]
    if audit_log is not None:
        protected.append(audit_log)
    if tls is not None:
        protected += [p for p in (tls.cert, tls.key, tls.client_ca) if p is not None]
    journal_off = settings.get("journal_off_command")
    firewall = str(settings.get("firewall") or "auto")
    if firewall not in FIREWALLS:
        raise InvalidAgentConfig(f"--firewall must be one of {', '.join(FIREWALLS)}")
    try:
        stop_timeout = float(settings.get("stop_timeout", 10.0))
    except (TypeError, ValueError) as exc:
        raise InvalidAgentConfig(f"stop_timeout must be a number of seconds: {exc}") from exc
    return AgentConfig(
        command=_argv(settings.get("command", []), "command"),
        token=read_token(token_file),
        log_file=log_file.resolve(),
        listen_host=host.strip("[]"),
        listen_port=port,
        allow_insecure_remote=bool(settings.get("allow_insecure_remote", False)),
        tls=tls,
        allow_destructive=bool(settings.get("allow_destructive", False)),
        workdir=workdir,
        data_dirs=tuple(Path(d).resolve() for d in settings.get("data_dirs", ())),
        env=_string_table(settings.get("env", {}), "env"),
        journal_off_command=(
            None if journal_off is None else _argv(journal_off, "journal_off_command")
        ),
        journal_off_env=_string_table(settings.get("journal_off_env", {}), "journal_off_env"),
        zookeeper=settings.get("zookeeper") or None,
        ledgers_root=str(settings.get("ledgers_root") or "/ledgers"),
        instance_id=settings.get("instance_id") or None,
        firewall=firewall,  # type: ignore[arg-type]  # checked against FIREWALLS above
        autostart=bool(settings.get("autostart", True)),
        stop_timeout=stop_timeout,
        audit_log=audit_log,
        protected_files=tuple(protected),
    )


def _tls(settings: Mapping[str, Any]) -> TlsFiles | None:
    cert, key, client_ca = (settings.get(k) for k in ("tls_cert", "tls_key", "tls_client_ca"))
    if cert is None and key is None:
        if client_ca is not None:
            raise InvalidAgentConfig("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if cert is None or key is None:
        raise InvalidAgentConfig("TLS needs both --tls-cert and --tls-key")
    files = TlsFiles(
        cert=Path(cert).resolve(),
        key=Path(key).resolve(),
        client_ca=None if client_ca is None else Path(client_ca).resolve(),
    )
    for path in (files.cert, files.key, files.client_ca):
        if path is not None and not path.is_file():
            raise InvalidAgentConfig(f"TLS file {path} does not exist")
    return files

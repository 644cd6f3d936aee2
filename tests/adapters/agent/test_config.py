"""Agent configuration: what it refuses, and how flags, TOML and defaults combine."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.agent.__main__ import EXIT_CONFIG_ERROR, build_parser, main, merged_settings
from adapters.agent.config import (
    AgentConfig,
    build_config,
    check_data_dir,
    is_loopback,
    parse_listen,
)
from adapters.agent.errors import InvalidAgentConfig

TOKEN = "0123456789abcdef-token"


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    return path


def settings(token_file: Path, **overrides: object) -> dict[str, object]:
    base: dict[str, object] = {"token_file": token_file, "command": ["sleep", "1"]}
    base.update(overrides)
    return base


def test_defaults_listen_on_loopback(token_file: Path) -> None:
    config = build_config(settings(token_file))
    assert (config.listen_host, config.listen_port) == ("127.0.0.1", 7771)
    assert config.token == TOKEN
    assert not config.allow_destructive
    assert config.tls is None


@pytest.mark.parametrize("listen", ["0.0.0.0:7771", "[::]:7771", "10.0.0.5:7771"])
def test_non_loopback_without_tls_is_refused(token_file: Path, listen: str) -> None:
    with pytest.raises(InvalidAgentConfig, match="without TLS"):
        build_config(settings(token_file, listen=listen))
    opted_in = build_config(settings(token_file, listen=listen, allow_insecure_remote=True))
    assert not is_loopback(opted_in.listen_host)


def test_non_loopback_with_tls_is_accepted(token_file: Path, tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("cert")
    key.write_text("key")
    config = build_config(settings(token_file, listen="0.0.0.0:0", tls_cert=cert, tls_key=key))
    assert config.tls is not None and config.tls.client_ca is None


def test_tls_files_must_come_together(token_file: Path, tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("cert")
    with pytest.raises(InvalidAgentConfig, match="both --tls-cert and --tls-key"):
        build_config(settings(token_file, tls_cert=cert))
    with pytest.raises(InvalidAgentConfig, match="--tls-client-ca needs"):
        build_config(settings(token_file, tls_client_ca=cert))
    with pytest.raises(InvalidAgentConfig, match="does not exist"):
        build_config(settings(token_file, tls_cert=cert, tls_key=tmp_path / "missing.pem"))


def test_short_missing_or_empty_tokens_are_refused(tmp_path: Path) -> None:
    short = tmp_path / "short"
    short.write_text("abc")
    with pytest.raises(InvalidAgentConfig, match="at least 16"):
        build_config(settings(short))
    empty = tmp_path / "empty"
    empty.write_text("  \n")
    with pytest.raises(InvalidAgentConfig, match="is empty"):
        build_config(settings(empty))
    with pytest.raises(InvalidAgentConfig, match="cannot read the token file"):
        build_config(settings(tmp_path / "missing"))
    with pytest.raises(InvalidAgentConfig, match="no token"):
        build_config({"command": ["sleep", "1"]})


def test_allow_destructive_needs_exactly_one_identity_source(token_file: Path) -> None:
    with pytest.raises(InvalidAgentConfig, match="exactly one of"):
        build_config(settings(token_file, allow_destructive=True))
    with pytest.raises(InvalidAgentConfig, match="exactly one of"):
        build_config(
            settings(
                token_file, allow_destructive=True, instance_id="x", zookeeper="127.0.0.1:2181"
            )
        )
    config = build_config(settings(token_file, allow_destructive=True, instance_id="x"))
    assert config.allow_destructive and config.instance_id == "x"


def test_a_command_is_required(token_file: Path) -> None:
    with pytest.raises(InvalidAgentConfig, match="no managed process"):
        build_config(settings(token_file, command=[]))


@pytest.mark.parametrize("directory", ["/", "/tmp", "/var", "/home"])
def test_top_level_data_dirs_are_refused(directory: str) -> None:
    with pytest.raises(InvalidAgentConfig, match="whole top-level"):
        check_data_dir(Path(directory))


def test_data_dirs_holding_the_home_code_or_agent_files_are_refused(
    token_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The token file lives in tmp_path: a data dir holding it is refused.
    with pytest.raises(InvalidAgentConfig, match="a file the agent needs"):
        build_config(settings(token_file, data_dirs=[tmp_path]))
    home = tmp_path / "home" / "someone"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(InvalidAgentConfig, match="which the agent must keep"):
        check_data_dir(home)
    with pytest.raises(InvalidAgentConfig, match="which the agent must keep"):
        check_data_dir(home.parent)
    repo = Path(__file__).resolve().parents[3]
    with pytest.raises(InvalidAgentConfig, match="which the agent must keep"):
        check_data_dir(repo)
    with pytest.raises(InvalidAgentConfig, match="no symlinks"):
        check_data_dir(Path("relative/dir"))


def test_data_dirs_are_resolved(token_file: Path, tmp_path: Path) -> None:
    real = tmp_path / "data" / "real"
    real.mkdir(parents=True)
    link = tmp_path / "data" / "link"
    link.symlink_to(real)
    config = build_config(settings(token_file, data_dirs=[link]))
    assert config.data_dirs == (real,)


def test_parse_listen() -> None:
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:7771") == ("[::1]", 7771)
    assert parse_listen("localhost:1") == ("localhost", 1)
    for bad in ("7771", "host:", ":7771", "host:port", "[::1:7771"):
        with pytest.raises(InvalidAgentConfig):
            parse_listen(bad)


def test_toml_file_with_flags_overriding(tmp_path: Path, token_file: Path) -> None:
    config_file = tmp_path / "agent.toml"
    config_file.write_text(
        "[agent]\n"
        'token_file = "token"\n'
        'command = ["java", "-jar", "bookie.jar"]\n'
        'journal_off_command = "java -jar bookie.jar --journal-off"\n'
        'journal_off_env = { BOOKIE_CONF = "nojournal.conf" }\n'
        'data_dirs = ["bk/journal", "bk/ledgers"]\n'
        'listen = "127.0.0.1:9000"\n'
        "allow_destructive = true\n"
        'instance_id = "from-file"\n'
    )
    args = build_parser().parse_args(
        ["serve", "--config", str(config_file), "--listen", "127.0.0.1:9001"]
    )
    config = build_config(merged_settings(args, []))
    assert config.listen_port == 9001
    assert config.command == ("java", "-jar", "bookie.jar")
    assert config.journal_off_command == ("java", "-jar", "bookie.jar", "--journal-off")
    assert config.journal_off_env == {"BOOKIE_CONF": "nojournal.conf"}
    assert config.data_dirs == (tmp_path / "bk" / "journal", tmp_path / "bk" / "ledgers")
    assert config.instance_id == "from-file" and config.allow_destructive
    assert config.journal_off_configured


def test_toml_unknown_keys_are_refused(tmp_path: Path) -> None:
    config_file = tmp_path / "agent.toml"
    config_file.write_text('token_file = "t"\nallow_destructiv = true\n')
    args = build_parser().parse_args(["serve", "--config", str(config_file)])
    with pytest.raises(InvalidAgentConfig, match=r"unknown settings.*allow_destructiv"):
        merged_settings(args, [])


def test_command_after_double_dash_and_env_flags(token_file: Path) -> None:
    args = build_parser().parse_args(
        ["serve", "--token-file", str(token_file), "--env", "A=1", "--journal-off-env", "J=off"]
    )
    config = build_config(merged_settings(args, ["sleep", "5"]))
    assert config.command == ("sleep", "5")
    assert config.env == {"A": "1"} and config.journal_off_env == {"J": "off"}
    both = build_parser().parse_args(["serve", "--token-file", str(token_file), "--command", "x"])
    with pytest.raises(InvalidAgentConfig, match="either with --command or after --"):
        merged_settings(both, ["sleep", "5"])
    bad_env = build_parser().parse_args(["serve", "--env", "NOEQUALS"])
    with pytest.raises(InvalidAgentConfig, match="not KEY=VALUE"):
        merged_settings(bad_env, [])


def test_main_exits_2_with_the_reason_on_a_bad_config(
    token_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["serve", "--token-file", str(token_file), "--listen", "0.0.0.0:0", "--", "x"])
    assert status == EXIT_CONFIG_ERROR
    assert "without TLS" in capsys.readouterr().err


def test_config_is_validated_when_built_directly(tmp_path: Path) -> None:
    with pytest.raises(InvalidAgentConfig, match="whole top-level"):
        AgentConfig(command=("x",), token=TOKEN, log_file=tmp_path / "l", data_dirs=(Path("/"),))

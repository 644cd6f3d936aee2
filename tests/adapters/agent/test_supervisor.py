"""The supervisor's wipe and journal-off rules, without starting a process."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.agent.config import AgentConfig
from adapters.agent.errors import AgentCallFailed, AgentPreconditionFailed
from adapters.agent.supervisor import ProcessState, Supervisor

TOKEN = "0123456789abcdef-token"


def config(tmp_path: Path, **overrides: object) -> AgentConfig:
    settings: dict[str, object] = {
        "command": ("bookie", "--conf", "normal.conf"),
        "token": TOKEN,
        "log_file": tmp_path / "logs" / "managed.log",
        "data_dirs": (tmp_path / "data" / "journal", tmp_path / "data" / "ledgers"),
    }
    settings.update(overrides)
    return AgentConfig(**settings)  # type: ignore[arg-type]


def test_wipe_empties_every_data_dir_and_keeps_the_dirs(tmp_path: Path) -> None:
    supervisor = Supervisor(config(tmp_path))
    journal = tmp_path / "data" / "journal"
    (journal / "current").mkdir(parents=True)
    (journal / "current" / "1.txn").write_text("x")
    (journal / "VERSION").write_text("2")
    # The ledgers dir does not exist yet (a bookie that never started): it counts as empty.
    result = supervisor.wipe(kill_first=False)
    assert result.removed_entries == 3
    assert result.wiped_dirs == (journal, tmp_path / "data" / "ledgers")
    assert journal.is_dir() and list(journal.iterdir()) == []
    assert supervisor.snapshot().state is ProcessState.NEVER_STARTED


def test_a_data_dir_that_became_a_symlink_is_not_wiped(tmp_path: Path) -> None:
    supervisor = Supervisor(config(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "journal").symlink_to(elsewhere)
    with pytest.raises(AgentCallFailed, match="symlink"):
        supervisor.wipe(kill_first=False)
    assert (elsewhere / "precious").read_text() == "keep"


def test_a_data_dir_that_is_a_file_is_not_wiped(tmp_path: Path) -> None:
    supervisor = Supervisor(config(tmp_path))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "journal").write_text("a file")
    with pytest.raises(AgentCallFailed, match="not a directory"):
        supervisor.wipe(kill_first=False)


def test_wipe_without_data_dirs_fails_with_the_reason(tmp_path: Path) -> None:
    supervisor = Supervisor(config(tmp_path, data_dirs=()))
    with pytest.raises(AgentPreconditionFailed, match="--data-dir"):
        supervisor.wipe(kill_first=True)


def test_journal_off_spec(tmp_path: Path) -> None:
    plain = Supervisor(config(tmp_path))
    with pytest.raises(AgentPreconditionFailed, match="no journal-off mode"):
        plain.restart(journal_off=True)
    with_env = Supervisor(config(tmp_path, journal_off_env={"BOOKIE_CONF": "nojournal.conf"}))
    argv, env = with_env._launch_spec(journal_off=True)
    assert tuple(argv) == ("bookie", "--conf", "normal.conf")
    assert env["BOOKIE_CONF"] == "nojournal.conf"
    assert "BOOKIE_CONF" not in with_env._launch_spec(journal_off=False)[1]
    with_command = Supervisor(
        config(tmp_path, journal_off_command=("bookie", "--conf", "nojournal.conf"))
    )
    argv, _env = with_command._launch_spec(journal_off=True)
    assert tuple(argv) == ("bookie", "--conf", "nojournal.conf")


def test_calls_on_a_never_started_process_say_so(tmp_path: Path) -> None:
    supervisor = Supervisor(config(tmp_path))
    for call in (supervisor.kill, supervisor.pause, supervisor.resume):
        with pytest.raises(AgentPreconditionFailed, match="never started"):
            call()
    assert supervisor.log_tail(10) == []
    supervisor.stop()  # nothing to stop: no error

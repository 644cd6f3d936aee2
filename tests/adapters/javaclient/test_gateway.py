"""The JVM's lifecycle through py4j against a tiny probe class compiled with javac."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from adapters.javaclient import (
    BKError,
    BKLedgerFenced,
    BKNoSuchLedger,
    JavaCallTimeout,
    JavaException,
    JvmGateway,
    JvmGone,
    JvmOptions,
    JvmStartError,
)
from adapters.javaclient.errors import BK_ERRORS_BY_CODE, bk_error_for
from adapters.javaclient.gateway import py4j_jar


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def processes_with(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return [pid for pid in found if pid_alive(pid)]


def test_error_classes_by_code() -> None:
    assert isinstance(bk_error_for(-101, "X", "m"), BKLedgerFenced)
    assert type(bk_error_for(-4242, "X", "m")) is BKError
    assert bk_error_for(-7, "X", "m").code == -7
    assert len(BK_ERRORS_BY_CODE) == len(set(BK_ERRORS_BY_CODE.values()))


def test_py4j_jar_ships_with_the_wheel() -> None:
    assert py4j_jar().name.startswith("py4j") and py4j_jar().suffix == ".jar"


def options(classes: Path, tmp_path: Path, **overrides: object) -> JvmOptions:
    return JvmOptions(
        classpath=[classes], log_path=tmp_path / "jvm.log", start_timeout=30, call_timeout=10,
        **overrides,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.cluster
def test_start_call_and_kill_on_close(java_classes: Path, tmp_path: Path) -> None:
    with JvmGateway(options(java_classes, tmp_path)) as jvm:
        pid = jvm.pid
        assert pid is not None and pid_alive(pid)
        probe = jvm.call(lambda: jvm.jvm.bkconform.probe.Probe())
        assert jvm.call(lambda: probe.add(2, 3)) == 5
        assert jvm.call(lambda: bytes(probe.reversed(bytearray(b"abc")))) == b"cba"
        flags = jvm.call(
            lambda: str(
                jvm.jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()
            )
        )
        assert "--add-opens=java.base/java.util.zip=ALL-UNNAMED" in flags
    assert not pid_alive(pid)
    with pytest.raises(JvmGone):
        jvm.call(lambda: 1)
    jvm.close()  # idempotent


@pytest.mark.cluster
def test_hanging_call_times_out_and_the_jvm_still_dies(java_classes: Path, tmp_path: Path) -> None:
    jvm = JvmGateway(options(java_classes, tmp_path)).start()
    pid = jvm.pid
    assert pid is not None
    try:
        probe = jvm.call(lambda: jvm.jvm.bkconform.probe.Probe())
        # Probe.hang sleeps 600 s: the 0.5 s timeout fires on any machine.
        with pytest.raises(JavaCallTimeout, match=r"hang did not return within 0\.5s"):
            jvm.call(probe.hang, timeout=0.5, what="hang")
        assert jvm.call(lambda: probe.add(1, 1)) == 2  # other calls still work
    finally:
        jvm.close()
    assert not pid_alive(pid)


@pytest.mark.cluster
def test_java_exceptions_become_typed_errors(java_classes: Path, tmp_path: Path) -> None:
    with JvmGateway(options(java_classes, tmp_path)) as jvm:
        probe = jvm.call(lambda: jvm.jvm.bkconform.probe.Probe())
        with pytest.raises(BKLedgerFenced) as fenced:
            jvm.call(probe.fenced)
        assert fenced.value.code == -101
        assert fenced.value.java_class.endswith("BKException$BKLedgerFencedException")
        assert "fenced" in fenced.value.java_message
        with pytest.raises(BKError) as odd:
            jvm.call(probe.unknownCode)
        assert type(odd.value) is BKError and odd.value.code == -77
        with pytest.raises(BKNoSuchLedger):
            jvm.call(probe.wrapped)  # found as the cause of an ExecutionException
        with pytest.raises(JavaException) as illegal:
            jvm.call(probe.illegal)
        assert not isinstance(illegal.value, BKError)
        assert illegal.value.java_class == "java.lang.IllegalStateException"
        assert str(illegal.value) == "java.lang.IllegalStateException: probe refuses"


@pytest.mark.cluster
def test_jvm_is_killed_when_the_with_block_raises(java_classes: Path, tmp_path: Path) -> None:
    pid = None
    with (
        pytest.raises(RuntimeError, match="test failure"),
        JvmGateway(options(java_classes, tmp_path)) as jvm,
    ):
        pid = jvm.pid
        raise RuntimeError("test failure")
    assert pid is not None and not pid_alive(pid)


@pytest.mark.cluster
def test_a_jvm_that_exits_gives_jvm_gone(java_classes: Path, tmp_path: Path) -> None:
    with JvmGateway(options(java_classes, tmp_path)) as jvm:
        probe = jvm.call(lambda: jvm.jvm.bkconform.probe.Probe())
        # Probe.exit halts the JVM (Runtime.halt: no shutdown hooks); 10 s only caps a hang.
        with pytest.raises(JvmGone, match="exited"):
            jvm.call(probe.exit, timeout=10)
        with pytest.raises(JvmGone):
            jvm.call(lambda: probe.add(1, 2))


@pytest.mark.cluster
def test_jvm_that_cannot_start_is_reported_with_its_log(java_classes: Path, tmp_path: Path) -> None:
    bad = options(java_classes, tmp_path, extra_flags=["-XX:+NoSuchBkconformOption"])
    with pytest.raises(JvmStartError, match="NoSuchBkconformOption"):
        JvmGateway(bad).start()


@pytest.mark.cluster
def test_start_timeout_kills_the_silent_process(tmp_path: Path) -> None:
    fake_java = tmp_path / "java"
    fake_java.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c 'import time; time.sleep(600)' \"$@\"\n"
    )
    fake_java.chmod(fake_java.stat().st_mode | stat.S_IXUSR)
    # The fake java sleeps 600 s and never prints a port: the 1 s start timeout fires anywhere.
    gateway = JvmGateway(JvmOptions(java=str(fake_java), start_timeout=1.0))
    with pytest.raises(JvmStartError, match=r"no gateway port within 1\.0s"):
        gateway.start()
    assert processes_with(f"-Dbkconform.jvm={gateway._marker}") == []
    assert os.path.exists(str(gateway.log_path))

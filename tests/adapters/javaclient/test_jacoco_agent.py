"""The ``-javaagent:`` flag that starts JaCoCo's agent in the client's JVM (no JVM; the dump
through the agent's runtime API is tested on the real client in
tests/conformance/javaclient/test_coverage.py, cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.installations.jacoco import JacocoInstallation
from adapters.javaclient.errors import JacocoError
from adapters.javaclient.jacoco_agent import jvm_agent_flag


def test_the_agent_flag(fake_jacoco: JacocoInstallation, tmp_path: Path) -> None:
    agent = fake_jacoco.agent_jar
    assert jvm_agent_flag(fake_jacoco) == (
        f"-javaagent:{agent}=includes=org.apache.bookkeeper.client.*,output=none"
    )
    dest = tmp_path / "run" / "jacoco.exec"
    assert jvm_agent_flag(fake_jacoco, dest, includes="a.*") == (
        f"-javaagent:{agent}=includes=a.*,destfile={dest},output=file,append=true,dumponexit=true"
    )
    with pytest.raises(JacocoError, match="cannot take a destfile"):
        jvm_agent_flag(fake_jacoco, tmp_path / "a,b.exec")
    agent.unlink()
    with pytest.raises(JacocoError, match="is missing"):
        jvm_agent_flag(fake_jacoco)

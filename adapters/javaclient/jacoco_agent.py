"""JaCoCo's agent in the client's JVM: the ``-javaagent:`` flag that starts it, and its execution
data read through its runtime API over py4j.

The session keeps one JVM for many examples and kills it with SIGKILL, so the agent's own dump
at exit never happens: the data is read in the same JVM (:func:`dump`:
``RT.getAgent().getExecutionData(reset)``), with a reset so that each dump is one example's
alone. The jars come from :mod:`adapters.installations.jacoco`; the bytes are JaCoCo's exec
format (:mod:`adapters.javaclient.jacoco_exec`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from py4j.java_gateway import JavaClass

from adapters.installations.jacoco import JacocoInstallation
from adapters.javaclient.errors import JacocoError
from adapters.javaclient.gateway import JvmGateway

#: What the agent instruments: the client's packages (``*`` matches dots too, so
#: ``client.api`` and ``client.impl`` are in). Nothing else pays the probes' cost.
DEFAULT_INCLUDES = "org.apache.bookkeeper.client.*"


def jvm_agent_flag(
    jacoco: JacocoInstallation, destfile: Path | None = None, *, includes: str = DEFAULT_INCLUDES
) -> str:
    """The ``-javaagent:`` flag for the client's JVM (``JvmOptions.extra_flags``).

    Without ``destfile`` the agent writes nothing (``output=none``): the data is read with
    :func:`dump`. With it, the agent appends to ``destfile`` at a clean JVM exit; the session
    kills its JVM, so that file is written only if the JVM exits on its own.
    """
    if not jacoco.agent_jar.is_file():
        raise JacocoError(f"the JaCoCo agent {jacoco.agent_jar} is missing: reinstall JaCoCo")
    options = [f"includes={includes}"]
    if destfile is None:
        options.append("output=none")
    else:
        if any(mark in str(destfile) for mark in ",="):
            # The agent splits its options on commas and equal signs, quoting nothing.
            raise JacocoError(f"JaCoCo's agent cannot take a destfile with ',' or '=': {destfile}")
        options += [f"destfile={destfile}", "output=file", "append=true", "dumponexit=true"]
    return f"-javaagent:{jacoco.agent_jar}={','.join(options)}"


def _runtime(gateway: JvmGateway) -> Any:
    found = gateway.jvm.org.jacoco.agent.rt.RT
    if not isinstance(found, JavaClass):  # py4j makes an unknown name a package, silently
        raise JacocoError(
            "the client's JVM runs without the JaCoCo agent: start it with jvm_agent_flag(...) "
            "in JvmOptions.extra_flags"
        )
    return found.getAgent()


def dump(gateway: JvmGateway, *, reset: bool = True, timeout: float | None = None) -> bytes:
    """The agent's execution data now, in the exec format (``reset``: and zero its probes, so
    that the next dump holds only what ran after this one). Bounded by ``timeout`` (default the
    gateway's call timeout)."""
    return gateway.call(
        lambda: bytes(_runtime(gateway).getExecutionData(reset)),
        timeout=timeout,
        what="JaCoCo dump",
    )


def reset(gateway: JvmGateway, *, timeout: float | None = None) -> None:
    """Zero the agent's probes (what ran so far is no example's: the client's start-up)."""
    gateway.call(lambda: _runtime(gateway).reset(), timeout=timeout, what="JaCoCo reset")


__all__ = ["DEFAULT_INCLUDES", "dump", "jvm_agent_flag", "reset"]

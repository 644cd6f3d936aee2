"""Mutual TLS: a throwaway CA and certificates made with the ``openssl`` command."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from adapters.agent.client import ClientTls, ProcessState
from adapters.agent.errors import AgentUnauthenticated, AgentUnreachable
from tests.adapters.agent.conftest import managed_command, running_agent
from tests.capability import require

pytestmark = pytest.mark.cluster


def openssl(*args: str, cwd: Path) -> None:
    binary = shutil.which("openssl")
    assert binary is not None
    result = subprocess.run(
        [binary, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, f"openssl {' '.join(args)}: {result.stderr}"


def make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    key, cert = directory / f"{name}.key", directory / f"{name}.pem"
    openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign",
        cwd=directory,
    )  # fmt: skip
    return cert, key


def issue(
    directory: Path, ca: tuple[Path, Path], name: str, extensions: Sequence[str]
) -> tuple[Path, Path]:
    key, csr, cert = (directory / f"{name}{suffix}" for suffix in (".key", ".csr", ".pem"))
    ext = directory / f"{name}.ext"
    ext.write_text("\n".join(extensions) + "\n")
    openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={name}",
        cwd=directory,
    )  # fmt: skip
    openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca[0]), "-CAkey", str(ca[1]),
        "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(ext),
        cwd=directory,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path]:
    # The certificates are made with the openssl command (installed here as root if missing).
    require("openssl")
    directory = tmp_path / "pki"
    directory.mkdir()
    ca = make_ca(directory, "agent-test-ca")
    rogue_ca = make_ca(directory, "rogue-ca")
    server = issue(
        directory,
        ca,
        "agent-server",
        ["subjectAltName=IP:127.0.0.1,DNS:localhost", "extendedKeyUsage=serverAuth"],
    )
    client = issue(directory, ca, "test-client", ["extendedKeyUsage=clientAuth"])
    rogue = issue(directory, rogue_ca, "rogue-client", ["extendedKeyUsage=clientAuth"])
    return {
        "ca": ca[0],
        "server_cert": server[0],
        "server_key": server[1],
        "client_cert": client[0],
        "client_key": client[1],
        "rogue_cert": rogue[0],
        "rogue_key": rogue[1],
    }


def test_mutual_tls_requires_a_client_certificate_from_the_ca(
    agent_dir: Path, pki: dict[str, Path]
) -> None:
    args = [
        "--listen", "127.0.0.1:0", "--log-file", str(agent_dir / "managed.log"),
        "--tls-cert", str(pki["server_cert"]), "--tls-key", str(pki["server_key"]),
        "--tls-client-ca", str(pki["ca"]),
    ]  # fmt: skip
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir)) as agent:
        good = ClientTls(ca=pki["ca"], cert=pki["client_cert"], key=pki["client_key"])
        with agent.client(tls=good) as client:
            assert client.status().state is ProcessState.RUNNING
        wrong = agent.client(tls=good, token="a-wrong-token-of-some-length")
        with wrong, pytest.raises(AgentUnauthenticated):
            wrong.status()

        refused = {
            "no client certificate": ClientTls(ca=pki["ca"]),
            "a certificate from another CA": ClientTls(
                ca=pki["ca"], cert=pki["rogue_cert"], key=pki["rogue_key"]
            ),
        }
        for why, tls in refused.items():
            with agent.client(tls=tls, timeout=3) as client, pytest.raises(AgentUnreachable):
                client.status()
                pytest.fail(f"a client with {why} was answered")
        with agent.client(timeout=3) as plaintext, pytest.raises(AgentUnreachable):
            plaintext.status()

        log = agent.stderr()
        assert "allowed Status() by ipv4:127.0.0.1:" in log
        assert "cn=test-client" in log


def test_tls_without_client_ca_accepts_any_client_holding_the_token(
    agent_dir: Path, pki: dict[str, Path]
) -> None:
    args = [
        "--listen", "127.0.0.1:0", "--log-file", str(agent_dir / "managed.log"),
        "--tls-cert", str(pki["server_cert"]), "--tls-key", str(pki["server_key"]),
    ]  # fmt: skip
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir)) as agent:
        with agent.client(tls=ClientTls(ca=pki["ca"])) as client:
            assert client.status().state is ProcessState.RUNNING
        # The client checks the agent too: a CA that did not sign the agent's certificate fails.
        rogue_ca = pki["ca"].parent / "rogue-ca.pem"
        distrusting = agent.client(tls=ClientTls(ca=rogue_ca), timeout=3)
        with distrusting, pytest.raises(AgentUnreachable):
            distrusting.status()

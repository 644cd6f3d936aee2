"""BookKeeper's own shell (``bin/bookkeeper shell``) of a distribution, against any cluster.

The shell reads the cluster's metadata with the release's own code: ``ledgermetadata`` parses a
ledger's znode with that release's ``LedgerMetadataSerDe``, so running one release's shell on
a ledger another release wrote checks that the two read each other's metadata. The shell gets
a configuration of its own that names only the cluster's metadata service, so it can point at
any cluster, whichever release runs its bookies.

::

    shown = run_shell(home, "zk+hierarchical://127.0.0.1:2181/ledgers",
                      ["ledgermetadata", "-ledgerid", "150"], work_dir=tmp, timeout=120)
    shown.ok, shown.output
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.cluster.errors import ClusterError
from adapters.installations.bookkeeper import LOG4J2_XML

#: A shell JVM reads a few znodes: a small heap is plenty, and leaves room on a busy machine.
_SHELL_HEAP = "256m"


@dataclass(frozen=True)
class ShellRun:
    command: tuple[str, ...]
    returncode: int
    #: Standard output and error together (the shell prints its results through its logger,
    #: on the console).
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_shell(
    bookkeeper_home: Path,
    metadata_service_uri: str,
    arguments: Sequence[str],
    *,
    work_dir: Path,
    timeout: float,
) -> ShellRun:
    """``<home>/bin/bookkeeper shell ARGUMENTS`` against ``metadata_service_uri``.

    :raises ClusterError: the shell is missing, or did not finish within ``timeout`` seconds
        (it is killed then).
    """
    script = bookkeeper_home / "bin" / "bookkeeper"
    if not script.is_file():
        raise ClusterError(f"{bookkeeper_home} has no bin/bookkeeper")
    work_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".conf", prefix="shell-", dir=work_dir, delete=False
    ) as conf:
        conf.write(f"metadataServiceUri={metadata_service_uri}\n")
    # The installer's console layout, whatever the distribution's own file says (a release's
    # may log to files): from 4.18.0 the shell's results are slog attributes
    # (``LedgerMetaDataCommand`` at release-4.18.0), which only its ``%X`` shows.
    logging = work_dir / "shell-log4j2.xml"
    logging.write_text(LOG4J2_XML)
    command = (str(script), "shell", *arguments)
    environment = {
        **os.environ,
        "BOOKIE_CONF": conf.name,
        "BOOKIE_LOG_DIR": str(work_dir),
        "BOOKIE_MIN_HEAP_MEMORY": "64m",
        "BOOKIE_MAX_HEAP_MEMORY": _SHELL_HEAP,
        "BOOKIE_MAX_DIRECT_MEMORY": _SHELL_HEAP,
        # After the launcher's own -Dlog4j.configurationFile: the last one counts.
        "BOOKIE_EXTRA_OPTS": f"-Dlog4j.configurationFile={logging}",
    }
    try:
        # bin/bookkeeper execs java: the child is the JVM, which run() kills on the timeout.
        done = subprocess.run(
            command,
            env=environment,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(f"{' '.join(command)} did not finish within {timeout:.0f} s") from exc
    finally:
        Path(conf.name).unlink(missing_ok=True)
    return ShellRun(command, done.returncode, done.stdout + done.stderr)


#: ``ledgermetadata``'s line for the ledger, then the metadata's ``toString``: ``ledgerID: 150``
#: up to 4.17, ``ledgerID {ledgerId=150}`` from 4.18.0 (an attribute: the layout's ``%X``).
_LEDGER_LINE = re.compile(r"ledgerID(?:: |\s+\{ledgerId=)(\d+)")
_FIELD = re.compile(r"\b(state|lastEntryId|length|ensembleSize|writeQuorumSize|ackQuorumSize|"
                    r"digestType|formatVersion)=([A-Za-z0-9_\-]+)")  # fmt: skip
_ENSEMBLES = re.compile(r"ensembles=\{(.*?)\}")


@dataclass(frozen=True)
class ShownLedgerMetadata:
    """What ``shell ledgermetadata`` printed of a ledger (``LedgerMetadataImpl.toString``)."""

    ledger_id: int
    fields: dict[str, str]
    #: The ``ensembles={...}`` text as printed (first entry id -> bookie ids).
    ensembles: str


def parse_ledger_metadata_output(output: str) -> ShownLedgerMetadata | None:
    """The ledger the shell printed, or None when it printed none (an error, a missing
    ledger)."""
    found = _LEDGER_LINE.search(output)
    if found is None:
        return None
    rest = output[found.end() :]
    fields = {name: value for name, value in _FIELD.findall(rest)}
    ensembles = _ENSEMBLES.search(rest)
    return ShownLedgerMetadata(
        int(found.group(1)), fields, ensembles.group(1) if ensembles is not None else ""
    )


__all__ = [
    "ShellRun",
    "ShownLedgerMetadata",
    "parse_ledger_metadata_output",
    "run_shell",
]

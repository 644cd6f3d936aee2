"""BookKeeper's shell run against a cluster, and its ``ledgermetadata`` output read
(adapters/cluster/bookkeeper_shell.py). A stand-in ``bin/bookkeeper`` shows what the shell is
given; the real shells of 4.17.3 and 4.18.0 run in ``bkconform encodings`` (cluster tests)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from adapters.cluster.bookkeeper_shell import parse_ledger_metadata_output, run_shell
from adapters.cluster.errors import ClusterError

CAPTURES = Path(__file__).resolve().parents[2] / "conformance" / "encodings" / "captures"

#: Prints its arguments, its configuration and its extra JVM options, as the real launcher
#: would receive them.
STAND_IN = """#!/bin/sh
echo "args: $*"
echo "conf: $(cat "$BOOKIE_CONF")"
echo "extra: $BOOKIE_EXTRA_OPTS heap: $BOOKIE_MAX_HEAP_MEMORY"
if [ "$1 $2" = "shell sleep" ]; then exec sleep 30; fi
exit 3
"""


def _home(tmp_path: Path) -> Path:
    script = tmp_path / "home" / "bin" / "bookkeeper"
    script.parent.mkdir(parents=True)
    script.write_text(STAND_IN)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return tmp_path / "home"


def test_the_shell_gets_its_own_configuration_and_console_layout(tmp_path: Path) -> None:
    uri = "zk+hierarchical://127.0.0.1:2181/ledgers"
    run = run_shell(_home(tmp_path), uri, ["ledgermetadata", "-ledgerid", "150"],
                    work_dir=tmp_path / "work", timeout=30)  # fmt: skip
    assert run.returncode == 3 and not run.ok
    assert "args: shell ledgermetadata -ledgerid 150" in run.output
    assert f"conf: metadataServiceUri={uri}" in run.output
    layout = tmp_path / "work" / "shell-log4j2.xml"
    assert f"extra: -Dlog4j.configurationFile={layout} heap: 256m" in run.output
    assert "%X" in layout.read_text()  # 4.18.0's shell prints its results as attributes
    assert not list((tmp_path / "work").glob("shell-*.conf"))  # removed after the run


def test_a_shell_that_does_not_finish_is_killed(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="did not finish within 1 s"):
        run_shell(_home(tmp_path), "zk://x:1/ledgers", ["sleep"], work_dir=tmp_path, timeout=1)


def test_a_missing_shell_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="has no bin/bookkeeper"):
        run_shell(tmp_path, "zk://x:1/ledgers", [], work_dir=tmp_path, timeout=1)


@pytest.mark.parametrize("reader", ["4.17.3", "4.18.0"])
def test_both_releases_ledgermetadata_outputs_are_read(reader: str) -> None:
    """4.17 logs the ledger in the message; 4.18.0 as slog attributes (``{ledgerId=150}``)."""
    reads = json.loads((CAPTURES / "capture_4.18.0.json").read_text())["metadata_reads"]
    (closed,) = [r for r in reads if r["reader"] == reader and r["ledger_id"] == 150]
    shown = parse_ledger_metadata_output(closed["output_tail"])
    assert shown is not None and shown.ledger_id == 150
    assert shown.fields["state"] == "CLOSED"
    assert (shown.fields["lastEntryId"], shown.fields["length"]) == ("4", "35")
    assert shown.ensembles.startswith("0=[127.0.0.1:")


def test_an_output_without_a_ledger_reads_as_none() -> None:
    assert parse_ledger_metadata_output("LedgerMetaDataCommand - ledgerID\nlog entry") is None

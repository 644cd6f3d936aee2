"""The add recorder's Python side: codes by name, outcomes described; and (cluster) the
recorder compiled against a real distribution, its clock the frames' clock."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.javaclient import BookKeeperJavaClient, ClientOptions, JavaDigestType, JvmOptions
from adapters.javaclient.errors import JavaClientError
from adapters.javaclient.pipelined_adds import (
    AddOutcome,
    PipelinedAdds,
    code_name,
    java_monotonic,
    recorder_classes,
    source_text,
)


def test_codes_are_named_as_bookkeeper_names_them() -> None:
    assert code_name(0) == "OK"
    assert code_name(-6) == "NotEnoughBookies"
    assert code_name(-101) == "LedgerFenced"
    assert code_name(-9999) == "code -9999"


def test_outcomes_say_what_happened() -> None:
    assert AddOutcome(0, 0, 3, 1.0).describe() == "add 0 (e3): OK"
    assert AddOutcome(1, -6, -1, 1.0).describe() == "add 1 (-): NotEnoughBookies"
    assert AddOutcome(2, None, None, None).describe() == "add 2: no callback"
    assert AddOutcome(0, 0, 3, 1.0).acknowledged and not AddOutcome(1, -6, -1, 1.0).acknowledged


def test_the_recorder_ships_with_the_package_and_needs_bookkeeper_jars(tmp_path: Path) -> None:
    assert "class AddRecorder" in source_text() and "System.nanoTime()" in source_text()
    (tmp_path / "lib").mkdir()
    with pytest.raises(JavaClientError, match="no bookkeeper-server jar"):
        recorder_classes(tmp_path, root=tmp_path / "cache")


@pytest.mark.cluster
def test_pipelined_adds_are_called_back_on_the_frames_clock(
    bookkeeper_home: Path, tmp_path: Path
) -> None:
    classes = recorder_classes(bookkeeper_home, root=tmp_path / "cache")
    options = LocalClusterOptions(
        bookies=3, bookkeeper_home=bookkeeper_home, use_bookkeeper_home_env=False
    )
    with LocalCluster(options) as cluster:
        uri = cluster.endpoints().metadata_service_uri
        with BookKeeperJavaClient.launch(
            ClientOptions(uri),
            bookkeeper_home=bookkeeper_home,
            jars=[classes],
            jvm_options=JvmOptions(log_path=tmp_path / "jvm.log"),
        ) as client:
            ledger = client.create_ledger(3, 2, 2, JavaDigestType.CRC32, b"pw")
            before = time.monotonic()
            assert before <= java_monotonic(ledger) <= time.monotonic()
            adds = PipelinedAdds(ledger, 3)
            for index in range(3):
                adds.add(index, b"entry %d" % index)
            # awaitAll returns at the third callback; 20 s only caps a lost one. The clock
            # assertions are on order (before <= at <= after), not on duration.
            assert adds.wait(20.0)
            after = time.monotonic()
            outcomes = adds.outcomes()
    assert [(o.code, o.entry_id) for o in outcomes] == [(0, 0), (0, 1), (0, 2)]
    assert all(o.at is not None and before <= o.at <= after for o in outcomes)

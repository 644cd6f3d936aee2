"""The one Java-client session: a release it cannot route is refused before anything starts
(unless the role writes the metadata itself), and a record keeps its own frames' deliveries."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.javaclient import BookKeeperVersion
from conformance.javaclient.session import (
    ClientSession,
    SessionLayout,
    SessionOptions,
    SessionRefused,
    deliveries_of,
    model_bookie_names,
    routing_refusal,
)


def _home_of(tmp_path: Path, version: str) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"")
    return tmp_path


def test_a_client_that_cannot_be_routed_through_the_proxies_is_refused(tmp_path: Path) -> None:
    home = _home_of(tmp_path, "4.11.1")
    layout = SessionLayout(bookies=4, refusal_hint="try the other role")
    with pytest.raises(SessionRefused, match=r"BookKeeper >= 4\.12\.0.*try the other role"):
        ClientSession(SessionOptions(home, tmp_path, layout))


def test_a_role_that_writes_the_metadata_may_route_any_release() -> None:
    old, new = BookKeeperVersion(4, 11, 1), BookKeeperVersion(4, 12, 0)
    assert routing_refusal(old, SessionLayout(bookies=3, metadata_may_name_proxies=True)) is None
    assert routing_refusal(new, SessionLayout(bookies=3)) is None
    assert routing_refusal(old, SessionLayout(bookies=3)) is not None


def test_a_layout_needs_a_bookie() -> None:
    with pytest.raises(SessionRefused, match="at least one bookie"):
        SessionLayout(bookies=0)


def test_a_record_keeps_the_deliveries_of_its_own_frames_only() -> None:
    class Group:
        def deliveries(self) -> dict[int, Any]:
            return {1: "old example", 7: "this one", 8: "this one too"}

    frames = [SimpleNamespace(frame_id=7), SimpleNamespace(frame_id=8)]
    kept = deliveries_of(Group(), frames)  # type: ignore[arg-type]
    assert kept == {7: "this one", 8: "this one too"}


def test_proxies_are_named_by_the_roles_model_bookies() -> None:
    assert model_bookie_names({"p1": 2, "p2": 0}) == {"p1": "b3", "p2": "b1"}

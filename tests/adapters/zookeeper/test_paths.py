"""Ledger id <-> znode path for every layout, and the reserved znode names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.zookeeper.errors import InvalidLedgerId, InvalidLedgerPath
from adapters.zookeeper.paths import (
    LAYOUTS,
    flat_ledger_path,
    hybrid_hierarchical_ledger_path,
    id_generator_prefix,
    is_reserved_znode,
    ledger_id_from_path,
    ledger_path,
    long_hierarchical_ledger_path,
    long_id_generator_path,
    short_hierarchical_ledger_path,
)
from tests.adapters.zookeeper.strategies import LEDGER_IDS

INT_MAX = 2**31 - 1


def test_reference_examples() -> None:
    assert short_hierarchical_ledger_path(1) == "/ledgers/00/0000/L0001"
    assert long_hierarchical_ledger_path(1) == "/ledgers/000/0000/0000/0000/L0001"
    assert flat_ledger_path(1) == "/ledgers/L0000000001"
    assert short_hierarchical_ledger_path(150) == "/ledgers/00/0000/L0150"
    assert short_hierarchical_ledger_path(1234567890, "/a/b") == "/a/b/12/3456/L7890"
    assert long_hierarchical_ledger_path(2**63 - 1) == "/ledgers/922/3372/0368/5477/L5807"


def test_hybrid_switches_to_long_paths_at_integer_max_value() -> None:
    assert hybrid_hierarchical_ledger_path(INT_MAX - 1) == "/ledgers/21/4748/L3646"
    assert hybrid_hierarchical_ledger_path(INT_MAX) == "/ledgers/000/0000/0021/4748/L3647"
    assert ledger_path(INT_MAX - 1, layout="hierarchical") == "/ledgers/21/4748/L3646"
    assert ledger_path(5, layout="longhierarchical") == "/ledgers/000/0000/0000/0000/L0005"
    assert ledger_path(5, layout="flat") == "/ledgers/L0000000005"


@given(LEDGER_IDS, st.sampled_from(LAYOUTS), st.sampled_from(["/ledgers", "/bk/ledgers-2"]))
def test_path_and_id_are_inverse(ledger_id: int, layout: str, root: str) -> None:
    if layout == "flat" and ledger_id >= 10**10:
        with pytest.raises(InvalidLedgerId):
            ledger_path(ledger_id, root, layout)
        return
    path = ledger_path(ledger_id, root, layout)
    assert ledger_id_from_path(path, root, layout) == ledger_id
    name = path.rsplit("/", 1)[1]
    assert name.startswith("L") and not is_reserved_znode(name)


@given(st.integers(min_value=10**10, max_value=2**63 - 1))
def test_short_paths_do_not_hold_more_than_ten_digits(ledger_id: int) -> None:
    with pytest.raises(InvalidLedgerId):
        short_hierarchical_ledger_path(ledger_id)


@pytest.mark.parametrize("ledger_id", [-1, 2**63, True, 1.0, "1"])
def test_invalid_ledger_ids(ledger_id: object) -> None:
    with pytest.raises(InvalidLedgerId):
        ledger_path(ledger_id)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "layout"),
    [
        ("/ledgers/00/0000/L0150", "longhierarchical"),
        ("/ledgers/00/0000/L0150", "flat"),
        ("/other/00/0000/L0150", "hierarchical"),
        ("/ledgers/00/0000/0150", "hierarchical"),
        ("/ledgers/00/0000/L150", "hierarchical"),
        ("/ledgers/0/00000/L0150", "hierarchical"),
        ("/ledgers/00/0000/L01a0", "hierarchical"),
        ("/ledgers/000/0000/0000/0000/L0150", "hierarchical"),  # short ids use short paths
        ("/ledgers/21/4748/L3647", "hierarchical"),  # INT_MAX needs the long path
        ("/ledgers/L150", "flat"),
        ("/ledgers/L0000000150/x", "flat"),
        ("/ledgers/LAYOUT", "hierarchical"),
        ("/ledgers/00/0000/L0150\n", "hierarchical"),
        ("/ledgers/00/0000/L\u0661\u0665\u0660\u0660", "hierarchical"),
    ],
)
def test_non_canonical_paths_are_refused(path: str, layout: str) -> None:
    with pytest.raises(InvalidLedgerPath):
        ledger_id_from_path(path, "/ledgers", layout)


@pytest.mark.parametrize("root", ["ledgers", "/ledgers/", "/", "", "//x", "/a/../b", "/a\x00"])
def test_invalid_ledgers_roots(root: str) -> None:
    with pytest.raises(InvalidLedgerPath):
        ledger_path(1, root)


def test_unknown_layout() -> None:
    with pytest.raises(InvalidLedgerPath, match="layout"):
        ledger_path(1, "/ledgers", "ms")


@pytest.mark.parametrize(
    "name",
    ["available", "cookies", "LAYOUT", "INSTANCEID", "underreplication", "idgen", "idgen-long"],
)
def test_reserved_names(name: str) -> None:
    assert is_reserved_znode(name)
    assert is_reserved_znode("ID-0000000001")
    assert not is_reserved_znode("00") and not is_reserved_znode("L0000000001")


def test_id_generator_locations() -> None:
    assert id_generator_prefix("/ledgers", "hierarchical") == "/ledgers/idgen/ID-"
    assert id_generator_prefix("/ledgers", "longhierarchical") == "/ledgers/idgen/ID-"
    assert id_generator_prefix("/ledgers", "flat") == "/ledgers/ID-"
    assert long_id_generator_path("/ledgers") == "/ledgers/idgen-long"

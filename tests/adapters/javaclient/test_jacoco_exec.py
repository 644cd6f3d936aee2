"""JaCoCo's exec format read, merged and written in Python (no JVM): the bytes JaCoCo's
``ExecutionDataWriter`` writes, dumps appended one after another, and bad data refused."""

from __future__ import annotations

import struct

import pytest

from adapters.javaclient.errors import JacocoError
from adapters.javaclient.jacoco_exec import ClassProbes, ExecData, SessionInfo, merge_exec

LH = "org/apache/bookkeeper/client/LedgerHandle"
PAO = "org/apache/bookkeeper/client/PendingAddOp"
OTHER = "org/apache/bookkeeper/client/BookKeeper"


def header() -> bytes:
    return bytes([0x01, 0xC0, 0xC0, 0x10, 0x07])


def handle_and_add(name: str) -> bool:
    """A class selection, as a caller gives one: LedgerHandle's and PendingAddOp's."""
    return name in (LH, PAO)


def test_exec_bytes_are_jacocos_format() -> None:
    """Written by hand from JaCoCo's ExecutionDataWriter: header, session, class (id, name,
    varint probe count, probes packed lowest bit first)."""
    probes = (True, False, True, True, False, False, False, False, True)
    data = ExecData(
        (SessionInfo("vm-1", 5, 7),),
        {0x1234: ClassProbes(0x1234, "a/B", probes), 9: ClassProbes(9, "a/C", (False,))},
    )
    expected = (
        header()
        + bytes([0x10, 0, 4]) + b"vm-1" + struct.pack(">qq", 5, 7)
        + bytes([0x11]) + struct.pack(">q", 0x1234) + bytes([0, 3]) + b"a/B"
        + bytes([9, 0b00001101, 0b00000001])
    )  # fmt: skip
    assert data.to_bytes() == expected  # a/C has no hits: left out, as JaCoCo does
    parsed = ExecData.parse(expected)
    assert parsed.sessions == data.sessions
    assert parsed.classes == {0x1234: data.classes[0x1234]}


def test_a_long_probe_array_has_a_multi_byte_count() -> None:
    probes = tuple(i % 3 == 0 for i in range(300))
    data = ExecData((), {1: ClassProbes(1, LH, probes)})
    raw = data.to_bytes()
    assert raw[len(header()) + 1 + 8 + 2 + len(LH) :][:2] == bytes([0xAC, 0x02])  # 300
    assert ExecData.parse(raw) == data


def test_dumps_one_after_another_merge() -> None:
    first = ExecData((SessionInfo("s1", 1, 2),), {1: ClassProbes(1, LH, (True, False, False))})
    second = ExecData(
        (SessionInfo("s2", 3, 4),),
        {1: ClassProbes(1, LH, (False, False, True)), 2: ClassProbes(2, PAO, (True,))},
    )
    # append=true writes dumps one after another, each with its header
    both = ExecData.parse(first.to_bytes() + second.to_bytes())
    assert [s.id for s in both.sessions] == ["s1", "s2"]
    assert both.classes[1].probes == (True, False, True)
    assert ExecData.parse(merge_exec(first.to_bytes(), second.to_bytes())) == both
    assert first.merged(second) == both
    assert both.hits(handle_and_add) == 3
    assert first.new_hits(second, handle_and_add) == 2
    assert both.new_hits(second, handle_and_add) == 0
    # only the selected classes count
    other = ExecData((), {3: ClassProbes(3, OTHER, (True,))})
    assert first.new_hits(other, handle_and_add) == 0 and other.hits(handle_and_add) == 0
    assert other.hits(lambda name: True) == 1


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x11garbage", "no exec header"),
        (bytes([0x01, 0xCA, 0xFE, 0x10, 0x07]), "magic 0xcafe"),
        (bytes([0x01, 0xC0, 0xC0, 0x10, 0x06]), "exec format 0x1006"),
        (header() + bytes([0x10, 0, 9]) + b"vm", "ends in the middle"),
        (header() + bytes([0x42]), "unknown block 0x42"),
    ],
)
def test_bad_exec_data_is_a_clear_error(raw: bytes, message: str) -> None:
    with pytest.raises(JacocoError, match=message):
        ExecData.parse(raw)


def test_disagreeing_data_of_one_class_is_refused() -> None:
    one = ExecData((), {1: ClassProbes(1, LH, (True,))})
    other = ExecData((), {1: ClassProbes(1, LH, (True, False))})
    with pytest.raises(JacocoError, match="disagrees"):
        one.merged(other)
    with pytest.raises(JacocoError, match="disagrees"):
        one.new_hits(other, handle_and_add)

"""Protobuf messages read as the fields on the wire, in the order they were written.

The generated classes (``*_pb2``) parse a message into values and serialise it again in
field-number order, which is what protobuf-java writes; they cannot say in which order a
writer put the fields. Two encoders may write the same message with the fields in different
orders (LightProto writes them in the order the ``.proto`` declares them; BookKeeper 4.18.0
switched to it), and both are valid protobuf: a parser must accept fields in any order
(protobuf encoding guide, "Field Order"). To compare the bytes two releases put on the wire,
and to say which fields differ, a message is read here as a sequence of :class:`WireField`
in wire order, nested messages read the same way when a descriptor names their type.

:func:`emit` writes a sequence back in that order, so ``emit(parse(b, d)) == b`` for any
message whose varints and lengths are minimal (what every protobuf encoder writes); a writer
that does otherwise shows up as a round trip that does not return its bytes
(:func:`round_trips`).

::

    fields = parse(payload, pb.Request.DESCRIPTOR)
    [f.name for f in fields]                        # ['header', 'addRequest']
    order(fields[1])                                # ['flag', 'ledgerId', 'entryId', ...]
    emit(replace_values(fields, {"txnId": 0}))      # the same bytes with txnId 0
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

from google.protobuf.descriptor import FieldDescriptor

from adapters.errors import AdapterError

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5
_FIXED = {FIXED64: 8, FIXED32: 4}
_VARINT_LIMIT = 1 << 64


#: A message's descriptor (``pb.Request.DESCRIPTOR``). The protobuf stubs type a generated
#: class's descriptor as the union of the pure-Python and the upb implementations, which share
#: the interface used here (``fields``, ``fields_by_number``, ``name``): either is accepted.
MessageDescriptor: TypeAlias = Any


class WireFormatError(AdapterError, ValueError):
    """The bytes are not a protobuf message (a truncated field, an unknown wire type)."""


@dataclass(frozen=True)
class WireField:
    """One field as it stands on the wire.

    ``value`` is the unsigned varint (a negative int64 as its two's complement, as written),
    the raw bytes of a fixed or length-delimited field, or, for a field whose descriptor says
    it is a message, the nested message's fields in their own wire order.
    """

    number: int
    wire_type: int
    value: int | bytes | tuple[WireField, ...]
    #: The field's name in the descriptor (``#<number>`` for a field it does not declare).
    name: str
    #: The field's descriptor (None: not declared, e.g. an unknown field).
    descriptor: FieldDescriptor | None = None

    @property
    def is_message(self) -> bool:
        return isinstance(self.value, tuple)

    @property
    def fields(self) -> tuple[WireField, ...]:
        """The nested message's fields (empty for a scalar field)."""
        return self.value if isinstance(self.value, tuple) else ()

    def signed(self) -> int:
        """A varint read as a signed 64-bit integer (int64 fields: -1 is 2**64-1 on the wire)."""
        if not isinstance(self.value, int):
            raise TypeError(f"{self.name} is not a varint")
        return self.value - _VARINT_LIMIT if self.value >= 1 << 63 else self.value

    def describe(self) -> str:
        """``name=value`` with enums named and nested messages in wire order."""
        if isinstance(self.value, tuple):
            return f"{self.name}{{{describe(self.value)}}}"
        if isinstance(self.value, bytes):
            if self.descriptor is not None and self.descriptor.type == FieldDescriptor.TYPE_STRING:
                return f"{self.name}={self.value.decode('utf-8', 'backslashreplace')!r}"
            shown = self.value[:12].hex() + ("..." if len(self.value) > 12 else "")
            return f"{self.name}=<{len(self.value)}B {shown}>"
        return f"{self.name}={_scalar_text(self)}"


def _scalar_text(field: WireField) -> str:
    descriptor = field.descriptor
    if descriptor is not None and descriptor.enum_type is not None:
        number = field.signed()
        enum_value = descriptor.enum_type.values_by_number.get(number)
        return f"{enum_value.name}({number})" if enum_value is not None else str(number)
    if descriptor is not None and descriptor.type in (
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_INT32,
    ):
        return str(field.signed())
    return str(field.value)


def describe(fields: Sequence[WireField]) -> str:
    """The fields in wire order, one ``name=value`` after the other."""
    return " ".join(field.describe() for field in fields)


def order(fields: Sequence[WireField]) -> list[str]:
    """The names of ``fields`` in the order they were written."""
    return [field.name for field in fields]


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if offset >= len(data):
            raise WireFormatError("a varint runs past the end of the message")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
        if shift >= 70:
            raise WireFormatError("a varint longer than 10 bytes")


def encode_varint(value: int) -> bytes:
    """The minimal varint of an unsigned value (a negative int64: its two's complement)."""
    if value < 0:
        value += _VARINT_LIMIT
    if not 0 <= value < _VARINT_LIMIT:
        raise WireFormatError(f"{value} does not fit a 64-bit varint")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def parse(data: bytes, descriptor: MessageDescriptor | None) -> tuple[WireField, ...]:
    """The fields of a message in wire order; nested messages parsed when ``descriptor``
    declares them. :class:`WireFormatError` for bytes that are not a message."""
    fields: list[WireField] = []
    offset = 0
    while offset < len(data):
        key, offset = _read_varint(data, offset)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireFormatError(f"field number 0 at byte {offset}")
        declared = descriptor.fields_by_number.get(number) if descriptor is not None else None
        name = declared.name if declared is not None else f"#{number}"
        value: int | bytes | tuple[WireField, ...]
        if wire_type == VARINT:
            value, offset = _read_varint(data, offset)
        elif wire_type in _FIXED:
            end = offset + _FIXED[wire_type]
            if end > len(data):
                raise WireFormatError(f"{name}: a fixed field runs past the end")
            value, offset = data[offset:end], end
        elif wire_type == LENGTH_DELIMITED:
            length, offset = _read_varint(data, offset)
            end = offset + length
            if end > len(data):
                raise WireFormatError(
                    f"{name}: {length} bytes announced, {len(data) - offset} left"
                )
            raw = data[offset:end]
            offset = end
            if declared is not None and declared.type == FieldDescriptor.TYPE_MESSAGE:
                value = parse(raw, declared.message_type)
            else:
                value = raw
        else:
            raise WireFormatError(f"{name}: wire type {wire_type} (groups are not used here)")
        fields.append(WireField(number, wire_type, value, name, declared))
    return tuple(fields)


def emit(fields: Sequence[WireField]) -> bytes:
    """The bytes of ``fields`` in their order (minimal varints and lengths)."""
    out = bytearray()
    for field in fields:
        out += encode_varint(field.number << 3 | field.wire_type)
        value = field.value
        if field.wire_type == VARINT:
            assert isinstance(value, int)
            out += encode_varint(value)
        elif field.wire_type in _FIXED:
            assert isinstance(value, bytes)
            out += value
        else:
            raw = emit(value) if isinstance(value, tuple) else value
            assert isinstance(raw, bytes)
            out += encode_varint(len(raw)) + raw
    return bytes(out)


def round_trips(data: bytes, descriptor: MessageDescriptor | None) -> bool:
    """Whether :func:`emit` of the parsed fields gives ``data`` back (minimal encodings)."""
    return emit(parse(data, descriptor)) == data


def map_fields(
    fields: Sequence[WireField], change: Callable[[WireField], WireField]
) -> tuple[WireField, ...]:
    """``fields`` with ``change`` applied to every field, nested ones first (order kept)."""
    changed = []
    for field in fields:
        if isinstance(field.value, tuple):
            field = replace(field, value=map_fields(field.value, change))
        changed.append(change(field))
    return tuple(changed)


def replace_values(fields: Sequence[WireField], values: dict[str, Any]) -> tuple[WireField, ...]:
    """``fields`` with the scalar fields named in ``values`` (at any depth) set to them."""

    def change(field: WireField) -> WireField:
        if field.name in values and not field.is_message:
            return replace(field, value=values[field.name])
        return field

    return map_fields(fields, change)


def find(fields: Sequence[WireField], name: str) -> WireField | None:
    """The first field called ``name``, searched depth first in wire order."""
    for field in fields:
        if field.name == name:
            return field
        found = find(field.fields, name)
        if found is not None:
            return found
    return None


__all__ = [
    "FIXED32",
    "FIXED64",
    "LENGTH_DELIMITED",
    "VARINT",
    "MessageDescriptor",
    "WireField",
    "WireFormatError",
    "describe",
    "emit",
    "encode_varint",
    "find",
    "map_fields",
    "order",
    "parse",
    "replace_values",
    "round_trips",
]

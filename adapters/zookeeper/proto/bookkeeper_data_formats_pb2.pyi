from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LedgerMetadataFormat(_message.Message):
    __slots__ = ("quorumSize", "ensembleSize", "length", "lastEntryId", "state", "segment", "digestType", "password", "ackQuorumSize", "ctime", "customMetadata", "cToken")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        OPEN: _ClassVar[LedgerMetadataFormat.State]
        IN_RECOVERY: _ClassVar[LedgerMetadataFormat.State]
        CLOSED: _ClassVar[LedgerMetadataFormat.State]
    OPEN: LedgerMetadataFormat.State
    IN_RECOVERY: LedgerMetadataFormat.State
    CLOSED: LedgerMetadataFormat.State
    class DigestType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CRC32: _ClassVar[LedgerMetadataFormat.DigestType]
        HMAC: _ClassVar[LedgerMetadataFormat.DigestType]
        CRC32C: _ClassVar[LedgerMetadataFormat.DigestType]
        DUMMY: _ClassVar[LedgerMetadataFormat.DigestType]
    CRC32: LedgerMetadataFormat.DigestType
    HMAC: LedgerMetadataFormat.DigestType
    CRC32C: LedgerMetadataFormat.DigestType
    DUMMY: LedgerMetadataFormat.DigestType
    class Segment(_message.Message):
        __slots__ = ("ensembleMember", "firstEntryId")
        ENSEMBLEMEMBER_FIELD_NUMBER: _ClassVar[int]
        FIRSTENTRYID_FIELD_NUMBER: _ClassVar[int]
        ensembleMember: _containers.RepeatedScalarFieldContainer[str]
        firstEntryId: int
        def __init__(self, ensembleMember: _Optional[_Iterable[str]] = ..., firstEntryId: _Optional[int] = ...) -> None: ...
    class cMetadataMapEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    QUORUMSIZE_FIELD_NUMBER: _ClassVar[int]
    ENSEMBLESIZE_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    LASTENTRYID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_FIELD_NUMBER: _ClassVar[int]
    DIGESTTYPE_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    ACKQUORUMSIZE_FIELD_NUMBER: _ClassVar[int]
    CTIME_FIELD_NUMBER: _ClassVar[int]
    CUSTOMMETADATA_FIELD_NUMBER: _ClassVar[int]
    CTOKEN_FIELD_NUMBER: _ClassVar[int]
    quorumSize: int
    ensembleSize: int
    length: int
    lastEntryId: int
    state: LedgerMetadataFormat.State
    segment: _containers.RepeatedCompositeFieldContainer[LedgerMetadataFormat.Segment]
    digestType: LedgerMetadataFormat.DigestType
    password: bytes
    ackQuorumSize: int
    ctime: int
    customMetadata: _containers.RepeatedCompositeFieldContainer[LedgerMetadataFormat.cMetadataMapEntry]
    cToken: int
    def __init__(self, quorumSize: _Optional[int] = ..., ensembleSize: _Optional[int] = ..., length: _Optional[int] = ..., lastEntryId: _Optional[int] = ..., state: _Optional[_Union[LedgerMetadataFormat.State, str]] = ..., segment: _Optional[_Iterable[_Union[LedgerMetadataFormat.Segment, _Mapping]]] = ..., digestType: _Optional[_Union[LedgerMetadataFormat.DigestType, str]] = ..., password: _Optional[bytes] = ..., ackQuorumSize: _Optional[int] = ..., ctime: _Optional[int] = ..., customMetadata: _Optional[_Iterable[_Union[LedgerMetadataFormat.cMetadataMapEntry, _Mapping]]] = ..., cToken: _Optional[int] = ...) -> None: ...

class CookieFormat(_message.Message):
    __slots__ = ("bookieHost", "journalDir", "ledgerDirs", "instanceId", "indexDirs")
    BOOKIEHOST_FIELD_NUMBER: _ClassVar[int]
    JOURNALDIR_FIELD_NUMBER: _ClassVar[int]
    LEDGERDIRS_FIELD_NUMBER: _ClassVar[int]
    INSTANCEID_FIELD_NUMBER: _ClassVar[int]
    INDEXDIRS_FIELD_NUMBER: _ClassVar[int]
    bookieHost: str
    journalDir: str
    ledgerDirs: str
    instanceId: str
    indexDirs: str
    def __init__(self, bookieHost: _Optional[str] = ..., journalDir: _Optional[str] = ..., ledgerDirs: _Optional[str] = ..., instanceId: _Optional[str] = ..., indexDirs: _Optional[str] = ...) -> None: ...

class BookieServiceInfoFormat(_message.Message):
    __slots__ = ("endpoints", "properties")
    class Endpoint(_message.Message):
        __slots__ = ("id", "port", "host", "protocol", "auth", "extensions")
        ID_FIELD_NUMBER: _ClassVar[int]
        PORT_FIELD_NUMBER: _ClassVar[int]
        HOST_FIELD_NUMBER: _ClassVar[int]
        PROTOCOL_FIELD_NUMBER: _ClassVar[int]
        AUTH_FIELD_NUMBER: _ClassVar[int]
        EXTENSIONS_FIELD_NUMBER: _ClassVar[int]
        id: str
        port: int
        host: str
        protocol: str
        auth: _containers.RepeatedScalarFieldContainer[str]
        extensions: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, id: _Optional[str] = ..., port: _Optional[int] = ..., host: _Optional[str] = ..., protocol: _Optional[str] = ..., auth: _Optional[_Iterable[str]] = ..., extensions: _Optional[_Iterable[str]] = ...) -> None: ...
    class PropertiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    endpoints: _containers.RepeatedCompositeFieldContainer[BookieServiceInfoFormat.Endpoint]
    properties: _containers.ScalarMap[str, str]
    def __init__(self, endpoints: _Optional[_Iterable[_Union[BookieServiceInfoFormat.Endpoint, _Mapping]]] = ..., properties: _Optional[_Mapping[str, str]] = ...) -> None: ...

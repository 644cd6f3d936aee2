from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProcessState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROCESS_STATE_UNSPECIFIED: _ClassVar[ProcessState]
    NEVER_STARTED: _ClassVar[ProcessState]
    RUNNING: _ClassVar[ProcessState]
    PAUSED: _ClassVar[ProcessState]
    STOPPED: _ClassVar[ProcessState]
PROCESS_STATE_UNSPECIFIED: ProcessState
NEVER_STARTED: ProcessState
RUNNING: ProcessState
PAUSED: ProcessState
STOPPED: ProcessState

class StatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StartRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProcessStatus(_message.Message):
    __slots__ = ("state", "pid", "exit_code", "uptime_seconds", "journal_off", "starts", "command", "partitioned_peers")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_OFF_FIELD_NUMBER: _ClassVar[int]
    STARTS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PARTITIONED_PEERS_FIELD_NUMBER: _ClassVar[int]
    state: ProcessState
    pid: int
    exit_code: int
    uptime_seconds: float
    journal_off: bool
    starts: int
    command: _containers.RepeatedScalarFieldContainer[str]
    partitioned_peers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, state: _Optional[_Union[ProcessState, str]] = ..., pid: _Optional[int] = ..., exit_code: _Optional[int] = ..., uptime_seconds: _Optional[float] = ..., journal_off: _Optional[bool] = ..., starts: _Optional[int] = ..., command: _Optional[_Iterable[str]] = ..., partitioned_peers: _Optional[_Iterable[str]] = ...) -> None: ...

class FaultRequest(_message.Message):
    __slots__ = ("instance_id",)
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    def __init__(self, instance_id: _Optional[str] = ...) -> None: ...

class WipeRequest(_message.Message):
    __slots__ = ("instance_id", "kill_first")
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    KILL_FIRST_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    kill_first: bool
    def __init__(self, instance_id: _Optional[str] = ..., kill_first: _Optional[bool] = ...) -> None: ...

class WipeReply(_message.Message):
    __slots__ = ("status", "wiped_dirs", "removed_entries")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WIPED_DIRS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    status: ProcessStatus
    wiped_dirs: _containers.RepeatedScalarFieldContainer[str]
    removed_entries: int
    def __init__(self, status: _Optional[_Union[ProcessStatus, _Mapping]] = ..., wiped_dirs: _Optional[_Iterable[str]] = ..., removed_entries: _Optional[int] = ...) -> None: ...

class PartitionRequest(_message.Message):
    __slots__ = ("instance_id", "peers")
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    PEERS_FIELD_NUMBER: _ClassVar[int]
    instance_id: str
    peers: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, instance_id: _Optional[str] = ..., peers: _Optional[_Iterable[str]] = ...) -> None: ...

class PartitionStatus(_message.Message):
    __slots__ = ("peers", "backend")
    PEERS_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    peers: _containers.RepeatedScalarFieldContainer[str]
    backend: str
    def __init__(self, peers: _Optional[_Iterable[str]] = ..., backend: _Optional[str] = ...) -> None: ...

class LogTailRequest(_message.Message):
    __slots__ = ("lines",)
    LINES_FIELD_NUMBER: _ClassVar[int]
    lines: int
    def __init__(self, lines: _Optional[int] = ...) -> None: ...

class LogTailReply(_message.Message):
    __slots__ = ("path", "lines")
    PATH_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    path: str
    lines: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, path: _Optional[str] = ..., lines: _Optional[_Iterable[str]] = ...) -> None: ...

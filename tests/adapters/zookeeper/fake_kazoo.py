"""An in-memory ZooKeeper tree behind kazoo's async calls, for fast tests of the adapter's
ledger functions (no JVM).

It answers as ZooKeeper does where those functions care: versions, children counts, ephemeral
znodes owned by a session (gone when the session is), sequential names, makepath, the errors
kazoo raises (NoNode, NodeExists, BadVersion, NotEmpty, NoChildrenForEphemerals) and
all-or-nothing transactions. Several clients share one :class:`FakeEnsemble`, each with its
own session. ``calls`` counts each client's requests by kind.
"""

from __future__ import annotations

import itertools
import posixpath
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
)
from kazoo.protocol.states import ZnodeStat


@dataclass
class _Znode:
    data: bytes
    owner: int = 0
    version: int = 0
    children: set[str] = field(default_factory=set)
    sequence: int = 0


class _Result:
    """kazoo's ``IAsyncResult``, already settled."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class FakeEnsemble:
    """The tree, shared by the clients :meth:`client` makes."""

    def __init__(self) -> None:
        self.nodes: dict[str, _Znode] = {"/": _Znode(b"")}
        self._sessions = itertools.count(0x1000)

    def client(self) -> FakeKazoo:
        return FakeKazoo(self, next(self._sessions))

    def paths(self, under: str = "/") -> list[str]:
        prefix = under.rstrip("/") + "/"
        return sorted(p for p in self.nodes if p.startswith(prefix) or p == under)

    def stat(self, path: str) -> ZnodeStat:
        node = self.nodes[path]
        return ZnodeStat(
            0, 0, 0, 0, node.version, 0, 0, node.owner, len(node.data), len(node.children), 0
        )

    # The operations, raising as ZooKeeper answers -------------------------------------------

    def create(
        self, path: str, data: bytes, owner: int, *, sequence: bool = False, makepath: bool = False
    ) -> str:
        parent = posixpath.dirname(path) or "/"
        if parent not in self.nodes:
            if not makepath:
                raise NoNodeError(parent)
            self.ensure(parent)
        parent_node = self.nodes[parent]
        if parent_node.owner:
            raise NoChildrenForEphemeralsError(parent)
        if sequence:
            path = f"{path}{parent_node.sequence:010d}"
            parent_node.sequence += 1
        if path in self.nodes:
            raise NodeExistsError(path)
        self.nodes[path] = _Znode(bytes(data), owner)
        parent_node.children.add(posixpath.basename(path))
        return path

    def ensure(self, path: str) -> None:
        parts = [p for p in path.split("/") if p]
        for depth in range(1, len(parts) + 1):
            here = "/" + "/".join(parts[:depth])
            if here not in self.nodes:
                self.create(here, b"", 0)

    def delete(self, path: str, version: int = -1) -> None:
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        if node.children:
            raise NotEmptyError(path)
        del self.nodes[path]
        self.nodes[posixpath.dirname(path) or "/"].children.discard(posixpath.basename(path))

    def set(self, path: str, data: bytes, version: int = -1) -> ZnodeStat:
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        node.data, node.version = bytes(data), node.version + 1
        return self.stat(path)

    def end_session(self, session: int) -> None:
        """The session closed or expired: its ephemeral znodes go."""
        for path in sorted((p for p, n in self.nodes.items() if n.owner == session), reverse=True):
            self.delete(path)


class _Transaction:
    def __init__(self, client: FakeKazoo) -> None:
        self.client = client
        self.ops: list[tuple[str, bytes, bool, bool]] = []

    def create(
        self, path: str, value: bytes = b"", ephemeral: bool = False, sequence: bool = False
    ) -> None:
        self.ops.append((path, value, ephemeral, sequence))

    def commit_async(self) -> _Result:
        if self.client.failure is not None:
            return _Result(error=self.client.failure)
        ensemble, created, results = self.client.ensemble, [], []
        failed = False
        for path, value, ephemeral, sequence in self.ops:
            if failed:
                results.append(RolledBackError())
                continue
            try:
                owner = self.client.session if ephemeral else 0
                made = ensemble.create(path, value, owner, sequence=sequence)
                created.append(made)
                results.append(made)
            except Exception as exc:
                failed = True
                results.append(exc)
        if failed:
            for path in reversed(created):
                ensemble.delete(path)
            results = [r if isinstance(r, Exception) else RolledBackError() for r in results]
        return _Result(results)


class FakeKazoo:
    """The part of ``KazooClient`` the adapter uses, on a :class:`FakeEnsemble`."""

    def __init__(self, ensemble: FakeEnsemble, session: int) -> None:
        self.ensemble = ensemble
        self.session = session
        self.calls: Counter[str] = Counter()
        #: Raised by every request from now on (a lost connection, say).
        self.failure: BaseException | None = None

    def _do(self, kind: str, operation: Any) -> _Result:
        self.calls[kind] += 1
        if self.failure is not None:
            return _Result(error=self.failure)
        try:
            return _Result(operation())
        except Exception as exc:
            return _Result(error=exc)

    def create_async(
        self,
        path: str,
        value: bytes = b"",
        acl: Any = None,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
        include_data: bool = False,
    ) -> _Result:
        def create() -> Any:
            owner = self.session if ephemeral else 0
            created = self.ensemble.create(path, value, owner, sequence=sequence, makepath=makepath)
            return (created, self.ensemble.stat(created)) if include_data else created

        return self._do("create", create)

    def ensure_path_async(self, path: str, acl: Any = None) -> _Result:
        return self._do("ensure_path", lambda: self.ensemble.ensure(path))

    def get_async(self, path: str, watch: Any = None) -> _Result:
        def get() -> Any:
            if path not in self.ensemble.nodes:
                raise NoNodeError(path)
            return self.ensemble.nodes[path].data, self.ensemble.stat(path)

        return self._do("get", get)

    def exists_async(self, path: str, watch: Any = None) -> _Result:
        return self._do(
            "exists",
            lambda: self.ensemble.stat(path) if path in self.ensemble.nodes else None,
        )

    def get_children_async(self, path: str, watch: Any = None, include_data: bool = False) -> Any:
        def children() -> list[str]:
            if path not in self.ensemble.nodes:
                raise NoNodeError(path)
            return sorted(self.ensemble.nodes[path].children)

        return self._do("children", children)

    def set_async(self, path: str, value: bytes, version: int = -1) -> _Result:
        return self._do("set", lambda: self.ensemble.set(path, value, version))

    def delete_async(self, path: str, version: int = -1) -> _Result:
        return self._do("delete", lambda: self.ensemble.delete(path, version))

    def transaction(self) -> _Transaction:
        self.calls["transaction"] += 1
        return _Transaction(self)

    def stop(self) -> None:
        self.ensemble.end_session(self.session)

    def close(self) -> None:
        pass

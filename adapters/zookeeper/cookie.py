"""Bookie cookies: the identity record at ``<root>/cookies/<bookieId>`` (``bookie/Cookie.java``).

Layout versions 4 and 5 are ``"<version>\\n"`` followed by the protobuf TextFormat of
``CookieFormat``; BookKeeper 4.17 writes 5 (with ``indexDirs``), 4.11 writes 4. Version 3 was
four plain lines. Directory lists are encoded ``"<count>\\t<dir>\\t<dir>..."``; journal
directories are joined with ``,``.

TextFormat is produced here rather than by Python's ``text_format``, because the two runtimes
escape differently: Java's ``TextFormat.escapeBytes`` writes ``\\a \\b \\f \\v`` and escapes every
byte outside printable ASCII (UTF-8 included) as 3-digit octal. This module does the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf import text_format

from adapters.zookeeper._protobuf import missing_required_fields
from adapters.zookeeper.errors import MalformedCookie
from adapters.zookeeper.proto.bookkeeper_data_formats_pb2 import CookieFormat

CURRENT_COOKIE_LAYOUT_VERSION: Final = 5
_DIR_SEPARATOR: Final = "\t"
_JAVA_ESCAPES: Final = {
    0x07: "\\a",
    0x08: "\\b",
    0x0C: "\\f",
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
    0x0B: "\\v",
    0x5C: "\\\\",
    0x27: "\\'",
    0x22: '\\"',
}


@dataclass(frozen=True)
class Cookie:
    """A bookie cookie.

    ``journal_dirs`` is stored as BookKeeper stores it: the journal directories joined with
    ``,``. ``index_dirs`` is written only for layout version 5 and above.
    """

    bookie_host: str
    journal_dirs: str
    ledger_dirs: tuple[str, ...]
    instance_id: str | None = None
    index_dirs: tuple[str, ...] | None = None
    layout_version: int = CURRENT_COOKIE_LAYOUT_VERSION

    def __post_init__(self) -> None:
        object.__setattr__(self, "ledger_dirs", tuple(self.ledger_dirs))
        if self.index_dirs is not None:
            object.__setattr__(self, "index_dirs", tuple(self.index_dirs))

    def mismatches(self, other: Cookie) -> list[str]:
        """Which fields differ the way ``Cookie.verify`` checks them (empty list: compatible).

        Compared: bookie host, journal dirs, ledger dirs (as encoded), instance id, and index
        dirs when both cookies have them. The layout version is not compared.
        """
        differences = []
        for name, mine, theirs in (
            ("bookieHost", self.bookie_host, other.bookie_host),
            ("journalDir", self.journal_dirs, other.journal_dirs),
            ("ledgerDirs", encode_dirs(self.ledger_dirs), encode_dirs(other.ledger_dirs)),
            ("instanceId", self.instance_id, other.instance_id),
        ):
            if mine != theirs:
                differences.append(f"{name}: {mine!r} != {theirs!r}")
        if (
            self.index_dirs is not None
            and other.index_dirs is not None
            and self.index_dirs != other.index_dirs
        ):
            differences.append(f"indexDirs: {self.index_dirs!r} != {other.index_dirs!r}")
        return differences


def new_cookie(
    *,
    bookie_host: str,
    journal_dirs: Sequence[str] | str,
    ledger_dirs: Sequence[str],
    instance_id: str | None,
    index_dirs: Sequence[str] | None = None,
    layout_version: int = CURRENT_COOKIE_LAYOUT_VERSION,
) -> Cookie:
    """The cookie a bookie with this configuration writes (``Cookie.generateCookie``).

    Without explicit ``index_dirs``, version 5 records the ledger dirs, as BookKeeper does when
    no index dirs are configured (see the golden 4.17.4 cookies).
    """
    journal = journal_dirs if isinstance(journal_dirs, str) else ",".join(journal_dirs)
    index: tuple[str, ...] | None = None
    if layout_version >= 5:
        index = tuple(index_dirs) if index_dirs is not None else tuple(ledger_dirs)
    return Cookie(
        bookie_host=bookie_host,
        journal_dirs=journal,
        ledger_dirs=tuple(ledger_dirs),
        instance_id=instance_id,
        index_dirs=index,
        layout_version=layout_version,
    )


def encode_dirs(dirs: Sequence[str]) -> str:
    """``"<count>\\t<dir>\\t<dir>..."`` (``Cookie.encodeDirPaths``)."""
    return _DIR_SEPARATOR.join([str(len(dirs)), *dirs])


def decode_dirs(encoded: str, *, path: str | None = None) -> tuple[str, ...]:
    """The inverse of :func:`encode_dirs`; the count must match."""
    count, separator, rest = encoded.partition(_DIR_SEPARATOR)
    dirs = tuple(rest.split(_DIR_SEPARATOR)) if separator else ()
    if not count.isascii() or not count.isdigit() or int(count) != len(dirs):
        raise MalformedCookie(f"directory list {encoded!r} is not '<count>\\t<dir>...'", path=path)
    return dirs


def serialize_cookie(cookie: Cookie) -> bytes:
    """Cookie znode bytes, as ``Cookie.toString().getBytes(UTF_8)`` writes them."""
    lines = [str(cookie.layout_version)]
    if cookie.layout_version <= 3:
        lines += [cookie.bookie_host, cookie.journal_dirs, encode_dirs(cookie.ledger_dirs)]
        return ("\n".join(lines) + "\n").encode("utf-8")
    fields: list[tuple[str, str]] = [
        ("bookieHost", cookie.bookie_host),
        ("journalDir", cookie.journal_dirs),
        ("ledgerDirs", encode_dirs(cookie.ledger_dirs)),
    ]
    if cookie.instance_id is not None:
        fields.append(("instanceId", cookie.instance_id))
    if cookie.index_dirs is not None and cookie.layout_version >= 5:
        fields.append(("indexDirs", encode_dirs(cookie.index_dirs)))
    lines += [f'{name}: "{java_text_escape(value)}"' for name, value in fields]
    return ("\n".join(lines) + "\n").encode("utf-8")


def parse_cookie(data: bytes, *, path: str | None = None) -> Cookie:
    """Parse a cookie znode (layout version 3, 4 or 5).

    :raises MalformedCookie: not UTF-8, no version line, bad TextFormat, missing fields.
    """
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedCookie(f"cookie is not UTF-8: {bytes(data)[:60]!r}", path=path) from exc
    version_line, newline, rest = text.partition("\n")
    version_text = version_line.strip()
    if not newline or not version_text.isascii() or not version_text.isdigit():
        raise MalformedCookie(
            f"cookie does not start with a version line: {text[:60]!r}", path=path
        )
    version = int(version_text)
    if version == 3:
        lines = rest.split("\n")
        if len(lines) < 3:
            raise MalformedCookie("a version 3 cookie has three lines after the version", path=path)
        return Cookie(
            bookie_host=lines[0],
            journal_dirs=lines[1],
            ledger_dirs=decode_dirs(lines[2], path=path),
            layout_version=3,
        )
    if version < 3:
        raise MalformedCookie(f"cookie layout version {version} is too old", path=path)
    fmt = CookieFormat()
    try:
        text_format.Merge(rest, fmt)
    except (text_format.ParseError, ValueError, RecursionError) as exc:
        raise MalformedCookie(f"bad CookieFormat TextFormat: {exc}", path=path) from exc
    missing = missing_required_fields(fmt)
    if missing:
        raise MalformedCookie(f"cookie lacks required fields {', '.join(missing)}", path=path)
    return Cookie(
        bookie_host=fmt.bookieHost,
        journal_dirs=fmt.journalDir,
        ledger_dirs=decode_dirs(fmt.ledgerDirs, path=path),
        # BookKeeper treats an empty instance id as none.
        instance_id=fmt.instanceId or None,
        index_dirs=decode_dirs(fmt.indexDirs, path=path) if fmt.HasField("indexDirs") else None,
        layout_version=version,
    )


def java_text_escape(value: str) -> str:
    """Escape ``value`` the way protobuf-java's ``TextFormat.escapeText`` does."""
    out = []
    for byte in value.encode("utf-8"):
        if byte in _JAVA_ESCAPES:
            out.append(_JAVA_ESCAPES[byte])
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        else:
            out.append(f"\\{byte:03o}")
    return "".join(out)

"""Bookie ids as BookKeeper accepts them (``net/BookieId.java``, BP-41).

A bookie id is free-form since 4.12 but must match ``[a-zA-Z0-9:-_.\\-]+``. Note the range
``:-_`` inside the class: it admits every character from ``:`` (0x3A) to ``_`` (0x5F), i.e. also
``;<=>?@``, upper-case letters and ``[\\]^``. ``readonly`` is refused because it is the name of
the read-only registration directory. The classic id is ``host:port``.
"""

from __future__ import annotations

import re

from adapters.zookeeper.errors import InvalidBookieId

_BOOKIE_ID = re.compile(r"[a-zA-Z0-9:-_.\-]+")
RESERVED_BOOKIE_IDS = frozenset({"readonly"})


def is_valid_bookie_id(bookie_id: str) -> bool:
    """True if BookKeeper's ``BookieId.parse`` would accept ``bookie_id``."""
    return (
        isinstance(bookie_id, str)
        and _BOOKIE_ID.fullmatch(bookie_id) is not None
        and bookie_id not in RESERVED_BOOKIE_IDS
    )


def check_bookie_id(bookie_id: str) -> str:
    """Return ``bookie_id`` unchanged, or raise :class:`InvalidBookieId` saying why not."""
    if not is_valid_bookie_id(bookie_id):
        raise InvalidBookieId(
            f"bookie id {bookie_id!r} must match [a-zA-Z0-9:-_.\\-]+ and not be 'readonly'"
        )
    return bookie_id

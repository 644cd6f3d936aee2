"""Bookie status codes: the v3 ``StatusCode`` enum and the v2 integer return codes.

Values follow ``BookkeeperProtocol.proto`` (v3) and ``proto/BookieProtocol.java`` (v2) as listed
in the protocol reference §1.3.
"""

from __future__ import annotations

import enum


class StatusCode(enum.IntEnum):
    """v3 ``StatusCode``; ``.name`` is the wire name (``EFENCED``), ``.v2`` the v2 return code."""

    EOK = 0
    ENOLEDGER = 402
    ENOENTRY = 403
    EBADREQ = 404
    EIO = 501
    EUA = 502
    EBADVERSION = 503
    EFENCED = 504
    EREADONLY = 505
    ETOOMANYREQUESTS = 506
    EUNKNOWNLEDGERSTATE = 507

    @property
    def v2(self) -> V2ReturnCode:
        return V2ReturnCode[self.name]

    @classmethod
    def from_v2(cls, rc: int) -> StatusCode:
        """The v3 status for a v2 return code; raises ``ValueError`` for an unknown code."""
        return cls[V2ReturnCode(rc).name]


class V2ReturnCode(enum.IntEnum):
    """v2 ``rc`` integers (``BookieProtocol.EOK`` ...), named like their v3 counterparts."""

    EOK = 0
    ENOLEDGER = 1
    ENOENTRY = 2
    EBADREQ = 100
    EIO = 101
    EUA = 102
    EBADVERSION = 103
    EFENCED = 104
    EREADONLY = 105
    ETOOMANYREQUESTS = 106
    EUNKNOWNLEDGERSTATE = 107

    @property
    def v3(self) -> StatusCode:
        return StatusCode[self.name]

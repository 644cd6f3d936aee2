"""The spec's constants (``Server`` and ``Parameters``) and the switches for seed 003's issues."""

from __future__ import annotations

from dataclasses import dataclass

from model.errors import ModelError

#: The spec's ``MAXEPOCH``: the domain of ``epochLeader`` is ``1..MAXEPOCH``.
MAXEPOCH = 10


class ConfigError(ModelError, ValueError):
    """A configuration the spec (or this model) cannot run."""


#: The naive readings of seed 003, by issue number: what the switch does.
NAIVE_READINGS: dict[int, str] = {
    1: "PROPOSE is broadcast to ackldRecv instead of ackeRecv",
    2: "a follower rejects a redundant PROPOSE instead of dropping it",
    3: "COMMIT-LD carries ACK-LD's zxid instead of the leader's last committed zxid",
}


@dataclass(frozen=True)
class ZabConfig:
    """``Server`` (its size) and ``Parameters``, plus the switches.

    A bound set to ``None`` is absent from ``Parameters``: the spec's ``CheckParameterLimit``
    is then TRUE and the count is unbounded. ``0`` disables what it bounds (``CheckTimeout`` is
    ``nTimeout < MaxTimeoutFailures``, so MaxTimeoutFailures 0 disables ``Timeout`` and
    ``Restart``).

    Defaults: the fixed spec (every naive switch off) with the bounds the issue's "Must show"
    names (3 servers, MaxTransactionNum 2, MaxEpoch 2, one timeout, one restart).

    Switches (seed 003, each off = the published fix):

    - ``naive_propose_to_ackld`` (Issue 1): ``LeaderBroadcastPROPOSE`` sends to ``ackldRecv``,
      "because the Leader will only accept the client request when it reaches the *Broadcast*
      stage"; the fix sends to ``ackeRecv``, so a follower sent NEWLEADER also gets every later
      PROPOSE.
    - ``naive_reject_redundant_propose`` (Issue 2): ``FollowerProcessPROPOSE`` flags any PROPOSE
      whose zxid is not the successor of its last zxid as illegal; the fix drops one that is
      already in the history ("release this message directly").
    - ``naive_commitld_ackld_zxid`` (Issue 3): ``LeaderProcessACKLD``, once COMMIT-LD has been
      broadcast, answers a late ACK-LD with COMMIT-LD carrying the ACK-LD's zxid; the fix
      carries "the latest zxid committed locally by Leader".

    ``record_pc`` (default True) keeps ``recorder.pc``, the name and arguments of the last
    action, in the state as the spec does, so that distinct-state counts are TLC's. False
    drops it: the counts are then those of the protocol's own variables.
    """

    servers: int = 3
    max_timeout_failures: int | None = 1
    max_transaction_num: int | None = 2
    max_epoch: int | None = 2
    max_restarts: int | None = 1
    naive_propose_to_ackld: bool = False
    naive_reject_redundant_propose: bool = False
    naive_commitld_ackld_zxid: bool = False
    record_pc: bool = True

    def __post_init__(self) -> None:
        if self.servers < 1 or self.servers > 7:
            raise ConfigError(f"servers must be between 1 and 7, got {self.servers}")
        for name in ("max_timeout_failures", "max_transaction_num", "max_epoch", "max_restarts"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"{name} must be >= 0 (or None: unbounded), got {value}")
        if self.max_epoch is None or self.max_epoch > MAXEPOCH:
            # Leadership2 and epochLeader range over 1..MAXEPOCH (10 in the spec).
            raise ConfigError(f"max_epoch must be set and at most {MAXEPOCH}, got {self.max_epoch}")

    @property
    def naive(self) -> frozenset[int]:
        """The issue numbers whose naive reading is switched on."""
        on = (
            (1, self.naive_propose_to_ackld),
            (2, self.naive_reject_redundant_propose),
            (3, self.naive_commitld_ackld_zxid),
        )
        return frozenset(number for number, flag in on if flag)

    def with_naive(self, issues: frozenset[int] | set[int] | tuple[int, ...]) -> ZabConfig:
        """This configuration with exactly the naive readings ``issues`` switched on."""
        unknown = set(issues) - set(NAIVE_READINGS)
        if unknown:
            raise ConfigError(f"naive readings are 1, 2, 3; unknown: {sorted(unknown)}")
        return ZabConfig(
            servers=self.servers,
            max_timeout_failures=self.max_timeout_failures,
            max_transaction_num=self.max_transaction_num,
            max_epoch=self.max_epoch,
            max_restarts=self.max_restarts,
            naive_propose_to_ackld=1 in issues,
            naive_reject_redundant_propose=2 in issues,
            naive_commitld_ackld_zxid=3 in issues,
            record_pc=self.record_pc,
        )

    def describe(self) -> str:
        """One line: the constants and every switch that differs from the fixed spec."""

        def bound(value: int | None) -> str:
            return "unbounded" if value is None else str(value)

        parts = [
            f"Server={{{','.join(f's{i + 1}' for i in range(self.servers))}}}",
            f"MaxTimeoutFailures={bound(self.max_timeout_failures)}",
            f"MaxTransactionNum={bound(self.max_transaction_num)}",
            f"MaxEpoch={bound(self.max_epoch)}",
            f"MaxRestarts={bound(self.max_restarts)}",
        ]
        if self.naive:
            parts.append("naive=" + ",".join(str(n) for n in sorted(self.naive)))
        if not self.record_pc:
            parts.append("pc=off")
        return " ".join(parts)

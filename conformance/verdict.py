"""The one verdict vocabulary of every engine: BookKeeper runs and searches, the Java-client
runs, the Zab runs and the qualification's shards and configurations.

A verdict is Jepsen's *valid?* (true, false, unknown) plus, for false, the kind of finding:

- ``clean``: something was checked and passed (valid true, exit 0);
- ``violation``: one of the spec's invariants broke on a behaviour that ran (valid false,
  exit 1);
- ``divergence``: the implementation did what the model does not predict (valid false,
  exit 1);
- ``undecided``: nothing was checked, or what was checked could not be finished (no answer,
  an outage, a crash of the harness): valid unknown, exit 2. Never clean.

**The one precedence rule**, worst first: violation, divergence, undecided, clean. Results
of independent checks compose by it (the shards of a configuration, the configurations of a
qualification, the checkers of a Zab run): a finding anywhere is a finding (false beats
unknown), and unknown beats true, so a clean verdict needs every part clean. Within one run,
an error is a step that was not judged, and the run stops there: the run is undecided (its
findings are still reported, as what led up to the error); otherwise its findings rank by the
same rule: a broken invariant is the worse news (it is data lost on what ran), and any
divergences are reported with it.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Verdict(StrEnum):
    CLEAN = "clean"
    VIOLATION = "violation"
    DIVERGENCE = "divergence"
    UNDECIDED = "undecided"

    @property
    def valid(self) -> bool | None:
        """Jepsen's valid?: True, False, or None for unknown."""
        if self is Verdict.CLEAN:
            return True
        if self is Verdict.UNDECIDED:
            return None
        return False

    @property
    def exit_code(self) -> int:
        """0 clean, 1 a finding (violation or divergence), 2 undecided."""
        if self.valid is None:
            return 2
        return 0 if self.valid else 1

    @property
    def finding(self) -> bool:
        return self.valid is False

    @classmethod
    def named(cls, name: object) -> Verdict:
        """The verdict of that name; anything else (an ``error`` row, a typo) is undecided."""
        if isinstance(name, str) and name in cls._value2member_map_:
            return cls(name)
        return cls.UNDECIDED

    @classmethod
    def of_validity(cls, valid: object) -> Verdict:
        """A checker's valid? (True, False, anything else unknown) as a verdict; a checker that
        says false found a broken property: a violation."""
        if valid is True:
            return cls.CLEAN
        if valid is False:
            return cls.VIOLATION
        return cls.UNDECIDED


#: Worst first: the one precedence rule.
SEVERITY: tuple[Verdict, ...] = (
    Verdict.VIOLATION,
    Verdict.DIVERGENCE,
    Verdict.UNDECIDED,
    Verdict.CLEAN,
)


def exit_code_for(verdict: str | Verdict) -> int:
    """0 clean, 1 a finding (violation or divergence), 2 anything else (undecided, error)."""
    return Verdict.named(verdict).exit_code


def worst(verdicts: Iterable[str | Verdict]) -> Verdict:
    """The verdict of independent results together: the worst by ``SEVERITY`` (names that are
    no verdict count as undecided); no result at all is undecided (nothing was checked)."""
    seen = {Verdict.named(v) for v in verdicts}
    for verdict in SEVERITY:
        if verdict in seen:
            return verdict
    return Verdict.UNDECIDED


def run_verdict(*, violations: bool, divergences: bool, error: bool) -> Verdict:
    """The verdict of one run from what it found: an error makes it undecided; else its
    findings by the one rule; else clean."""
    if error:
        return Verdict.UNDECIDED
    found = [Verdict.VIOLATION] * violations + [Verdict.DIVERGENCE] * divergences
    return worst(found) if found else Verdict.CLEAN

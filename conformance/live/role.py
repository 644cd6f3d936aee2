"""What a searched real system is to the search: one value of :class:`LiveRole`.

A plan is plain data (Jepsen's operations: a Java client's recovery plan, a ZooKeeper fault
schedule); a run is one plan carried out on the live system and judged. The search
(:mod:`.search`) knows nothing else of either: where the plans come from and how they shrink,
how one is carried out and what its verdict is, whether two runs fail the same way, and what
steers Hypothesis are the role's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

from hypothesis import strategies as st

from conformance.verdict import Verdict

PlanT = TypeVar("PlanT")
RunT = TypeVar("RunT")


class LiveRole(Protocol[PlanT, RunT]):
    """A real system searched by :func:`~.search.search` (see the module docstring)."""

    def plans(self) -> st.SearchStrategy[PlanT]:
        """Hypothesis' plans (drawn, never shrunk by Hypothesis: each try is a real run)."""
        ...

    def smaller_plans(self, plan: PlanT) -> Iterable[PlanT]:
        """Each plan one simplification away from ``plan``, the most promising first."""
        ...

    def perform(self, plan: PlanT) -> RunT:
        """Carry out ``plan`` once on the live system and judge what happened."""
        ...

    def verdict(self, run: RunT) -> Verdict:
        """The run's verdict (undecided when it could not be judged)."""
        ...

    def unjudged(self, run: RunT) -> str | None:
        """Why the run could not be judged at all, so that the search must stop (None: it
        was judged, or its being undecided does not stop the search)."""
        ...

    def same_failure(self, found: RunT, run: RunT) -> bool:
        """Whether ``run`` (of a smaller plan) fails as ``found`` did: shrinking keeps it."""
        ...

    def steering(self, run: RunT) -> Mapping[str, float]:
        """Hypothesis' targets of a run, by label (``hypothesis.target``)."""
        ...

    def describe(self, plan: PlanT) -> str:
        """The plan in a line (for the search's errors and progress)."""
        ...


__all__ = ["LiveRole", "PlanT", "RunT"]

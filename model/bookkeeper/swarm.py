"""A walk policy that makes rare BookKeeper interleavings likely: swarm testing.

Uniform choice among successors (TLC's simulation) is dominated by message-loss patterns: a
send to three bookies is eight successors, so sends crowd out everything else, and a precise
pattern such as "only the fence to b3 is lost" is one choice in eight. Defect 1 needs three
such patterns in one walk. This policy instead, per walk:

- draws a message-loss probability (swarm over loss rates), then chooses first *what* happens
  (action, actor, message processed) uniformly, and only then *which* messages are lost,
  each lost with that probability;
- switches off a random subset of action kinds (swarm testing: Groce et al., ISSTA 2012), so
  that some walks, for example, never let the writer close the ledger or never change
  ensembles, and the remaining actions get more of the walk.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence

from model.bookkeeper.action_table import ALL_ACTIONS
from model.bookkeeper.actions import Label

LOSS_RATES = (0.0, 0.05, 0.15, 0.3, 0.5)


class SwarmPolicy:
    def __init__(self, rng: random.Random, *, max_disabled_fraction: float = 0.4) -> None:
        self.loss = rng.choice(LOSS_RATES)
        fraction = rng.uniform(0.0, max_disabled_fraction)
        self.disabled = frozenset(a for a in ALL_ACTIONS if rng.random() < fraction)

    def choose(self, rng: random.Random, labels: Sequence[Label]) -> int:
        allowed = [i for i, label in enumerate(labels) if label.action not in self.disabled]
        if not allowed:
            allowed = list(range(len(labels)))
        groups: dict[Hashable, list[int]] = {}
        for i in allowed:
            label = labels[i]
            key = (label.action, label.client, label.bookie, label.received, label.detail)
            groups.setdefault(key, []).append(i)
        members = rng.choice(list(groups.values()))
        if len(members) == 1:
            return members[0]
        weights = [self._weight(labels[i]) for i in members]
        if sum(weights) <= 0:
            return rng.choice(members)
        return rng.choices(members, weights=weights)[0]

    def _weight(self, label: Label) -> float:
        lost = label.lost
        delivered = len(label.sent) - lost
        return float(self.loss**lost * (1.0 - self.loss) ** delivered)


def swarm_policy(rng: random.Random) -> SwarmPolicy:
    return SwarmPolicy(rng)

"""What a run does, drawn before it starts: each client's operations and the fault schedule.

One builder serves both Hypothesis (``programs()``: every choice is a drawn integer, so a
failing program shrinks towards fewer, simpler operations and faults) and the command line
(``random_program(seed)``: the same builder fed by ``random.Random(seed)``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from hypothesis import strategies as st

OpName = Literal["create", "set", "delete", "multi", "read", "sync"]
OP_WEIGHTS: tuple[tuple[OpName, int], ...] = (
    ("create", 3),
    ("set", 6),
    ("delete", 1),
    ("multi", 2),
    ("read", 6),
    ("sync", 1),
)
FAULT_KINDS = ("kill", "pause", "partition")
ROLES = ("leader", "follower")
ROOT = "/zab"


@dataclass(frozen=True)
class PlannedOp:
    """``index`` is unique in the run and becomes the write's data tag ``w<index>``;
    ``conditional``: name the version this client last saw (else any version); ``key2`` is
    the second znode of a multi."""

    index: int
    process: int
    kind: OpName
    key: int
    conditional: bool = False
    key2: int = 0

    @property
    def path(self) -> str:
        return f"{ROOT}/k{self.key}"

    @property
    def path2(self) -> str:
        return f"{ROOT}/k{self.key2}"

    @property
    def tag(self) -> str:
        return f"w{self.index}"


# A fault action: (verb, target). Verbs: kill, restart (waits until it serves), start (does
# not wait), pause, resume, isolate, reconnect (network partition), sleep. Targets:
# "leader", "follower" (one not yet touched in this step), "@i" (the server that action i of
# this step chose), or for sleep the seconds as text.
FaultAction = tuple[str, str]


@dataclass(frozen=True)
class FaultStep:
    """Actions run in order once ``after_ops`` operations have completed."""

    after_ops: int
    actions: tuple[FaultAction, ...]
    name: str = ""


@dataclass(frozen=True)
class Program:
    clients: int
    keys: int
    ops: tuple[PlannedOp, ...]
    faults: tuple[FaultStep, ...]

    def ops_of(self, process: int) -> list[PlannedOp]:
        return [op for op in self.ops if op.process == process]


def fault_step(kind: str, role: str, hold: float, after_ops: int) -> FaultStep:
    if kind == "kill":
        actions: tuple[FaultAction, ...] = (("kill", role), ("sleep", f"{hold}"), ("restart", "@0"))
    elif kind == "pause":
        actions = (("pause", role), ("sleep", f"{hold}"), ("resume", "@0"))
    elif kind == "partition":
        # Long enough for the others to notice (sync limit) and elect without it.
        actions = (("isolate", role), ("sleep", f"{hold + 3}"), ("reconnect", "@0"))
    else:
        raise ValueError(f"no fault step for {kind!r}")
    return FaultStep(after_ops, actions, f"{kind} {role} for {hold}s")


def build_program(
    choose: Callable[[int], int],
    *,
    ops: int,
    clients: int,
    keys: int = 5,
    faults: tuple[str, ...] = (),
    fault_count: int | None = None,
) -> Program:
    """``choose(n)`` returns an integer in ``[0, n)``; everything else follows from it."""
    names: list[OpName] = [name for name, weight in OP_WEIGHTS for _ in range(weight)]
    planned = []
    for index in range(ops):
        kind = names[choose(len(names))]
        planned.append(
            PlannedOp(
                index=index,
                process=choose(clients),
                kind=kind,
                key=choose(keys),
                conditional=choose(3) > 0,
                key2=choose(keys),
            )
        )
    usable = [kind for kind in faults if kind in FAULT_KINDS]
    steps: list[FaultStep] = []
    if usable:
        count = fault_count if fault_count is not None else max(1, ops // 250)
        for number in range(count):
            # Spread the steps over the run: step i fires in the i-th slice of operations.
            slice_start = ops * number // (count + 1) + ops // (2 * (count + 1))
            fault = usable[choose(len(usable))]
            role = ROLES[choose(len(ROLES))]
            hold = (5 + choose(16)) / 10
            steps.append(fault_step(fault, role, hold, slice_start))
    return Program(clients, keys, tuple(planned), tuple(steps))


def random_program(
    seed: int, *, ops: int, clients: int, faults: tuple[str, ...] = (), keys: int = 5
) -> Program:
    rng = random.Random(seed)
    return build_program(rng.randrange, ops=ops, clients=clients, keys=keys, faults=faults)


@st.composite
def programs(
    draw: st.DrawFn,
    *,
    max_ops: int = 60,
    clients: int = 3,
    faults: tuple[str, ...] = ("kill", "pause"),
) -> Program:
    ops = draw(st.integers(min_value=1, max_value=max_ops))
    fault_count = draw(st.integers(min_value=0, max_value=2)) if faults else 0
    return build_program(
        lambda n: draw(st.integers(min_value=0, max_value=n - 1)),
        ops=ops,
        clients=clients,
        faults=faults,
        fault_count=fault_count,
    )

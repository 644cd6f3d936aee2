"""Programs: deterministic per seed, faults only when asked for, Hypothesis draws valid ones."""

from __future__ import annotations

from hypothesis import given, settings

from conformance.zab.program import Program, programs, random_program


def test_random_program_is_a_function_of_the_seed() -> None:
    first = random_program(7, ops=200, clients=4, faults=("kill", "pause"))
    assert first == random_program(7, ops=200, clients=4, faults=("kill", "pause"))
    assert first != random_program(8, ops=200, clients=4, faults=("kill", "pause"))


def test_program_shape() -> None:
    program = random_program(1, ops=1000, clients=5, faults=("kill", "pause"))
    assert [op.index for op in program.ops] == list(range(1000))
    assert {op.process for op in program.ops} == set(range(5))
    assert {op.kind for op in program.ops} == {"create", "set", "delete", "multi", "read", "sync"}
    assert len({op.tag for op in program.ops}) == 1000
    assert len(program.faults) == 4
    assert all(0 < step.after_ops < 1000 for step in program.faults)
    assert [s.after_ops for s in program.faults] == sorted(s.after_ops for s in program.faults)
    verbs = {verb for step in program.faults for verb, _target in step.actions}
    assert verbs <= {"kill", "restart", "pause", "resume", "sleep"}  # no partition asked for


def test_no_faults_unless_asked_and_partitions_isolate_then_reconnect() -> None:
    assert random_program(1, ops=500, clients=2).faults == ()
    (step, *_rest) = random_program(1, ops=500, clients=2, faults=("partition",)).faults
    verbs = [verb for verb, _target in step.actions]
    assert verbs == ["isolate", "sleep", "reconnect"]
    assert float(step.actions[1][1]) >= 3.5


@settings(max_examples=30, deadline=None)
@given(programs(max_ops=30, clients=3))
def test_drawn_programs_are_well_formed(program: Program) -> None:
    assert 1 <= len(program.ops) <= 30
    assert all(0 <= op.process < 3 and 0 <= op.key < program.keys for op in program.ops)
    assert len(program.faults) <= 2
    for step in program.faults:
        # Every kill is healed by a restart of the same server, every pause by a resume.
        verbs = [verb for verb, _ in step.actions]
        assert verbs in (
            ["kill", "sleep", "restart"],
            ["pause", "sleep", "resume"],
            ["isolate", "sleep", "reconnect"],
        )
        assert step.actions[2][1] == "@0"

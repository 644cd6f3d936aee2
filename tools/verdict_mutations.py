"""Apply, one at a time, the mutations that once went unseen, and show the fast suite kills each.

Each mutation breaks a verdict path on purpose (a diff that never reports, an invariant that
always holds, an undecided run accepted as clean...). For each, the working tree is copied to a
scratch directory (the tree itself is never touched), the mutation is applied there, and the
fast suite runs on the copy with ``-x``: the tests named as the mutation's *hints* first (to
be quick), then every other fast test. A mutation is **killed** when the suite fails, and
**survived** when the whole fast suite passes: a verdict path no test can see broken.

    .venv/bin/python tools/verdict_mutations.py                # every mutation
    .venv/bin/python tools/verdict_mutations.py -k metadata    # those whose name matches
    .venv/bin/python tools/verdict_mutations.py --list
    .venv/bin/python tools/verdict_mutations.py --mutmut       # mutmut over the same modules

Writes ``runs/mutations/report.txt`` and ``report.json`` (``--report DIR``): per mutation its
file, what was changed, killed or survived, the first failing test and the time taken. Exit
code 0 when every mutation was killed, 1 when one survived, 2 when a mutation no longer
applies (the code it targets changed: update the list) or the unmutated suite fails.
See docs/testing.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IGNORED = shutil.ignore_patterns(
    ".venv", ".git", ".tox", "runs", "mutants", "__pycache__", ".hypothesis", "*.egg-info"
)
#: The modules where a wrong line can make a verdict wrong (``--mutmut`` mutates these).
VERDICT_MODULES = (
    "conformance/engine.py",
    "conformance/verdict.py",
    "conformance/targets/model_target.py",
    "conformance/observations.py",
    "model/bookkeeper/invariants.py",
    "conformance/search/runner.py",
    "conformance/search/verdict.py",
    "conformance/distributed/diff.py",
    "conformance/distributed/shard.py",
    "conformance/distributed/qualification.py",
    "model/zab/checkers.py",
    "conformance/javaclient/plan_wipes.py",
    "conformance/races.py",
    "conformance/possible_states.py",
    "conformance/zab/quorum_trace.py",
)


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str
    old: str
    new: str
    hints: tuple[str, ...] = ()
    why: str = ""


MUTATIONS = (
    # The audit's list: none of these was caught by a fast test before.
    Mutation(
        "differences-never-reports",
        "conformance/observations.py",
        '            diffs.append(f"{name}: predicted {want!r}, observed {got!r} '
        '({observed.status})")\n    return diffs',
        '            diffs.append(f"{name}: predicted {want!r}, observed {got!r} '
        '({observed.status})")\n    return []',
        ("tests/conformance/test_observations.py", "tests/conformance/test_verdicts.py"),
        "every answer matches the model",
    ),
    Mutation(
        "state-differences-empty",
        "conformance/engine.py",
        '    """Where the target\'s bookies and metadata differ from the model\'s state."""\n',
        '    """Where the target\'s bookies and metadata differ from the model\'s state."""\n'
        "    return []\n",
        ("tests/conformance/test_observations.py", "tests/conformance/test_verdicts.py"),
        "the final state is never compared",
    ),
    *(
        Mutation(
            f"invariant-{name}-always-true",
            "model/bookkeeper/invariants.py",
            f"def {function}(cfg: ModelConfig, s: State) -> bool:\n",
            f"def {function}(cfg: ModelConfig, s: State) -> bool:\n    return True\n",
            ("tests/model/bookkeeper/test_invariants.py",),
            f"{name} never fires",
        )
        for name, function in (
            ("TypeOK", "type_ok"),
            ("NoDivergence", "no_divergence_between_client_and_metadata"),
            ("AllAckedEntriesAreReadable", "all_acked_entries_are_readable"),
            ("AllCommittedEntriesReachAckQuorum", "all_committed_entries_reach_ack_quorum"),
            ("NoOutOfOrderEntries", "no_out_of_order_entries"),
            ("OnlyValidFragments", "only_valid_fragments"),
        )
    ),
    Mutation(
        "search-divergence-exits-0",
        "conformance/search/verdict.py",
        "    def exit_code(self) -> int:\n        return self.verdict.exit_code\n",
        "    def exit_code(self) -> int:\n"
        "        return 0 if self.verdict is Verdict.DIVERGENCE else self.verdict.exit_code\n",
        (
            "tests/conformance/search/test_verdict.py",
            "tests/conformance/test_verdicts.py",
            "tests/conformance/test_verdict_commands.py",
        ),
        "a divergence found by a search exits 0",
    ),
    Mutation(
        "shard-accepts-undecided",
        "conformance/distributed/shard.py",
        "            if result.report.verdict != Verdict.UNDECIDED:\n",
        "            if True:\n",
        ("tests/conformance/distributed/test_shard.py",),
        "an undecided attempt is kept instead of retried",
    ),
    Mutation(
        "shard-retries-what-cannot-help",
        "conformance/distributed/shard.py",
        "        if not retriable:\n",
        "        if False:\n",
        ("tests/conformance/distributed/test_shard_retries.py",),
        "a bad configuration or a bug is tried again (and recorded as if it were transient)",
    ),
    Mutation(
        "refbookie-recovery-reads-never-fence",
        "adapters/refbookie/processor.py",
        "            fence\n            and entry_id != LAST_ADD_CONFIRMED\n"
        '            and self.faulty_mode == "ignore-recovery-read-fence"\n',
        "            fence\n            and entry_id != LAST_ADD_CONFIRMED\n",
        ("tests/adapters/refbookie/test_behaviour.py",),
        "the reference bookie's recovery reads do not fence (Defect 1 in the bookie)",
    ),
    Mutation(
        "agent-destructive-guard-removed",
        "adapters/agent/service.py",
        "                if not self._config.allow_destructive:\n",
        "                if False:\n",
        ("tests/adapters/agent/test_service_gate.py",),
        "fault calls are served without --allow-destructive",
    ),
    # The fixes of "never a false clean": each mutation puts the old behaviour back.
    Mutation(
        "metadata-status-not-compared",
        "conformance/observations.py",
        '        return (*COMPARED_FIELDS, "status")\n',
        "        return COMPARED_FIELDS\n",
        (
            "tests/conformance/test_observations.py",
            "tests/conformance/test_verdicts.py",
            "tests/conformance/distributed/test_diff.py",
        ),
        "a metadata failure for another reason matches an expected one (engine and qualification)",
    ),
    Mutation(
        "spark-diff-status-not-compared",
        "conformance/distributed/diff.py",
        '    names = compared_fields(want.get("kind"), got.get("kind"))\n',
        "    names = OBSERVATION_FIELDS\n",
        ("tests/conformance/distributed/test_diff.py", "tests/conformance/test_observations.py"),
        "the qualification's diff disagrees with the engine's",
    ),
    Mutation(
        "zookeeper-outage-is-an-answer",
        "conformance/targets/cluster_target.py",
        '            raise TargetError(f"{action}: ZooKeeper did not answer: {exc}", '
        "retriable=True) from exc\n",
        '            return Observation("metadata", type(exc).__name__, success=False)\n',
        ("tests/conformance/targets/test_cluster_target_metadata.py",),
        "a ZooKeeper timeout is compared with the model",
    ),
    Mutation(
        "unreadable-znode-is-never-created",
        "conformance/targets/cluster_target.py",
        "            raise TargetError(\n"
        '                f"could not read the ledger\'s metadata: {exc}", retriable=exc.retriable\n'
        "            ) from exc\n",
        "            return snapshot\n",
        ("tests/conformance/targets/test_cluster_target_metadata.py",),
        "a snapshot error reads as a ledger never created",
    ),
    Mutation(
        "metadata-written-outside-the-model-ignored",
        "conformance/targets/cluster_target.py",
        "        if version != translation.znode_version(known_version):\n",
        "        if False:\n",
        ("tests/conformance/targets/test_cluster_target_metadata.py",),
        "a ledger recovered by someone else (a bookie's own integrity check) is compared",
    ),
    Mutation(
        "failed-write-not-read-again",
        "conformance/targets/cluster_target.py",
        "            self._read_metadata(op.known_version)  # raises if a writer outside "
        "the model\n",
        "            pass\n",
        ("tests/conformance/targets/test_cluster_target_metadata.py",),
        "a writer outside the model between the read and the write is the model's own mismatch",
    ),
    Mutation(
        "bookies-own-close-needs-its-version",
        "model/bookkeeper/actions.py",
        "    if s.meta_version != c.meta_version and not _bookkeepers(ctx.cfg, c):\n",
        "    if s.meta_version != c.meta_version:\n",
        ("tests/conformance/test_bookies_own_recovery.py",),
        "the bookies' own recovery cannot close after another recovery's mark (4.18.0 make run)",
    ),
    Mutation(
        "bookies-own-steps-only-where-seen",
        "conformance/possible_states.py",
        "    for k, before in enumerate(befores):\n",
        "    for k, before in list(enumerate(befores))[-1:]:\n",
        ("tests/conformance/test_bookies_own_recovery.py",),
        "the bookies' recovery right after a restart is searched only where it shows (4.18.0)",
    ),
    Mutation(
        "end-read-once-while-the-bookies-act",
        "conformance/engine.py",
        "        for _ in range(END_SETTLE_READS):\n",
        "        for _ in range(0):\n",
        ("tests/conformance/test_bookies_own_recovery.py",),
        "the end is compared as first read while the bookies' own recovery still runs (a torn "
        "snapshot: make run's false divergence on 4.18.0, limbo-crash)",
    ),
    Mutation(
        "bookies-own-steps-earlier-always-explain",
        "conformance/engine.py",
        "            found = [p for p in possibles if accept(p)]\n",
        "            found = list(possibles)\n",
        ("tests/conformance/test_bookies_own_recovery.py",),
        "an observation the bookies' steps placed earlier do not explain is taken as explained",
    ),
    Mutation(
        "nothing-checked-is-clean",
        "conformance/search/verdict.py",
        "        elif tally.examples == 0:\n",
        "        elif tally.examples < 0:\n",
        ("tests/conformance/search/test_verdict.py", "tests/conformance/search/test_runner.py"),
        "a search that ran no example is clean",
    ),
    Mutation(
        "explorer-replay-failure-is-a-note",
        "conformance/search/runner.py",
        "                state.error = (\n",
        "                state.notes = (\n",
        ("tests/conformance/search/test_runner.py",),
        "an explorer finding that does not replay leaves the run clean",
    ),
    Mutation(
        "zero-budget-accepted",
        "conformance/search/runner.py",
        "        if self.time_budget is not None and not self.time_budget > 0:\n",
        "        if self.time_budget is not None and self.time_budget < 0:\n",
        ("tests/conformance/test_verdict_commands.py", "tests/conformance/search/test_runner.py"),
        "--seconds 0 is accepted",
    ),
    Mutation(
        "unapplied-schedule-judged",
        "conformance/javaclient/search.py",
        "        return run.unapplied\n",
        "        return None\n",
        ("tests/conformance/javaclient/test_search.py",),
        "a Java client schedule that was not applied is judged as if it had been",
    ),
    Mutation(
        "broken-delivery-order-judged",
        "conformance/javaclient/controller.py",
        "    broken = [e for c in controllers for e in c.order_broken]\n",
        "    broken: list[str] = []\n",
        ("tests/conformance/javaclient/test_delivery_order.py",),
        "a replay whose recorded delivery order could not be enforced is judged (a clean replay "
        "of a finding that was never re-enacted: a silent miss)",
    ),
    # The writer's judge under the extended faults (issue 29).
    Mutation(
        "late-answers-on-time",
        "conformance/javaclient/writer_story.py",
        "        if (answer_delay > first_cut or _lost_in_a_reset(record, answer)) and (\n",
        "        if False and (\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an answer after the client's add timeout is never read as the spec's lost answer",
    ),
    Mutation(
        "wiped-copies-always-excused",
        "conformance/javaclient/writer_story.py",
        "        return erased if erased == set(reached) else set()\n",
        "        return set(reached) or holders\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an entry the write set never got is excused as if a wipe had lost it",
    ),
    Mutation(
        "ack-quorum-never-checked",
        "conformance/javaclient/writer_story.py",
        "        if len(copies) >= quorum:\n",
        "        if True:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an acknowledged entry with fewer than AQ copies in its write set passes",
    ),
    Mutation(
        "a-close-below-acknowledged-entries-excused",
        "conformance/javaclient/writer_story.py",
        "        if not wanted or any(o is None or o.code is None or o.acknowledged"
        " for o in wanted):\n",
        "        if not wanted:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a client closing below entries it acknowledged is excused as having given up",
    ),
    Mutation(
        "client-reads-forgotten",
        "conformance/javaclient/recording.py",
        '            client_reads={int(e): str(r) for e, r in data.get("client_reads", ())},\n',
        "",
        ("tests/conformance/javaclient/test_reports.py",),
        "a recorded run loses the client's own reads (the violation no longer quotes them)",
    ),
    # The Java client under search (issue 15).
    Mutation(
        "java-search-nothing-ran-clean",
        "conformance/live/search.py",
        "        if self.errors or self.examples == 0 or self.verdicts[Verdict.UNDECIDED]:\n",
        "        if self.errors or self.verdicts[Verdict.UNDECIDED]:\n",
        ("tests/conformance/javaclient/test_search.py", "tests/conformance/live/test_search.py"),
        "a Java-client search that ran no example (budget spent) is clean",
    ),
    Mutation(
        "java-search-ignores-a-halt",
        "conformance/live/search.py",
        "        if halt is not None and halt():\n",
        "        if False:\n",
        ("tests/conformance/live/test_search.py",),
        "a search side by side goes on after another found something",
    ),
    Mutation(
        "side-by-side-last-job-s-verdict",
        "conformance/javaclient/side_by_side.py",
        "        return worst(job.verdict for job in self.jobs)\n",
        "        return self.jobs[-1].verdict\n",
        ("tests/conformance/javaclient/test_side_by_side.py",),
        "searches side by side take the last job's verdict, not the worst (a finding lost)",
    ),
    Mutation(
        "side-by-side-job-without-results-clean",
        "conformance/javaclient/side_by_side.py",
        "        return Verdict.named(verdict) if verdict else Verdict.UNDECIDED\n",
        "        return Verdict.named(verdict) if verdict else Verdict.CLEAN\n",
        ("tests/conformance/javaclient/test_side_by_side.py",),
        "a search side by side that wrote no results (it broke) counts as clean",
    ),
    Mutation(
        "java-matrix-best-of-shards",
        "conformance/distributed/java_matrix.py",
        '                "verdict": worst(r.get("verdict", Verdict.UNDECIDED) for r in members),\n',
        '                "verdict": members[-1].get("verdict", Verdict.UNDECIDED),\n',
        ("tests/conformance/distributed/test_java_matrix.py",),
        "a release's cell takes its last shard's verdict, not the worst",
    ),
    Mutation(
        "java-matrix-no-regression",
        "conformance/distributed/java_matrix.py",
        '        return "regression"\n',
        "        return None\n",
        ("tests/conformance/distributed/test_java_matrix.py",),
        "a release worse than the one before it is not marked a regression",
    ),
    Mutation(
        "skipped-faults-ignored",
        "conformance/zab/runner.py",
        '        *(f"requested fault not injected: {reason}" for reason in skipped),\n',
        "",
        ("tests/conformance/zab/test_rundir_and_command.py",),
        "a Zab run without the partitions asked for can be clean",
    ),
    # One engine (issue 14): the one precedence rule, and the model target's store.
    Mutation(
        "error-beside-a-finding-is-decided",
        "conformance/verdict.py",
        "    if error:\n        return Verdict.UNDECIDED\n",
        "    if error and not (violations or divergences):\n        return Verdict.UNDECIDED\n",
        ("tests/conformance/test_verdict_vocabulary.py", "tests/conformance/test_engine.py"),
        "a run whose target failed is judged on what it saw before",
    ),
    Mutation(
        "unknown-ignored-when-composing",
        "conformance/verdict.py",
        "    seen = {Verdict.named(v) for v in verdicts}\n",
        "    seen = {Verdict.named(v) for v in verdicts} - {Verdict.UNDECIDED}"
        " or {Verdict.CLEAN}\n",
        (
            "tests/conformance/test_verdict_vocabulary.py",
            "tests/conformance/distributed/test_diff.py",
        ),
        "a configuration with a shard in error is clean",
    ),
    Mutation(
        "model-store-ignores-versions",
        "conformance/targets/model_target.py",
        "            if op.expected_version != self._version:\n",
        "            if False:\n",
        ("tests/conformance/test_engine.py", "tests/conformance/test_verdicts.py"),
        "the model target's metadata store takes a stale client's write",
    ),
    Mutation(
        "acknowledged-beyond-the-end-passes",
        "conformance/javaclient/writer_story.py",
        "            if outcome.acknowledged and outcome.entry_id is not None"
        " and outcome.entry_id > end:\n",
        "            if False:\n",
        (
            "tests/conformance/javaclient/test_failover_runs.py",
            "tests/conformance/javaclient/test_reports.py",
        ),
        "an entry acknowledged beyond the closed ledger's end (#4812) is not a violation",
    ),
    Mutation(
        "recovery-end-unchecked",
        "conformance/javaclient/writer_story.py",
        "        if model_last != takeover.last_entry:\n",
        "        if False:\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a recovery that closes the ledger elsewhere than the model's is clean",
    ),
    Mutation(
        "recovering-client-never-held-to-the-end",
        "model/bookkeeper/invariants.py",
        "    recovering = (STATUS_IN_RECOVERY, RECOVERY_ABORTED) if exempt else ()\n",
        "    recovering = (STATUS_IN_RECOVERY, RECOVERY_ABORTED)\n",
        ("tests/model/bookkeeper/test_fenced_writer_closes.py",),
        "the spec's NoDivergenceBetweenClientAndMetaData exempts a recovering client without the "
        "switch",
    ),
    Mutation(
        "other-ledgers-unjudged",
        "conformance/javaclient/writer_story.py",
        "    for other in record.others:\n        found = judge_ledger(other).outcome\n",
        "    for other in ():\n        found = judge_ledger(other).outcome\n",
        ("tests/conformance/javaclient/test_writer_story.py",),
        "a violation in a second writer's ledger of the run is not reported",
    ),
    Mutation(
        "plan-wipes-excuse-every-lost-entry",
        "conformance/javaclient/plan_wipes.py",
        "            if not holders & self.held.get(entry_id, 0):\n",
        "            if False:\n",
        ("tests/conformance/javaclient/test_plan_wipes.py",),
        "an acknowledged entry its write set never held is excused as if the plan had wiped it",
    ),
    Mutation(
        "plan-wipes-not-tracked",
        "conformance/javaclient/plan_wipes.py",
        "                self.held[entry.id] = self.held.get(entry.id, 0) | 1 << b\n",
        "                pass\n",
        (
            "tests/conformance/javaclient/test_plan_wipes.py",
            "tests/conformance/javaclient/test_failover_runs.py",
        ),
        "the plan's wipes are counted against BookKeeper: a fail-over search stops at a false "
        "violation",
    ),
    Mutation(
        "race-any-order-explains",
        "conformance/races.py",
        "        if diffs:\n",
        "        if False:\n",
        ("tests/conformance/test_races.py",),
        "a race whose answers no serial order gives is explained (a non-atomic bookie passes)",
    ),
    Mutation(
        "gated-race-unreported-judged",
        "conformance/engine.py",
        "            if any(r is None for r in reports):\n",
        "            if False:\n",
        ("tests/conformance/test_races.py",),
        "a gated race whose target did not say what its gates did is judged as if it ran as "
        "scheduled",
    ),
    Mutation(
        "gate-not-reached-left-armed",
        "conformance/targets/gated_race.py",
        "            await disarm(first_gate)\n",
        "            pass\n",
        ("tests/conformance/targets/test_gated_race.py",),
        "a stop the first request never reached stays armed and holds the other request, "
        "which is then reported as not held",
    ),
    Mutation(
        "gate-release-order-ignored",
        "conformance/targets/gated_race.py",
        "            if schedule.second_resumes_first:\n                holds.reverse()\n",
        "",
        ("tests/conformance/targets/test_gated_race.py",),
        "a schedule that resumes the second held request first resumes the first: the race "
        "recorded is not the race run",
    ),
    Mutation(
        "race-real-time-ignored",
        "conformance/races.py",
        "        answers[later].completed < answers[earlier].invoked\n",
        "        False\n",
        ("tests/conformance/test_races.py",),
        "a request answered before another was sent may be ordered after it",
    ),
    Mutation(
        "race-no-answer-always-lost",
        "conformance/races.py",
        "            if observed is None and _lost(state, requests[i]):\n",
        "            if observed is None:\n",
        ("tests/conformance/test_races.py",),
        "a request that got no answer is taken as lost in a restart the model did not have",
    ),
    Mutation(
        "race-unexplained-dropped",
        "conformance/engine.py",
        '            return [self.no_step("Race", explanation.finding(), request=request, '
        "race=race_record)]\n",
        "            return []\n",
        (
            "tests/conformance/test_races.py",
            "tests/conformance/test_races_on_reference_bookies.py",
        ),
        "a race no order explains ends the example clean",
    ),
    Mutation(
        "race-one-state-kept",
        "conformance/engine.py",
        "        kept = distinct(after)\n",
        "        kept = distinct(after[:1])\n",
        ("tests/conformance/test_possible_states.py",),
        "the judge keeps the first explaining order's state only (issue 46: a later answer "
        "the other order predicts is a false divergence)",
    ),
    Mutation(
        "possible-states-not-carried",
        "conformance/engine.py",
        "                [transition]\n                if n == 0\n",
        "                [transition]\n                if True\n",
        ("tests/conformance/test_possible_states.py",),
        "a step is taken from the primary state only: the other states still possible are "
        "dropped at the next step",
    ),
    Mutation(
        "violation-on-one-possible-trace",
        "conformance/possible_states.py",
        "        certain &= possible.broken\n",
        "        certain |= possible.broken\n",
        ("tests/conformance/test_possible_states.py",),
        "an invariant broken on one trace still possible is reported, though another trace "
        "that breaks nothing explains the answers",
    ),
    Mutation(
        "every-frame-read-at-a-stalls-end",
        "conformance/javaclient/writer_story.py",
        "        if start <= event.at <= end + _STALL_READ_S:\n",
        "        if start <= event.at:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a stall long over still makes any later frame of its bookie possibly timed out",
    ),
    Mutation(
        "failures-first-whatever-the-gap",
        "conformance/javaclient/writer_story.py",
        "        while index > 0 and at - out[index - 1][0] <= CONCURRENT_AT_CLIENT_S:\n",
        "        while index > 0:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a forged failure is read as processed before answers delivered long before it",
    ),
    Mutation(
        "failures-first-over-its-own-connection",
        "conformance/javaclient/writer_story.py",
        "                and before.bookie != what.bookie\n",
        "",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a forged failure is read as processed before its own connection's earlier answers",
    ),
    Mutation(
        "stale-copies-never-taken-ahead",
        "conformance/javaclient/writer_story.py",
        "            if bookie is not None and not enabled(self.cfg, self.state, scripted):\n"
        "                continue\n",
        "",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a stale copy blocked in the spec's bag is dropped, and blocks its bookie's later answers",
    ),
    Mutation(
        "adds-always-in-entry-order",
        "model/bookkeeper/actions.py",
        "        if self.cfg.adds_in_arrival_order and m.kind == ADD_ENTRY_REQUEST:\n",
        "        if False:\n",
        (
            "tests/model/bookkeeper/test_adds_in_arrival_order.py",
            "tests/conformance/javaclient/test_fault_runs.py",
        ),
        "a bookie takes adds earliest entry first though the Java judges say as they arrive "
        "(a later entry sent to a replacement before an earlier one's resend diverges)",
    ),
    Mutation(
        "recovery-replacement-read-as-the-writer-s",
        "conformance/javaclient/writer_story.py",
        "        return ({e.bookie for e in sent} - by_writer) | (written_back - fenced)\n",
        "        return set()\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "the recovery's replacement, named in the metadata at its close, is taken as a change "
        "of the writer's (false divergences on the recovery's reads)",
    ),
    Mutation(
        "metadata-only-change-never-taken-at-a-failed-callback",
        "conformance/javaclient/writer_story.py",
        "            if c1.status == STATUS_OPEN:\n                # A change that committed",
        "            if False:\n                # A change that committed",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a change the writer committed before a change that found no bookie is never taken "
        "(a false divergence on the ensembles)",
    ),
    Mutation(
        "any-answer-read-as-lost-in-a-reset",
        "conformance/javaclient/writer_story.py",
        "        0 <= reset - answer.at <= _UNREAD_BEFORE_A_RESET_S\n",
        "        True\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an answer delivered long before or after a reset may be read as never read",
    ),
    Mutation(
        "a-bookie-never-stored-an-unanswered-add",
        "conformance/javaclient/story.py",
        "            self.stored_before_read(event, entry)\n",
        "            pass\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a recovery read returning an entry whose add's answer never came is a false divergence",
    ),
    Mutation(
        "failed-recovery-close-never-checked",
        "conformance/javaclient/writer_story.py",
        "                self.execution.add_divergence(\n"
        "                    f\"the second client's recovery failed and the ledger is closed"
        ' at "\n',
        "                self.notes.append(\n"
        "                    f\"the second client's recovery failed and the ledger is closed"
        ' at "\n',
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a ledger closed where nobody of the model can have closed it, after a failed "
        "recovery, passes",
    ),
    Mutation(
        "answers-never-wait-for-the-metadata-s-change",
        "conformance/javaclient/writer_story.py",
        "            if not final and self._moves_past_a_change(scripted):\n",
        "            if False:\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "an answer moves the model's LAC past the entry the metadata's change starts at (a "
        "false divergence on the recovery's first read)",
    ),
    Mutation(
        "a-write-back-copy-is-a-divergence",
        "conformance/javaclient/story.py",
        "                and event.at - self.sent[key] <= SAME_INITIATE_S\n",
        "                and False\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a write-back sent twice in one initiate is called a second request",
    ),
    Mutation(
        "any-late-add-waited-for-its-connection",
        "conformance/javaclient/writer_story.py",
        "        return not any(\n            (e.frame.proxy, e.frame.connection_id) == connection"
        " and e.at < event.at\n",
        "        return True or not any(\n            (e.frame.proxy, e.frame.connection_id) =="
        " connection and e.at < event.at\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "any failed add of a writer the model has done with is excused, on a connection it had "
        "used before (the completed_adds_ignore_fence example's divergence goes)",
    ),
    Mutation(
        "lost-fence-on-any-fenced-bookie",
        "conformance/javaclient/writer_story.py",
        "            fenced_at < at < event.at"
        " for at in self.record.restarts.get(event.bookie, ())\n",
        "            True for at in (0,)\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a fenced bookie's EOK is named the lost-fence finding with no restart to lose it",
    ),
    Mutation(
        "fences-never-after-the-adds-they-waited-with",
        "conformance/javaclient/writer_story.py",
        "            if waited_with:\n                event = dataclasses.replace(event, at=max("
        "waited_with) + 1e-6)\n",
        "",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a paused bookie's fence read is taken before the adds it waited with and answered EOK "
        "(a false divergence)",
    ),
    Mutation(
        "uncertain-adds-in-record-order",
        "conformance/javaclient/writer_story.py",
        "    return sorted(uncertain, key=gap_to_a_reset)\n",
        "    return uncertain\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "the uncertain adds told both ways are the first four of the record, not those nearest "
        "a reset (a false divergence when more than four answers came just before resets)",
    ),
    Mutation(
        "any-add-to-a-replaced-bookie-created-before-the-change",
        "conformance/javaclient/writer_story.py",
        "            and first_sent >= self.changed_at - CONCURRENT_AT_BOOKIE_S\n",
        "",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an add sent to the replaced bookie long after its first send is excused as created "
        "before the change (the stalled example's divergence goes without its stall)",
    ),
    Mutation(
        "dropped-answers-never-taken-ahead-at-a-callback",
        "conformance/javaclient/writer_story.py",
        "                    and ahead.entry_id < event.entry_id\n",
        "                    and False\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a bookie's dropped answer ahead of its counted one in the spec's bag blocks it: a "
        "false acknowledged-beyond-the-model divergence",
    ),
    Mutation(
        "no-change-taken-at-a-callback",
        "conformance/javaclient/writer_story.py",
        "        if c1.lac < entry and self.reported_failures:\n",
        "        if False:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "a change the client completed before a callback is taken only where its resend frame "
        "shows, after it: a false acknowledged-beyond-the-model divergence",
    ),
    Mutation(
        "adds-a-stall-hid-are-divergences",
        "conformance/javaclient/writer_story.py",
        "        if _sent_no_earlier_than(self.record, event) < event.at:\n",
        "        if False:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an add read as a stall ended, sent when the stall hid it, is called the client's: a "
        "false writer-add-not-sent-here divergence (the bk-4651 scenario)",
    ),
    Mutation(
        "every-unplaced-add-is-undecided",
        "conformance/javaclient/writer_story.py",
        "        if _sent_no_earlier_than(self.record, event) < event.at:\n",
        "        if True:\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an add to a bookie outside the write set, read outside any stall, is undecided: a "
        "missed divergence (the throttled add's class)",
    ),
    Mutation(
        "recovery-read-answers-only-in-delivery-order",
        "conformance/javaclient/story.py",
        "    for negatives_first in (True, False):\n",
        "    for negatives_first in ():\n",
        ("tests/conformance/javaclient/test_story.py",),
        "recovery-read answers delivered together on two connections are taken only in delivery "
        "order: a false divergence where the client's executor took them the other way",
    ),
    Mutation(
        "recovery-read-answers-reordered-across-any-gap",
        "conformance/javaclient/story.py",
        "        while j < len(out) and out[j].at - out[index].at <= CONCURRENT_AT_CLIENT_S:\n",
        "        while j < len(out):\n",
        ("tests/conformance/javaclient/test_story.py",),
        "answers far apart are reordered too: a recovery that decided on the wrong answers "
        "would be explained",
    ),
    Mutation(
        "write-back-answers-never-timed-out",
        "conformance/javaclient/story.py",
        "        if replaced:\n            self.timed_out.add(key)\n        return replaced\n",
        "        return False\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a write-back answer that reached the client after it had written the entry to a "
        "replacement counts as delivered: no timeout, no recovery ensemble change, a false "
        "divergence",
    ),
    Mutation(
        "write-back-answers-timed-out-without-a-replacement",
        "conformance/javaclient/story.py",
        "            e.bookie not in first"
        " and request.at + self.add_timeout_s <= e.at < delivery.at\n",
        "            request.at <= e.at\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "every write-back answer is lost to the spec: the recovery's write-backs never count",
    ),
    Mutation(
        "divergences-after-a-stall-decided",
        "conformance/javaclient/writer_story.py",
        "            found = [*execution.divergences, *replay.frame_divergences]\n",
        "            found = []\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "divergences that follow from changes a stall hid are reported as the client's (the "
        "bk-4651 scenario on 4.17.3, the swapped ensemble)",
    ),
    Mutation(
        "closing-writer-takes-no-answers",
        "model/bookkeeper/actions.py",
        "        if ctx.cfg.closing_writer_takes_answers:\n",
        "        if False:\n",
        (
            "tests/model/bookkeeper/test_closing_writer_takes_answers.py",
            "tests/conformance/javaclient/test_failover_runs.py",
        ),
        "a fenced writer ignores the answers queued before its close (the seed-51 false "
        "divergence comes back)",
    ),
    Mutation(
        "bookie-lac-of-the-last-add",
        "model/bookkeeper/bookie.py",
        "    if of_highest_entry and any(e.id > msg.entry.id for e in entries):\n",
        "    if False:\n",
        ("tests/model/bookkeeper/test_lac_of_highest_entry.py",),
        "the model's bookie answers a fence read with the last add's LAC where a real bookie "
        "answers with its highest entry's (a false divergence on real bookies)",
    ),
    Mutation(
        "zab-resume-failure-suppressed",
        "conformance/live/faults.py",
        "                self.errors.append(failure)\n",
        "                pass\n",
        ("tests/conformance/zab/test_faults.py", "tests/conformance/live/test_faults.py"),
        "a server left paused after the run goes unrecorded",
    ),
    # The Java-client judges' readings of issue 46.
    Mutation(
        "fence-answer-lac-unchecked",
        "conformance/javaclient/story.py",
        "        if predicted != seen:\n",
        "        if False:\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "a fence answer whose LAC the model's bookie would not answer passes",
    ),
    Mutation(
        "completed-add-fence-ignored-short-of-quorum",
        "model/bookkeeper/actions.py",
        "            and _confirmations(c.confirmed, msg.entry.id) >= ctx.cfg.ack_quorum\n",
        "            and _confirmations(c.confirmed, msg.entry.id) >= 1\n",
        ("tests/model/bookkeeper/test_completed_adds_ignore_fence.py",),
        "an EFENCED answer to an add short of its ack quorum no longer stops the writer",
    ),
    Mutation(
        "answers-to-failed-adds-always-dropped",
        "conformance/javaclient/writer_story.py",
        "        if event.status is StatusCode.EOK and event.entry_id in "
        "self._failed_to_the_caller_ids():\n",
        "        if event.entry_id in self._failed_to_the_caller_ids():\n",
        ("tests/conformance/javaclient/test_failover_runs.py",),
        "the EFENCED answer that fails an add is dropped like the acks the close made useless",
    ),
    Mutation(
        "stale-answers-never-counted",
        "conformance/javaclient/writer_story.py",
        "            self._count_stale_answers_of_returned_bookies(entry)\n",
        "            pass\n",
        ("tests/conformance/javaclient/test_fault_runs.py",),
        "an answer of a bookie back at its place never counts, a false divergence",
    ),
    Mutation(
        "encodings-timing-explains-any-maxlac",
        "conformance/encodings/compare.py",
        "    return timing is not None and lac is not None and timing.lac_answered <= lac "
        "<= timing.lac_sent\n",
        "    return timing is not None\n",
        ("tests/conformance/encodings/test_encodings.py",),
        "any maxLAC of a read answer passes as timing, a real value change unseen",
    ),
    Mutation(
        "encodings-enoentry-without-retry-is-timing",
        "conformance/encodings/compare.py",
        "        and timing.read_elsewhere_from is not None\n",
        "",
        ("tests/conformance/encodings/test_encodings.py",),
        "an answer seen in one release only passes as timing though the client never read "
        "the entry elsewhere",
    ),
)


@dataclass
class Result:
    name: str
    path: str
    why: str
    outcome: str  # killed, survived, not-applicable
    first_failure: str | None = None
    seconds: float = 0.0
    tail: list[str] = field(default_factory=list)


def copy_tree(into: Path) -> Path:
    """A copy of the working tree in ``into``, beside links to the tree's own neighbours (the
    tests read ``../shared``: the seeds and the golden captures)."""
    tree = into / ROOT.name
    shutil.copytree(ROOT, tree, ignore=IGNORED, symlinks=True)
    for neighbour in ROOT.parent.iterdir():
        if neighbour.name != ROOT.name:
            (into / neighbour.name).symlink_to(neighbour)
    return tree


def apply(tree: Path, mutation: Mutation) -> bool:
    path = tree / mutation.path
    text = path.read_text()
    if text.count(mutation.old) != 1:
        return False
    path.write_text(text.replace(mutation.old, mutation.new))
    return True


def fast_suite(tree: Path, hints: tuple[str, ...], timeout: float) -> tuple[int, list[str]]:
    """Run the fast suite on ``tree`` (hints first), stopping at the first failure."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    stages = [list(hints), ["tests"]] if hints else [["tests"]]
    code, lines = 0, []
    for stage in stages:
        try:
            done = subprocess.run(
                [*command, *stage],
                cwd=tree,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return -1, [f"timed out after {timeout:.0f} s"]
        code, lines = done.returncode, (done.stdout + done.stderr).splitlines()
        if code != 0:
            break
    return code, lines


def first_failure(lines: list[str]) -> str | None:
    for line in lines:
        match = re.match(r"(FAILED|ERROR) (\S+)", line)
        if match:
            return match.group(2)
    return None


def run(mutations: list[Mutation], timeout: float) -> list[Result]:
    results = []
    for mutation in mutations:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="bkconform-mutant-") as scratch:
            tree = copy_tree(Path(scratch))
            if not apply(tree, mutation):
                result = Result(mutation.name, mutation.path, mutation.why, "not-applicable")
            else:
                code, lines = fast_suite(tree, mutation.hints, timeout)
                outcome = "survived" if code == 0 else "killed"
                result = Result(
                    mutation.name,
                    mutation.path,
                    mutation.why,
                    outcome,
                    first_failure(lines),
                    tail=lines[-3:],
                )
        result.seconds = round(time.monotonic() - started, 1)
        print(
            f"{result.outcome:<15} {result.name:<58} {result.seconds:>6.1f} s  "
            f"{result.first_failure or ''}",
            flush=True,
        )
        results.append(result)
    return results


def baseline(timeout: float) -> bool:
    """The unmutated copy passes the hints (so a kill is the mutation's doing)."""
    hints = sorted({h for m in MUTATIONS for h in m.hints})
    with tempfile.TemporaryDirectory(prefix="bkconform-baseline-") as scratch:
        tree = copy_tree(Path(scratch))
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *hints],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if done.returncode != 0:
        print("the unmutated tree fails its hint tests:\n" + done.stdout[-3000:])
    return done.returncode == 0


def write_report(directory: Path, results: list[Result]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "report.json").write_text(
        json.dumps([asdict(r) for r in results], indent=2) + "\n"
    )
    killed = sum(r.outcome == "killed" for r in results)
    lines = [
        f"{killed} of {len(results)} mutations killed by the fast suite",
        "",
        *(
            f"{r.outcome:<15} {r.name:<58} {r.path}\n{'':<16}{r.why}"
            + (f"\n{'':<16}first failure: {r.first_failure}" if r.first_failure else "")
            for r in results
        ),
    ]
    (directory / "report.txt").write_text("\n".join(lines) + "\n")


def run_mutmut(report: Path, max_children: int) -> int:
    """mutmut over the modules in pyproject's ``[tool.mutmut]`` (``VERDICT_MODULES``), judged by
    the fast suite, in a scratch copy (mutmut writes ``mutants/`` beside the sources). The
    score and every mutant that was not killed go to ``report/mutmut.txt``."""
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent))
    if mutmut is None:
        print("mutmut is not installed: pip install -e '.[dev]'", file=sys.stderr)
        return 2
    report.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bkconform-mutmut-"))
    tree = copy_tree(scratch)
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        # The mutated tree is tree/mutants: its tests look for ../shared from there.
        (tree / "shared").symlink_to(shared)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run(
        [mutmut, "run", "--max-children", str(max_children)], cwd=tree, env=env, check=False
    )
    results = subprocess.run(
        [mutmut, "results", "--all", "true"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    counts: dict[str, int] = {}
    for line in results.stdout.splitlines():
        status = line.rsplit(":", 1)[-1].strip()
        counts[status] = counts.get(status, 0) + 1
    total = sum(counts.values())
    killed = counts.get("killed", 0)
    score = f"{killed} of {total} mutants killed ({100 * killed / total:.1f}%)" if total else "none"
    listing = "\n".join(line for line in results.stdout.splitlines() if "killed" not in line)
    (report / "mutmut.txt").write_text(f"{score}; by status: {counts}\n{listing}\n")
    print(f"mutmut: {score}. Not killed: {report / 'mutmut.txt'} (scratch copy: {tree})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-k", dest="match", default="", help="only mutations whose name has it")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument("--report", type=Path, default=ROOT / "runs" / "mutations")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per mutation, seconds")
    parser.add_argument("--mutmut", action="store_true", help="run mutmut instead")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    if args.mutmut:
        return run_mutmut(args.report, args.max_children)
    chosen = [m for m in MUTATIONS if args.match in m.name]
    if args.list:
        for m in chosen:
            print(f"{m.name:<58} {m.path}: {m.why}")
        return 0
    if not baseline(args.timeout):
        return 2
    results = run(chosen, args.timeout)
    write_report(args.report, results)
    print(f"Report: {args.report / 'report.txt'}")
    if any(r.outcome == "not-applicable" for r in results):
        return 2
    return 1 if any(r.outcome == "survived" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

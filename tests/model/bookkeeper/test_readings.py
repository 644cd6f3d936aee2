"""The named readings of the spec (``model.bookkeeper.readings``) and ``ModelConfig.describe``.

The presets are pinned to the switch sets each judge used before they were named (issue 48):
a preset that changes changes verdicts, and must say so here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.interleavings import LIMBO_CRASH, SEED_001
from model.bookkeeper.readings import (
    BOOKIE_AS_IMPLEMENTED,
    FAILOVER,
    JAVA_RECOVERY,
    JAVA_WRITER,
    PRESETS,
    READING_SWITCHES,
    RUN_SETTINGS,
    SPEC,
    SPEC_AS_INTENDED,
    SWITCHES,
    Reading,
    bookie_reading,
    reading_of,
    switches_on,
)

#: What each judge turned on before the readings were named (story.java_recovery_config,
#: writer_story.writer_config and story_configs, options.config_from_args and
#: distributed.plan.as_real_bookies_run, the limbo-crash interleaving).
PINNED = {
    "spec": set(),
    "spec-as-intended": {"late_read_answers_ignored"},
    "bookie-as-implemented": {"lac_of_highest_entry", "bookie_recovers_limbo"},
    "java-recovery": {
        "late_read_answers_ignored",
        "late_read_requests_processed",
        "read_timeouts_per_entry",
        "lac_counts_as_confirmed",
        "lac_of_highest_entry",
        "resends_carry_first_lac",
        "adds_in_arrival_order",
    },
    "java-writer": {
        "ensembles_may_repeat",
        "partial_ensemble_changes",
        "late_adds_after_timeout",
        "resends_carry_first_lac",
        "adds_in_arrival_order",
    },
    "failover": {
        "ensembles_may_repeat",
        "partial_ensemble_changes",
        "late_adds_after_timeout",
        "resends_carry_first_lac",
        "adds_in_arrival_order",
        "late_read_answers_ignored",
        "late_read_requests_processed",
        "read_timeouts_per_entry",
        "lac_counts_as_confirmed",
        "lac_of_highest_entry",
        "fenced_writer_closes",
        "closing_writer_takes_answers",
        "completed_adds_ignore_fence",
    },
}

#: A configuration with limbo on: the bookies' own client applies.
LIMBO = SEED_001.protected
#: Configurations to apply readings to: plain, with limbo, with every switch of another
#: reading on, with the bookies' own client.
BASES = {
    "plain": ModelConfig(),
    "limbo": LIMBO,
    "failover-limbo": FAILOVER.apply(LIMBO),
    "bookies-limbo": BOOKIE_AS_IMPLEMENTED.apply(LIMBO),
}


def test_the_presets_are_the_switch_sets_the_judges_used() -> None:
    assert {r.name: set(r.on) for r in PRESETS} == PINNED
    named = (SPEC, SPEC_AS_INTENDED, BOOKIE_AS_IMPLEMENTED, JAVA_RECOVERY, JAVA_WRITER, FAILOVER)
    assert named == PRESETS


def test_every_field_is_a_reading_switch_or_a_run_setting() -> None:
    names = {f.name for f in dataclasses.fields(ModelConfig)}
    assert set(READING_SWITCHES) | set(RUN_SETTINGS) == names
    assert not set(READING_SWITCHES) & set(RUN_SETTINGS)
    defaults = ModelConfig()
    assert all(getattr(defaults, name) is False for name in READING_SWITCHES)


def test_every_switch_has_its_evidence_and_every_preset_its_summary() -> None:
    for switch in SWITCHES.values():
        assert switch.evidence and "\n" not in switch.evidence
        # Every switch's evidence names a source: a BookKeeper class, an issue, a finding.
        assert any(word in switch.evidence for word in ("issue", "BookKeeper", "docs/")), switch
    for reading in PRESETS:
        assert reading.summary
        assert all(SWITCHES[s.name] is s for s in reading.switches)


@pytest.mark.parametrize("reading", PRESETS, ids=lambda r: r.name)
@pytest.mark.parametrize("base_name", sorted(BASES))
def test_apply_sets_exactly_the_reading_s_switches_and_changes_nothing_else(
    reading: Reading, base_name: str
) -> None:
    base = BASES[base_name]
    applied = reading.apply(base)
    assert switches_on(applied) == reading.applying(applied)
    assert reading_of(applied) is reading
    assert reading.apply(applied) is applied
    changed = {
        f.name
        for f in dataclasses.fields(ModelConfig)
        if getattr(applied, f.name) != getattr(base, f.name)
    }
    assert changed <= set(READING_SWITCHES) | {"clients"}
    # Only the bookies' own recovery client changes the constants: one client more.
    own_client = int(applied.bookie_recovers_limbo) - int(base.bookie_recovers_limbo)
    assert applied.clients == base.clients + own_client


def test_the_bookies_own_client_applies_only_with_limbo() -> None:
    plain = BOOKIE_AS_IMPLEMENTED.apply(ModelConfig())
    assert switches_on(plain) == {"lac_of_highest_entry"}
    assert plain.clients == 2 and plain.internal_client is None
    limbo = BOOKIE_AS_IMPLEMENTED.apply(SEED_001.protected)
    assert switches_on(limbo) == {"lac_of_highest_entry", "bookie_recovers_limbo"}
    assert (limbo.clients, limbo.internal_client) == (3, 2)
    # And back: another reading takes the client away again.
    assert SPEC.apply(limbo) == SEED_001.protected


def test_a_configuration_says_which_reading_it_is() -> None:
    assert reading_of(ModelConfig()) is SPEC
    assert reading_of(LIMBO_CRASH.protected) is SPEC_AS_INTENDED
    assert reading_of(LIMBO_CRASH.unprotected) is SPEC_AS_INTENDED
    custom = dataclasses.replace(ModelConfig(), read_timeouts_per_entry=True)
    found = reading_of(custom)
    assert found not in PRESETS and found.on == {"read_timeouts_per_entry"}
    assert found.name == "custom (read_timeouts_per_entry)"
    assert JAVA_WRITER.describe().startswith("java-writer: ensembles_may_repeat, ")
    assert SPEC.describe() == "spec: every switch off"


def test_the_presets_are_told_apart_with_and_without_limbo() -> None:
    for base in (ModelConfig(), LIMBO):
        sets = [r.applying(base) for r in PRESETS]
        assert len(set(sets)) == len(sets)


def test_plus_and_without_make_readings_of_the_same_switches() -> None:
    spec_lac = bookie_reading(spec_bookie_lac=True)
    assert bookie_reading() is BOOKIE_AS_IMPLEMENTED
    assert spec_lac.on == {"bookie_recovers_limbo"}
    assert spec_lac.name == "bookie-as-implemented, --spec-bookie-lac"
    assert FAILOVER.without("fenced_writer_closes").on == FAILOVER.on - {"fenced_writer_closes"}
    assert SPEC.plus("lac_of_highest_entry").on == {"lac_of_highest_entry"}
    with pytest.raises(ValueError, match="no reading switch: bookies"):
        SPEC.plus("bookies")
    with pytest.raises(ValueError, match="no reading switch"):
        SPEC.without("max_crashes")
    with pytest.raises(ValueError, match="no reading switch"):
        Reading(
            "odd",
            "a switch not of the catalogue",
            (dataclasses.replace(SWITCHES["lac_of_highest_entry"]),),
        )


# ModelConfig.describe, generated from the fields -------------------------------------------------


def test_describe_keeps_its_format() -> None:
    assert ModelConfig().describe() == (
        "Bookies=3 Clients=2 E=3 WQ=3 AQ=2 SendLimit=1 InflightLimit=1"
    )
    cfg = dataclasses.replace(
        BOOKIE_AS_IMPLEMENTED.apply(SEED_001.protected), recovery_reads_fence=False
    )
    assert cfg.describe() == (
        "Bookies=2 Clients=3 E=2 WQ=2 AQ=2 SendLimit=1 InflightLimit=1 "
        "RecoveryReadsFence=FALSE LacOfHighestEntry=TRUE BookieRecoversLimbo=TRUE(c3) "
        "Crashes<=1(open,recovery) Limbo=on FenceOnUncleanShutdown=on"
    )
    assert (
        FAILOVER.apply(ModelConfig())
        .describe()
        .endswith(
            "LateReadAnswersIgnored=TRUE LacCountsAsConfirmed=TRUE LateReadRequestsProcessed=TRUE "
            "ReadTimeoutsPerEntry=TRUE EnsemblesMayRepeat=TRUE PartialEnsembleChanges=TRUE "
            "LateAddsAfterTimeout=TRUE FencedWriterCloses=TRUE ClosingWriterTakesAnswers=TRUE "
            "CompletedAddsIgnoreFence=TRUE ResendsCarryFirstLac=TRUE AddsInArrivalOrder=TRUE "
            "LacOfHighestEntry=TRUE"
        )
    )


def _flipped(value: object) -> Any:
    if isinstance(value, bool):
        return not value
    if value is None:
        return 4
    assert isinstance(value, int)
    return value + 1


def test_describe_lists_every_field() -> None:
    # Room for every field to change on its own: four bookies, crashes with limbo, and the
    # switches other switches need.
    base = dataclasses.replace(
        LIMBO,
        bookies=5,
        ensemble_size=None,
        clients=3,
        max_crashes=1,
        write_quorum=3,
        ack_quorum=2,
        late_read_answers_ignored=True,
        fenced_writer_closes=True,
    )
    for f in dataclasses.fields(ModelConfig):
        if not f.init:
            continue
        changed = dataclasses.replace(base, **{f.name: _flipped(getattr(base, f.name))})
        assert changed.describe() != base.describe(), f.name

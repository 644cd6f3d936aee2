"""Live rules: tried in order, counted down, removed when spent unless kept."""

from __future__ import annotations

from adapters.proxycore.rules import LiveRule, RuleBook


def book(*rules: tuple[str, int | None]) -> RuleBook[LiveRule[str]]:
    rules_book: RuleBook[LiveRule[str]] = RuleBook()
    for rule, times in rules:
        rules_book.add(lambda rule_id, rule=rule, times=times: LiveRule(rule_id, rule, times))
    return rules_book


def test_the_first_rule_that_applies_decides_and_is_counted() -> None:
    rules = book(("drop", 2), ("hold", None))
    assert rules.listing() == [(1, "drop", 2), (2, "hold", None)]
    first = rules.first(lambda live: True)
    assert first is not None and first.rule == "drop"
    assert rules.listing() == [(1, "drop", 1), (2, "hold", None)]
    other = rules.first(lambda live: live.rule == "hold")
    assert other is not None and other.remaining is None


def test_a_spent_rule_is_removed_unless_it_still_has_frames_in_hand() -> None:
    rules = book(("reorder", 1), ("drop", 1))
    spent = rules.first(lambda live: live.rule == "reorder", keep_spent=lambda live: True)
    assert spent is not None and spent.remaining == 0
    assert [rule_id for rule_id, _, _ in rules.listing()] == [1, 2]
    rules.first(lambda live: live.rule == "drop")
    assert rules.listing() == [(1, "reorder", 0)]
    rules.discard(spent)
    rules.discard(spent)  # gone already: nothing happens
    assert rules.listing() == []
    assert rules.first(lambda live: True) is None


def test_remove_and_clear() -> None:
    rules = book(("a", None), ("b", None), ("c", None))
    removed = rules.remove(2)
    assert removed is not None and removed.rule == "b"
    assert rules.remove(2) is None
    assert [live.rule for live in rules.clear()] == ["a", "c"]
    assert rules.listing() == []
    assert rules.add(lambda rule_id: LiveRule(rule_id, "d", None)).rule_id == 4

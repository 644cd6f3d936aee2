"""Matches and rules (no server)."""

from __future__ import annotations

import pytest

from adapters.zkproxy import Direction, Hold, InvalidRule, Op, PacketInfo, Rule, SubOp, ZkMatch

#: Ledger 7's znode (hierarchical layout, ``adapters.zookeeper.paths.ledger_path``).
LEDGER = "/ledgers/00/0000/L0007"


def request(op: Op, path: str | None = None, *subs: SubOp) -> PacketInfo:
    return PacketInfo(Direction.REQUEST, op, 1, path, tuple(subs))


def test_ops_and_exact_paths() -> None:
    match = ZkMatch.request(Op.SET_DATA, path=LEDGER)
    assert match.matches(request(Op.SET_DATA, LEDGER))
    assert not match.matches(request(Op.GET_DATA, LEDGER))
    assert not match.matches(request(Op.SET_DATA, LEDGER + "0"))
    assert not match.matches(PacketInfo(Direction.REPLY, Op.SET_DATA, 1, LEDGER, err=0))
    assert ZkMatch.request(Op.SET_DATA, Op.DELETE).matches(request(Op.DELETE, "/x"))


def test_path_prefixes_are_string_prefixes() -> None:
    match = ZkMatch.request(path_prefix="/ledgers/idgen/ID-")
    assert match.matches(request(Op.CREATE, "/ledgers/idgen/ID-"))
    assert not match.matches(request(Op.CREATE, "/ledgers/idgen"))
    assert not match.matches(request(Op.PING))


def test_a_multi_matches_through_its_operations() -> None:
    multi = request(
        Op.MULTI, None, SubOp(Op.CHECK, "/ledgers/LAYOUT", 0), SubOp(Op.SET_DATA, LEDGER, 3)
    )
    assert ZkMatch.request(Op.SET_DATA, path=LEDGER).matches(multi)
    assert ZkMatch.request(Op.MULTI, path=LEDGER).matches(multi)
    assert ZkMatch.request(Op.MULTI).matches(multi)
    assert not ZkMatch.request(Op.SET_DATA, path="/ledgers/LAYOUT").matches(multi)
    assert not ZkMatch.request(Op.DELETE).matches(multi)


def test_replies_by_error() -> None:
    bad = PacketInfo(Direction.REPLY, Op.SET_DATA, 4, LEDGER, err=-103)
    assert ZkMatch.reply(Op.SET_DATA, err=-103).matches(bad)
    assert not ZkMatch.reply(Op.SET_DATA, err=0).matches(bad)
    assert ZkMatch.reply(path=LEDGER).describe() == f"reply {LEDGER}"


def test_nonsense_is_refused() -> None:
    with pytest.raises(InvalidRule, match="not both"):
        ZkMatch(path="/a", path_prefix="/")
    with pytest.raises(InvalidRule, match="Op values"):
        ZkMatch(ops={"setData"})  # type: ignore[arg-type]
    with pytest.raises(InvalidRule, match="release_after"):
        Hold(release_after=-1)
    with pytest.raises(InvalidRule, match="ping_wait"):
        Hold(ping_wait=float("nan"))
    with pytest.raises(InvalidRule, match="rules hold requests"):
        Rule(ZkMatch.reply(Op.SET_DATA))
    with pytest.raises(InvalidRule, match="times"):
        Rule(ZkMatch.request(), times=0)
    with pytest.raises(InvalidRule, match="requests carry no err"):
        ZkMatch(direction=Direction.REQUEST, err=0)

"""ZooKeeper's four-letter words read: ``cons``'s sessions and their packet counts."""

from __future__ import annotations

import pytest

from adapters.zookeeper import four_letter_words
from adapters.zookeeper.four_letter_words import packets_received

#: ``cons`` of a 3.9 server with two client connections (one of them before its handshake).
CONS = (
    " /127.0.0.1:45364[1](queued=0,recved=161,sent=161,sid=0x10000e53e810000,lop=EXIS,"
    "est=1796048463045,to=5000,lcxid=0xa0,lzxid=0x2,lresp=15027427,llat=1,minlat=0,avglat=0,"
    "maxlat=8)\n"
    " /127.0.0.1:45380[1](queued=0,recved=7,sent=6,sid=0x10000e53e810003,lop=PING,"
    "est=1796048463100,to=4000,lcxid=0x2,lzxid=0x2,lresp=15027430,llat=0,minlat=0,avglat=0,"
    "maxlat=1)\n"
    " /127.0.0.1:45368[0](queued=0,recved=1,sent=0)\n\n"
)


def test_cons_gives_each_session_its_packets_received(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def answer(host: str, port: int, word: str, timeout: float = 2.0) -> str:
        asked.append(word)
        return CONS

    monkeypatch.setattr(four_letter_words, "four_letter_word", answer)
    assert packets_received("127.0.0.1", 2181) == {
        0x10000E53E810000: 161,
        0x10000E53E810003: 7,
    }
    assert asked == ["cons"]


def test_no_answer_is_not_known(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(four_letter_words, "four_letter_word", lambda *a, **k: None)
    assert packets_received("127.0.0.1", 2181) is None

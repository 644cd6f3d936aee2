"""Hypothesis strategies for the ZooKeeper adapter's values."""

from __future__ import annotations

from hypothesis import strategies as st

from adapters.zookeeper.cookie import Cookie
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, LedgerState, Segment

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
NON_NEGATIVE_INT64 = st.integers(min_value=0, max_value=2**63 - 1)
LEDGER_IDS = st.one_of(
    st.integers(min_value=0, max_value=2**63 - 1),
    st.integers(min_value=0, max_value=1000),
    st.integers(min_value=2**31 - 3, max_value=2**31 + 3),
    st.integers(min_value=10**10 - 3, max_value=10**10 + 3),
)

bookie_ids = st.one_of(
    st.builds(
        lambda a, b, port: f"127.0.{a}.{b}:{port}",
        st.integers(0, 255),
        st.integers(0, 255),
        st.integers(1, 65535),
    ),
    st.from_regex(r"[a-zA-Z0-9:-_.\-]{1,24}", fullmatch=True).filter(lambda s: s != "readonly"),
)


@st.composite
def ledger_metadata(draw: st.DrawFn) -> LedgerMetadata:
    ensemble_size = draw(st.integers(min_value=1, max_value=6))
    write_quorum = draw(st.integers(min_value=1, max_value=ensemble_size))
    ack_quorum = draw(st.integers(min_value=1, max_value=write_quorum))
    starts = draw(st.lists(st.integers(1, 2**40), max_size=3, unique=True))
    segments = tuple(
        Segment(
            first, tuple(draw(st.lists(bookie_ids, min_size=ensemble_size, max_size=ensemble_size)))
        )
        for first in [0, *sorted(starts)]
    )
    state = draw(st.sampled_from(LedgerState))
    last_entry_id, length = -1, 0
    if state is LedgerState.CLOSED:
        last_entry_id = draw(st.integers(min_value=-1, max_value=2**63 - 1))
        length = draw(NON_NEGATIVE_INT64)
    digest_type = draw(st.none() | st.sampled_from(DigestType))
    password = None if digest_type is None else draw(st.binary(max_size=24))
    custom = draw(st.dictionaries(st.text(max_size=12), st.binary(max_size=12), max_size=4))
    return LedgerMetadata(
        ensemble_size=ensemble_size,
        write_quorum_size=write_quorum,
        ack_quorum_size=ack_quorum,
        segments=segments,
        digest_type=digest_type,
        password=password,
        state=state,
        last_entry_id=last_entry_id,
        length=length,
        ctime=draw(st.none() | INT64),
        custom_metadata=tuple(custom.items()),
        ctoken=draw(INT64),
    )


directory = st.from_regex(r"/[ -~\u00e9\u4e2d]{1,20}", fullmatch=True).filter(
    lambda d: "\t" not in d
)


@st.composite
def cookies(draw: st.DrawFn) -> Cookie:
    version = draw(st.sampled_from([4, 5]))
    ledger_dirs = tuple(draw(st.lists(directory, min_size=1, max_size=3)))
    return Cookie(
        bookie_host=draw(bookie_ids),
        journal_dirs=",".join(
            draw(st.lists(directory.filter(lambda d: "," not in d), min_size=1, max_size=2))
        ),
        ledger_dirs=ledger_dirs,
        instance_id=draw(st.none() | st.uuids().map(str)),
        index_dirs=tuple(draw(st.lists(directory, min_size=1, max_size=2)))
        if version == 5
        else None,
        layout_version=version,
    )

"""Zab checker time per 10,000 client operations (goal: under 2 s).

    .venv/bin/python benchmarks/zab_checker.py [--ops 10000] [--servers 3] [--repeat 3]

Builds a synthetic, correct history the shape of a real run (every write logged on every
server, a third of the operations reads, several sessions, epochs changing) and times
``model.zab.checkers.check`` on it; also at 2x and 4x the size, to show the growth is linear.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from model.zab.checkers import check
from model.zab.history import Change, ClientOp, History, LeaderSample, ServerLog, Txn


def synthetic_history(ops: int, servers: int, seed: int = 0) -> History:
    rng = random.Random(seed)
    txns: list[Txn] = []
    client_ops: list[ClientOp] = []
    versions: dict[str, int] = {}
    data: dict[str, tuple[bytes, int]] = {}
    epoch, counter = 1, 0
    leaders = []
    for index in range(ops):
        if index % 2500 == 0:
            epoch, counter = epoch + 1, 0
            leaders.append(LeaderSample(float(index), f"zk{epoch % servers + 1}", epoch << 32))
        process = rng.randrange(8)
        path = f"/zab/k{rng.randrange(50)}"
        now = float(index)
        if rng.random() < 0.35:
            value, mzxid = data.get(path, (None, None))
            client_ops.append(
                ClientOp(
                    index,
                    process,
                    "read",
                    path,
                    "ok",
                    now,
                    now + 0.5,
                    process,
                    found=value is not None,
                    value=value,
                    mzxid=mzxid,
                )
            )
            continue
        counter += 1
        zxid = epoch << 32 | counter
        tag = f"w{index}".encode()
        if path not in versions:
            change = Change("create", path, tag, 0)
            versions[path] = 0
            kind = "create"
        else:
            versions[path] += 1
            change = Change("set", path, tag, versions[path])
            kind = "set"
        data[path] = (tag, zxid)
        txns.append(Txn(zxid, f"d{zxid}", kind, process, (change,)))
        client_ops.append(
            ClientOp(
                index,
                process,
                kind,
                path,
                "ok",
                now,
                now + 0.5,
                process,
                tag.decode(),
                tag,
                expected_version=versions[path] - 1 if kind == "set" else -1,
                zxid=zxid,
                version=versions[path],
            )
        )
    logs = tuple(ServerLog(f"zk{i + 1}", tuple(txns)) for i in range(servers))
    return History(logs, tuple(leaders), tuple(client_ops), scope="/zab/")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for scale in (1, 2, 4):
        ops = args.ops * scale
        history = synthetic_history(ops, args.servers)
        best = float("inf")
        for _ in range(args.repeat):
            started = time.perf_counter()
            verdict = check(history)
            best = min(best, time.perf_counter() - started)
        assert verdict.valid is True, verdict.to_json()
        print(
            f"{ops:>7} ops, {args.servers} servers: check {best:.3f} s "
            f"= {best * 10_000 / ops:.3f} s per 10,000 ops (verdict {verdict.valid})"
        )


if __name__ == "__main__":
    main()

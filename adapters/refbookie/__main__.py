"""``python -m adapters.refbookie --conf bk_server.conf``: run one reference bookie (a test double).

Exit codes: 0 after a clean stop (SIGTERM/SIGINT), 2 for a bad configuration, 1 if start-up
fails. SIGKILL is a crash: unflushed data is lost and the dirty marker stays.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from adapters.refbookie.config import load_config
from adapters.refbookie.errors import ConfigError, StartupError
from adapters.refbookie.server import BookieServer

log = logging.getLogger("adapters.refbookie")


async def serve(server: BookieServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await server.start()
    # A parent waiting for readiness reads this line from stderr.
    print(f"refbookie ready {server.bookie_id} port={server.port}", file=sys.stderr, flush=True)
    try:
        await stop.wait()
    finally:
        log.info("stopping")
        await server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.refbookie",
        description="Reference bookie: a test double speaking BookKeeper's bookie protocol.",
    )
    parser.add_argument("--conf", required=True, type=Path, help="bk_server.conf-style file")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = load_config(args.conf)
    except ConfigError as exc:
        print(f"refbookie: configuration error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(BookieServer(config)))
    except ConfigError as exc:
        print(f"refbookie: configuration error: {exc}", file=sys.stderr)
        return 2
    except (StartupError, OSError) as exc:
        print(f"refbookie: cannot start: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

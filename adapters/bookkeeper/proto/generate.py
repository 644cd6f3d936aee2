"""Regenerate the committed protobuf modules of this package from ``BookkeeperProtocol.proto``.

Run ``python -m adapters.bookkeeper.proto.generate`` after editing the ``.proto``; the test
``tests/adapters/bookkeeper/test_proto_current.py`` fails until the committed output matches.
"""

from __future__ import annotations

import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
PROTO_FILES = ("BookkeeperProtocol.proto",)


def generate(out_dir: Path) -> None:
    """Compile every ``.proto`` of this package into ``out_dir`` (``*_pb2.py``, ``*_pb2.pyi``)."""
    from grpc_tools import protoc  # a dev dependency: only needed to regenerate

    out_dir.mkdir(parents=True, exist_ok=True)
    for name in PROTO_FILES:
        args = [
            "grpc_tools.protoc",
            f"--proto_path={PROTO_DIR}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            str(PROTO_DIR / name),
        ]
        if protoc.main(args) != 0:
            raise RuntimeError(f"protoc failed on {name}")


def main() -> int:
    generate(PROTO_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(main())

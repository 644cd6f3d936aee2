"""Regenerate the committed protobuf modules with grpcio-tools.

Run ``python -m adapters.zookeeper.proto.regenerate``. The currency test calls
:func:`generate` into a temporary directory and compares the bytes with the committed files.
"""

from __future__ import annotations

import sys
from pathlib import Path

from adapters.errors import AdapterError

PROTO_DIR = Path(__file__).resolve().parent
PROTO_FILE = "bookkeeper_data_formats.proto"
GENERATED_FILES = ("bookkeeper_data_formats_pb2.py", "bookkeeper_data_formats_pb2.pyi")


class ProtocFailed(AdapterError, RuntimeError):
    """grpc_tools.protoc returned a non-zero status."""


def generate(out_dir: Path) -> list[Path]:
    """Compile the .proto into ``out_dir`` and return the generated files."""
    # Imported lazily: grpcio-tools is a dev dependency, not needed to use the generated code.
    from grpc_tools import protoc

    out_dir.mkdir(parents=True, exist_ok=True)
    status = protoc.main(
        [
            "grpc_tools.protoc",
            f"--proto_path={PROTO_DIR}",
            f"--python_out={out_dir}",
            f"--pyi_out={out_dir}",
            str(PROTO_DIR / PROTO_FILE),
        ]
    )
    if status != 0:
        raise ProtocFailed(f"protoc exited with status {status} for {PROTO_DIR / PROTO_FILE}")
    return [out_dir / name for name in GENERATED_FILES]


def main() -> int:
    for path in generate(PROTO_DIR):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

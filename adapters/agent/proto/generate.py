"""Regenerate the committed gRPC modules of this package from ``agent.proto``.

Run ``python -m adapters.agent.proto.generate`` after editing the ``.proto``; the test
``tests/adapters/agent/test_proto_current.py`` fails until the committed output matches.

protoc is run from the repository root (``adapters/agent/proto/agent.proto``) so that the
generated ``agent_pb2_grpc.py`` imports ``adapters.agent.proto.agent_pb2`` by its package path:
grpcio-tools writes no relative imports.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from adapters.errors import AdapterError

PROTO_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PROTO_DIR.parents[2]
PROTO_FILE = PROTO_DIR.relative_to(SOURCE_ROOT) / "agent.proto"
GENERATED_FILES = ("agent_pb2.py", "agent_pb2.pyi", "agent_pb2_grpc.py")


class ProtocFailed(AdapterError, RuntimeError):
    """grpc_tools.protoc returned a non-zero status."""


def generate(out_dir: Path) -> list[Path]:
    """Compile ``agent.proto`` into ``out_dir`` and return the generated files."""
    from grpc_tools import protoc  # a dev dependency: only needed to regenerate

    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="agent-protoc-") as scratch:
        status = protoc.main(
            [
                "grpc_tools.protoc",
                f"--proto_path={SOURCE_ROOT}",
                f"--python_out={scratch}",
                f"--pyi_out={scratch}",
                f"--grpc_python_out={scratch}",
                str(SOURCE_ROOT / PROTO_FILE),
            ]
        )
        if status != 0:
            raise ProtocFailed(f"protoc exited with status {status} for {PROTO_FILE}")
        written = Path(scratch) / PROTO_FILE.parent
        for name in GENERATED_FILES:
            shutil.copyfile(written / name, out_dir / name)
    return [out_dir / name for name in GENERATED_FILES]


def main() -> int:
    for path in generate(PROTO_DIR):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

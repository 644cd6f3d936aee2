"""The suite-wide leftover check itself: it sees a process this test starts and leaves."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import descendants

PARENT_OF_A_SLEEPER = (
    "import subprocess, sys, time\n"
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
    "print(p.pid, flush=True)\n"
    "time.sleep(30)\n"
)


def test_descendants_include_grandchildren() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", PARENT_OF_A_SLEEPER], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        found = descendants(os.getpid())
        assert child.pid in found and grandchild in found
    finally:
        os.killpg(child.pid, 9)
        child.wait(timeout=10)

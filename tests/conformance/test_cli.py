"""The command line's own exits: an interrupt, and a reader that went away."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conformance import cli


def _exits_with(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> int:
    def raising(args: object) -> int:
        raise error

    parser = cli.build_parser()
    real_parse = parser.parse_args

    def parse(argv: object = None) -> object:
        args = real_parse(["bookkeeper", "list"])
        args.func = raising
        return args

    monkeypatch.setattr(parser, "parse_args", parse)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    return cli.main([])


def test_an_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _exits_with(monkeypatch, KeyboardInterrupt()) == 130


def test_a_reader_that_went_away_exits_as_sigpipe_does(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _exits_with(monkeypatch, BrokenPipeError()) == 128 + signal.SIGPIPE


def test_a_pipe_closed_by_head_leaves_no_traceback() -> None:
    # A command with long output, its reader gone after the first line.
    script = (
        "import sys\n"
        "from conformance import cli\n"
        "def talk(args):\n"
        "    for i in range(100000):\n"
        "        print('line', i)\n"
        "    return 0\n"
        "parser = cli.build_parser()\n"
        "real = parser.parse_args\n"
        "def parse(argv=None):\n"
        "    args = real(['bookkeeper', 'list'])\n"
        "    args.func = talk\n"
        "    return args\n"
        "parser.parse_args = parse\n"
        "cli.build_parser = lambda: parser\n"
        "sys.exit(cli.main([]))\n"
    )
    reader, writer = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=writer, stderr=subprocess.PIPE
    )
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        assert pipe.readline().startswith(b"line 0")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGPIPE
    assert b"Traceback" not in stderr and b"BrokenPipeError" not in stderr

"""``bkconform run`` and ``bkconform replay``: exit codes, the run directory, replays."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.rundir import read_history, story_steps


def _run_dirs(root: Path, suffix: str) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.name.endswith(suffix))


@pytest.mark.slow
def test_run_finds_defect_1_writes_the_story_and_replays_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--no-recovery-read-fence", "--runs-dir", str(tmp_path), "--quiet", "--fresh"]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "VIOLATION NoDivergenceBetweenClientAndMetaData" in out
    (run_dir,) = _run_dirs(tmp_path, "-model-run")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == "violation"
    assert results["finding"]["shrunk_steps"] <= 20
    assert results["search"]["seed"] == 0 and results["versions"]["hypothesis"]
    for name in ("history.jsonl", "trace.txt", "sequence.txt", "sequence.svg", "example.blob"):
        assert (run_dir / name).stat().st_size > 0, name
    # The history is every example's steps, then the shrunk finding's, tagged "finding".
    history = read_history(run_dir)
    assert len(history) > results["finding"]["shrunk_steps"] and results["state"] == "finished"
    story = story_steps(run_dir)
    assert len(story) == results["finding"]["shrunk_steps"] == results["steps"]
    assert story == history[-len(story) :] and {s["example"] for s in story} == {"finding"}
    assert story[-1]["violations"] == ["NoDivergenceBetweenClientAndMetaData"]

    assert main(["replay", str(run_dir), "--runs-dir", str(tmp_path)]) == 1
    replayed = capsys.readouterr().out
    assert "VIOLATION NoDivergenceBetweenClientAndMetaData" in replayed

    blob = (run_dir / "example.blob").read_text().strip()
    code = main(["replay", blob, "--no-recovery-read-fence", "--runs-dir", str(tmp_path)])
    assert code == 1
    # The same blob under the fixed protocol: the story no longer loses data.
    assert main(["replay", blob, "--runs-dir", str(tmp_path)]) == 0


def test_run_with_nothing_to_find_exits_0_and_says_what_it_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "run",
            "--bookies",
            "2",
            "--wq",
            "2",
            "--aq",
            "1",
            "--seconds",
            "2",
            "--max-examples",
            "20",
            "--runs-dir",
            str(tmp_path),
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Verdict: clean" in out
    (run_dir,) = _run_dirs(tmp_path, "-model-run")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["examples"] >= 20 and results["steps_run"] > 0


def test_a_racing_run_says_how_much_it_raced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--races", "--seconds", "2", "--max-examples", "20", "--quiet"]
    code = main([*argv, "--send-limit", "2", "--runs-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out  # the model target's bookies are the spec's: every race explained
    assert "Races: " in out and "serial orders checked" in out
    (run_dir,) = _run_dirs(tmp_path, "-model-run")
    results = json.loads((run_dir / "results.json").read_text())
    assert results["search"]["races"] is True
    races = results["races"]
    assert races["races"] > 0 and races["concurrent_steps"] >= 2 * races["races"]
    assert races["unexplained"] == 0
    raced = [s for s in read_history(run_dir) if s.get("race")]
    assert raced and all(s["race"]["position"] >= 1 for s in raced)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--target", "external"], "needs --zk"),
        (["run", "--wq", "4"], "exceeds the number of bookies"),
        (["run", "--steps", "0"], "at least 1"),
        (["replay", "not-a-blob"], "not an example blob"),
        (["replay", "/does/not/exist"], "/does/not/exist: no such run directory"),
        (["replay", "./runs/missing"], "./runs/missing: no such run directory"),
        (
            ["run", "--reference-faulty-mode", "racy-fence-add"],
            "--reference-faulty-mode is the reference bookie's",
        ),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--runs-dir", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_replaying_a_file_says_it_is_no_run_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (results := tmp_path / "results.json").write_text("{}")
    assert main(["replay", str(results), "--runs-dir", str(tmp_path)]) == 2
    assert f"{results} is a file: replay takes a run directory" in capsys.readouterr().err


def test_an_unreachable_external_cluster_is_undecided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--target", "external", "--zk", "127.0.0.1:9", "--runs-dir", str(tmp_path)])
    assert code == 2
    assert "could not decide" in capsys.readouterr().err


def test_runs_take_a_bookie_s_lac_as_a_real_bookie_answers_it(tmp_path: Path) -> None:
    # lac_of_highest_entry is on unless --spec-bookie-lac: real bookies answer a fence read
    # with their highest entry's LAC (the first race search on 4.17.3 diverged on it).
    for extra, expected in (([], True), (["--spec-bookie-lac"], False)):
        argv = ["run", "--seconds", "1", "--max-examples", "1", "--quiet", *extra]
        assert main([*argv, "--runs-dir", str(tmp_path / str(expected))]) == 0
        (run_dir,) = _run_dirs(tmp_path / str(expected), "-model-run")
        results = json.loads((run_dir / "results.json").read_text())
        assert results["config"]["lac_of_highest_entry"] is expected


def test_a_race_finding_is_replayed_at_jittered_send_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from conformance.commands import run as command
    from conformance.races import RaceTally
    from conformance.search.runner import SearchSettings

    finding = SimpleNamespace(
        choices=[1, 2, 3],
        run=SimpleNamespace(outcome=SimpleNamespace(races=RaceTally(), verdict="divergence")),
    )
    jitters: list[list[float]] = []
    verdicts = iter(["divergence", "clean", "divergence"])

    def replay(cfg: object, target: object, choices: list[int], **kwargs: object) -> object:
        assert choices == [1, 2, 3] and kwargs["races"] is True
        draw = kwargs["race_jitter"]
        jitters.append([draw() for _ in range(4)])  # type: ignore[operator]
        return SimpleNamespace(outcome=SimpleNamespace(verdict=next(verdicts)))

    monkeypatch.setattr(command, "replay_choices", replay)
    search = SearchSettings(races=True)
    report = SimpleNamespace(finding=finding)
    assert command._race_hits(None, None, report, search, 3) == (2, 3)  # type: ignore[arg-type]
    assert all(0.0 <= d <= command.RACE_JITTER_S for draws in jitters for d in draws)
    assert len({tuple(draws) for draws in jitters}) == 3  # each attempt its own send times
    again: list[list[float]] = []
    verdicts = iter(["divergence"] * 3)
    jitters, again = again, jitters
    command._race_hits(None, None, report, search, 3)  # type: ignore[arg-type]
    assert jitters == again  # seeded by the attempt's number: the same replays again


def test_a_finding_s_replays_report_their_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    # After the search, the replays of a race finding (issue 48): a report when the first
    # starts, then one whenever the interval passed (here 10 s of a fake clock: 4 s a step).
    from types import SimpleNamespace

    from conformance.commands import run as command
    from conformance.races import RaceTally
    from conformance.search import runner
    from conformance.search.runner import SearchProgress, SearchSettings

    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 10.0)
    now = [100.0]

    def replay(cfg: object, target: object, choices: list[int], **kwargs: object) -> object:
        for _ in range(3):
            now[0] += 4.0
            kwargs["on_record"](None)  # type: ignore[operator]
        return SimpleNamespace(outcome=SimpleNamespace(verdict="divergence"))

    monkeypatch.setattr(command, "replay_choices", replay)
    finding = SimpleNamespace(
        choices=[1],
        run=SimpleNamespace(outcome=SimpleNamespace(races=RaceTally(), verdict="divergence")),
    )
    report = SimpleNamespace(finding=finding, elapsed=30.0)
    told: list[SearchProgress] = []
    search = SearchSettings(races=True)
    hits = command._race_hits(  # type: ignore[arg-type]
        None, None, report, search, 3, progress=told.append, clock=lambda: now[0]
    )
    assert hits == (3, 3)
    assert [(p.phase, p.examples, p.steps, p.elapsed, p.examples_left) for p in told] == [
        ("replays", 0, 0, 30.0, 3),
        ("replays", 0, 3, 42.0, 3),
        ("replays", 1, 6, 54.0, 2),
        ("replays", 2, 9, 66.0, 1),
    ]
    assert told[-1].describe() == (
        "[replays] 2 examples, 9 steps, 1 findings, 66 s; left: 1 examples"
    )


class _Terminal:
    """A terminal's output: what it shows, line by line (carriage returns rewrite a line)."""

    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def shown(self) -> list[str]:
        return [line.rsplit("\r", 1)[-1].rstrip() for line in self.text.split("\n")]


def test_progress_lines_say_what_is_left_and_keep_each_phase_s_last_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io
    import os

    from conformance.commands import run as command
    from conformance.search.portfolio import ExplorerProgress
    from conformance.search.runner import SearchProgress

    hypothesis = [SearchProgress("hypothesis", n, 10 * n, 1.0 + n, 0, budget=60.0) for n in (1, 2)]
    explorer = SearchProgress(
        "explorer", 2, 20, 13.0, 0, budget=60.0, explorer=ExplorerProgress(2, 2, 5, 50, 4)
    )
    piped = io.StringIO()
    line = command._ProgressLine(piped, quiet=False)
    for p in [*hypothesis, explorer]:
        line(p)
    line.done()
    assert piped.getvalue().splitlines() == [
        "  [hypothesis] 1 examples, 10 steps, 5 steps/s, 0 findings, 2 s; left: 58 s of 60 s",
        "  [hypothesis] 2 examples, 20 steps, 7 steps/s, 0 findings, 3 s; left: 57 s of 60 s",
        "  [explorer] 2 examples, 20 steps, 2 steps/s, 0 findings, 13 s; left: 47 s of 60 s; "
        "explorer: 2 workers running, 5 walks, 50 model steps, 4 cells",
    ]
    terminal = _Terminal()
    monkeypatch.setattr(command.shutil, "get_terminal_size", lambda: os.terminal_size((100, 24)))
    line = command._ProgressLine(terminal, quiet=False)  # type: ignore[arg-type]
    for p in [*hypothesis, explorer, explorer]:
        line(p)
    line.done()
    # The hypothesis phase's last line stays; the explorer's lines, too long to rewrite in
    # place, each have their own.
    shown = [s for s in terminal.shown() if s]
    assert shown == [
        "  [hypothesis] 2 examples, 20 steps, 7 steps/s, 0 findings, 3 s; left: 57 s of 60 s",
        "  " + explorer.describe(rate=True),
        "  " + explorer.describe(rate=True),
    ]


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["--target", "local", "--gates"], "it needs --races"),
        (["--target", "model", "--races", "--gates"], "--target local with real BookKeeper"),
        (
            ["--target", "local", "--bookie-kind", "reference", "--races", "--gates"],
            "not the reference bookie",
        ),
    ],
)
def test_gates_are_refused_where_no_bookie_thread_can_be_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], why: str
) -> None:
    assert main(["run", *argv, "--seconds", "1", "--runs-dir", str(tmp_path)]) == 2
    assert why in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # refused before anything started

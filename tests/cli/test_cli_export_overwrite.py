"""`agentgym export` never replaces a file it did not write (issue 37).

The scenario that lost data: `agentgym eval ... --out eval.jsonl --record eval.agtr`, then
`agentgym export eval.agtr`, whose default output is `eval.jsonl`: the evaluation's results.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym.cli import main as cli_main
from agentgym.cli.cmd_export import written_by_export

ENV = "agentgym/Sokoban-Tiny-v0"


@pytest.fixture
def evaluated(tmp_path: Path) -> tuple[Path, Path]:
    """A real `eval --out X.jsonl --record X.agtr` run: its recording and its results."""
    results, recording = tmp_path / "eval.jsonl", tmp_path / "eval.agtr"
    code = cli_main(
        ["eval", ENV, "--policy", "oracle", "--episodes", "2", "--mode", "greedy",
         "--out", str(results), "--record", str(recording), "--no-progress"]
    )  # fmt: skip
    assert code == 0 and results.is_file() and recording.is_file()
    return recording, results


def test_export_refuses_to_replace_the_results_eval_wrote(evaluated, capsys):
    recording, results = evaluated
    before = results.read_bytes()
    assert cli_main(["export", str(recording)]) == 2
    assert results.read_bytes() == before  # not a byte changed
    err = capsys.readouterr().err
    assert str(results) in err and "-o PATH" in err and "--force" in err


def test_force_replaces_it_and_a_later_export_replaces_its_own_file(evaluated):
    recording, results = evaluated
    assert cli_main(["export", str(recording), "--force"]) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 2 and all("messages" in r for r in rows)
    # the file is an export now: exporting again (say, only successes) needs no --force
    assert cli_main(["export", str(recording), "--success-only"]) == 0
    assert len(results.read_text().splitlines()) == 2


def test_a_new_output_path_is_written_without_force(evaluated, tmp_path):
    recording, _ = evaluated
    out = tmp_path / "sft.jsonl"
    assert cli_main(["export", str(recording), "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2


_ROW = '{"episode_id": "e", "env_id": "x", "task_id": "t", "termination": "done"'


@pytest.mark.parametrize(
    ("content", "ours"),
    [
        (b"", True),  # an empty export (no episode matched the filters)
        ((_ROW + ', "tools": [], "messages": []}\n').encode(), True),
        ((_ROW + ', "messages": ["' + "x" * 200_000 + '"]}\n').encode(), True),  # a long line
        (b'{"episode_id": "e", "env_id": "x"}\n', False),  # no termination: not a summary
        (b'{"env_id": "x", "episode_id": "e", "termination": "t"}\n', False),  # another order
        (b'{"task_id": "t", "success": true}\n', False),  # eval --out's rows
        (b"\n" + _ROW.encode() + b"}\n", False),  # a blank first line, then a row
        (b" \n", False),  # blank but not empty
        (b"\x93NUMPY\x00\xff", False),  # binary
        (b"not json at all\n", False),
    ],
)
def test_written_by_export_reads_the_first_line(tmp_path, content, ours):
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    assert written_by_export(path) is ours


def test_a_directory_or_missing_file_is_not_an_export(tmp_path):
    assert written_by_export(tmp_path) is False
    assert written_by_export(tmp_path / "missing.jsonl") is False


def test_an_output_that_cannot_be_written_is_a_one_line_error(evaluated, tmp_path, capsys):
    recording, _ = evaluated
    folder = tmp_path / "a-folder"
    folder.mkdir()
    assert cli_main(["export", str(recording), "-o", str(folder)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_file_that_is_not_a_recording_is_a_one_line_error(tmp_path, capsys):
    bogus = tmp_path / "notes.agtr"
    bogus.write_bytes(b"not a trajectory file")
    assert cli_main(["export", str(bogus), "-o", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentgym export: error:") and len(err.strip().splitlines()) == 1

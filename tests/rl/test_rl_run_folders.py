"""Training folders: a second run never silently overwrites the first; resume is checked."""

import json
import os

import agentgym  # noqa: F401
from agentgym.cli import main

ENV = "agentgym/Sokoban-Tiny-v0"


def _args(out, *extra, algo="gigpo", iterations=1):
    return [
        "train",
        "--env",
        ENV,
        "--algo",
        algo,
        "--iterations",
        str(iterations),
        "--tasks",
        "1",
        "--group-size",
        "2",
        "--num-envs",
        "2",
        "--backend",
        "sync",
        "--d-model",
        "16",
        "--layers",
        "1",
        "--prompt-bytes",
        "48",
        "--max-turns",
        "2",
        "--out",
        str(out),
        "--no-progress",
        *extra,
    ]


def _tb_event_files(out):
    return [f for _, _, files in os.walk(out / "tb") for f in files if "tfevents" in f]


def test_training_again_into_a_run_folder_is_refused_and_overwrite_replaces_it(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_args(out)) == 0
    (out / "rollouts.agtr").write_bytes(b"stale")  # e.g. an earlier --record
    before = {name: (out / name).read_bytes() for name in ("checkpoint.pt", "metrics.csv")}
    capsys.readouterr()

    assert main(_args(out, iterations=2)) == 2
    err = capsys.readouterr().err
    assert "already holds a training run" in err and "--overwrite" in err and "--resume" in err
    for name, data in before.items():  # nothing was touched
        assert (out / name).read_bytes() == data

    assert main(_args(out, "--overwrite", iterations=2)) == 0
    assert not (out / "rollouts.agtr").exists()  # no stale recording of the old run
    assert len(_tb_event_files(out)) == 1  # tb/ holds this run only
    lines = (out / "metrics.csv").read_text().splitlines()
    assert len(lines) == 3  # header + the 2 iterations of the new run


def test_resume_without_a_checkpoint_is_an_error_and_creates_nothing(tmp_path, capsys):
    out = tmp_path / "nothing-here"
    assert main(_args(out, "--resume")) == 2
    assert "no checkpoint" in capsys.readouterr().err
    assert not out.exists()


def test_resume_with_another_algo_is_refused_and_keeps_config(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_args(out)) == 0
    config = (out / "config.json").read_text()
    capsys.readouterr()
    assert main(_args(out, "--resume", algo="grpo", iterations=2)) == 2
    err = capsys.readouterr().err
    assert "trained with --algo gigpo" in err and "--init" in err
    assert (out / "config.json").read_text() == config
    assert json.loads(config)["algo"] == "gigpo"


def test_resume_says_where_it_continues(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_args(out)) == 0
    capsys.readouterr()
    assert main(_args(out, "--resume", iterations=2)) == 0
    assert "resumed from iteration 1" in capsys.readouterr().out
    rows = (out / "metrics.csv").read_text().splitlines()[1:]
    assert [r.split(",")[0] for r in rows] == ["0", "1"]

"""Ctrl-C on ``agentgym train`` saves a checkpoint that ``--resume`` continues (issue 26.3).

A real SIGINT goes to a real ``agentgym train`` process once its third metrics row is on
disk (the test waits for the file, never for a guessed time). The checkpoint must hold every
finished iteration (no silent step back to the last periodic checkpoint), and ``--resume``
must go on from exactly there.
"""

from __future__ import annotations

import csv
import os
import signal
import time
from pathlib import Path

import pytest
import torch

from agentgym.algos.rundir import logged_iterations, sigint_deferred
from agentgym.cli import main
from tests.cli.test_cli_eval_interrupt import ENV, _agentgym, _interrupt


def _metric_rows(run: Path) -> list[dict[str, str]]:
    try:
        with open(run / "metrics.csv", newline="") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        return []


@pytest.mark.slow  # two training processes (~20 s)
def test_ctrl_c_on_train_saves_a_checkpoint_that_resume_continues(tmp_path, capsys):
    run = tmp_path / "run"
    common = ["--env", ENV, "--algo", "grpo", "--tasks", "1", "--group-size", "2"]
    common += ["--num-envs", "2", "--ppo-epochs", "1", "--d-model", "16", "--layers", "1"]
    common += ["--max-turns", "3", "--out", str(run), "--no-progress"]
    proc = _agentgym("train", *common, "--iterations", "100000")
    # wait for the third iteration's metrics row: past any checkpoint period of 1 or 2
    while logged_iterations(run) < 3:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    _, stderr = _interrupt(proc)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    done = logged_iterations(run)
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    assert state["iteration"] == done >= 3  # the checkpoint holds every finished iteration
    assert len(state["metrics"]) == done
    assert f"interrupted after iteration {done}" in stderr and "--resume" in stderr

    assert main(["train", *common, "--iterations", str(done + 1), "--resume"]) == 0
    assert f"resumed from iteration {done}" in capsys.readouterr().out
    rows = _metric_rows(run)
    assert [int(r["iteration"]) for r in rows] == list(range(done + 1))
    assert torch.load(run / "checkpoint.pt", weights_only=False)["iteration"] == done + 1


@pytest.mark.slow  # two training processes (~20 s)
def test_resume_after_a_hard_kill_says_which_iterations_are_trained_again(tmp_path, capsys):
    run = tmp_path / "run"
    common = ["--env", ENV, "--algo", "grpo", "--tasks", "1", "--group-size", "2"]
    common += ["--num-envs", "2", "--ppo-epochs", "1", "--d-model", "16", "--layers", "1"]
    common += ["--max-turns", "3", "--out", str(run), "--no-progress"]
    proc = _agentgym("train", *common, "--iterations", "100000")
    # past the periodic checkpoint at iteration 5, then killed without a chance to save
    while logged_iterations(run) < 6:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    logged = logged_iterations(run)
    saved = torch.load(run / "checkpoint.pt", weights_only=False)["iteration"]
    assert saved % 5 == 0 and logged > saved

    assert main(["train", *common, "--iterations", str(saved + 1), "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"resumed from iteration {saved}" in out
    assert f"metrics.csv logged {logged - saved} iteration(s) after that checkpoint" in out
    assert [int(r["iteration"]) for r in _metric_rows(run)] == list(range(saved + 1))


def test_sigint_deferred_delivers_the_interrupt_after_the_block():
    # other libraries loaded in this process may have installed their own handler
    original = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        done = []
        with pytest.raises(KeyboardInterrupt), sigint_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("finished")
        assert done == ["finished"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, original)


def test_ctrl_c_while_the_logs_are_written_lets_them_finish_then_stops(
    tmp_path, monkeypatch, capsys
):
    """Writing the logs (the curves, through matplotlib) runs whole: a Ctrl-C that arrives
    meanwhile stops the run after it, with a checkpoint of every logged iteration. (Raised
    inside matplotlib's weakref callbacks, the interrupt was printed and dropped, and a
    training run of 100000 iterations went on.)"""
    from agentgym.algos import trainer as trainer_module

    real = trainer_module.plot_curves
    calls: list[str] = []

    def plot_and_interrupt(*args, **kwargs):
        if len(calls) == 2:  # the third iteration's logs
            calls.append("interrupted")
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # a KeyboardInterrupt not held back lands here
            calls.append("went on")
        else:
            calls.append("drawn")
        return real(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "plot_curves", plot_and_interrupt)
    original = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run = tmp_path / "run"
        common = ["--env", ENV, "--algo", "grpo", "--tasks", "1", "--group-size", "2"]
        common += ["--num-envs", "2", "--ppo-epochs", "1", "--d-model", "16", "--layers", "1"]
        common += ["--max-turns", "3", "--out", str(run), "--no-progress"]
        assert main(["train", *common, "--iterations", "100000"]) == 130
    finally:
        signal.signal(signal.SIGINT, original)
    assert calls[:4] == ["drawn", "drawn", "interrupted", "went on"]
    assert "interrupted after iteration 3" in capsys.readouterr().err
    assert torch.load(run / "checkpoint.pt", weights_only=False)["iteration"] == 3
    assert logged_iterations(run) == 3

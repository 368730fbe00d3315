"""Held-out evaluation: test-split success, greedy and sampled, in the trainer's logs and curves
and from `agentgym eval`; curves keep every point from the untrained start."""

import csv
import json

import gymnasium as gym
import numpy as np
import pytest

import agentgym  # noqa: F401
from agentgym.agents import OraclePolicy, RandomPolicy
from agentgym.agents.transformer import TransformerConfig, TransformerPolicy
from agentgym.algos.curves import curve_lines
from agentgym.algos.heldout import check_splits_disjoint, heldout_eval
from agentgym.algos.trainer import TrainConfig, Trainer
from agentgym.cli import main

ENV = "agentgym/Sokoban-Tiny-v0"
TWENTY = "agentgym/UserTwentyQuestions-v0"
TINY = TransformerConfig(d_model=16, n_layers=1, max_prompt_bytes=48)


@pytest.mark.parametrize("env_id", [ENV, TWENTY, "agentgym/CodeMath-L1-v0"])
def test_train_and_test_task_ids_are_disjoint(env_id):
    check_splits_disjoint(env_id)


def test_heldout_eval_plays_only_test_split_tasks_and_ranks_oracle_over_random():
    test_ids = set(gym.make(ENV).unwrapped.task_ids("test"))
    oracle = heldout_eval(ENV, OraclePolicy(), episodes=12, num_envs=4, backend="sync")
    rand = heldout_eval(ENV, RandomPolicy(0), episodes=12, num_envs=4, backend="sync")
    assert {o.task_id for o in oracle.outcomes} <= test_ids
    assert [o.task_id for o in oracle.outcomes] == [o.task_id for o in rand.outcomes]
    assert oracle.success == 1.0 and rand.success < oracle.success


def test_greedy_eval_is_deterministic_and_restores_the_temperature():
    policy = TransformerPolicy(TINY, seed=3)
    kw = dict(episodes=6, num_envs=3, backend="sync")
    a = heldout_eval(ENV, policy, greedy=True, **kw)
    b = heldout_eval(ENV, policy, greedy=True, **kw)
    assert a.mode == "greedy" and a.rows() == b.rows()
    assert policy.config.temperature == 1.0


@pytest.mark.slow
def test_trainer_logs_heldout_success_from_step_zero_in_csv_tensorboard_and_curve(tmp_path):
    out = tmp_path / "run"
    cfg = TrainConfig(
        env_id=ENV,
        iterations=3,
        tasks_per_iter=1,
        group_size=2,
        num_envs=2,
        backend="sync",
        model=TINY,
        env_kwargs={"max_turns": 2},
        eval_every=2,
        eval_tasks=4,
        out_dir=str(out),
        progress=False,
    )
    trainer = Trainer(cfg)
    trainer.run()
    with open(out / "eval.csv") as f:
        evals = list(csv.DictReader(f))
    # before training (untrained policy at env step 0), after iteration 2, and the final one
    assert [int(r["iteration"]) for r in evals] == [0, 2, 3]
    assert int(evals[0]["env_steps"]) == 0
    for r in evals:
        assert 0.0 <= float(r["test_success"]) <= 1.0
        assert 0.0 <= float(r["test_success_greedy"]) <= 1.0
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["test_success"] != "" for r in rows] == [False, True, True]
    assert rows[1]["test_success_greedy"] == evals[1]["test_success_greedy"]

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "tb"))
    events.Reload()
    assert [e.step for e in events.Scalars("test/success_greedy")] == [
        int(r["env_steps"]) for r in evals
    ]

    # the curve: all 3 training points (no moving average swallowing them), a labelled
    # smoothing, and the held-out curve starting at the untrained policy (env step 0)
    lines = curve_lines({"gigpo": trainer.metrics}, heldout={"gigpo": trainer.evals})
    by_kind = {line.kind: line for line in lines}
    assert len(by_kind["raw"].xs) == 3 and len(by_kind["smooth"].xs) == 3
    assert "trailing mean of 3" in by_kind["smooth"].label
    assert by_kind["smooth"].ys[0] == by_kind["raw"].ys[0]
    held = [line for line in lines if line.kind == "heldout"]
    assert {line.label for line in held} == {
        "held-out test success (sampled, 4 episodes)",
        "held-out test success (greedy, 4 episodes)",
    }
    assert all(line.xs[0] == 0 and len(line.xs) == 3 for line in held)
    assert (out / "curve.png").stat().st_size > 5000


def test_curve_png_of_three_iterations_is_not_blank(tmp_path):
    from matplotlib.image import imread

    from agentgym.algos.curves import plot_curves

    rows = [{"env_steps": 10 * (i + 1), "success": s} for i, s in enumerate([0.1, 0.6, 0.3])]
    path = tmp_path / "curve.png"
    assert plot_curves({"gigpo": rows}, path, smooth=3)
    img = imread(path)[..., :3]
    # pixels in the default first colour (C0, #1f77b4): the 3 markers and the smoothing line
    c0 = np.array([0x1F, 0x77, 0xB4]) / 255
    blue = np.abs(img - c0).sum(-1) < 0.25
    cols = np.flatnonzero(blue.any(0))
    assert blue.sum() > 200 and cols.max() - cols.min() > img.shape[1] // 3


def test_cli_eval_writes_per_episode_results_and_a_summary(tmp_path, capsys):
    out = tmp_path / "res.jsonl"
    args = ["eval", ENV, "--policy", "oracle", "--episodes", "5", "--num-envs", "5"]
    assert main([*args, "--mode", "both", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "split=test" in text and "greedy" in text and "sampled" in text
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10 and {r["mode"] for r in rows} == {"greedy", "sampled"}
    assert all(r["success"] and r["task_id"].startswith("sokoban") for r in rows)

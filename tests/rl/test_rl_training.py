"""Short training runs: the loss stays finite and the agent beats random; CLI, logs, resume."""

import csv
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import agentgym  # noqa: F401
from agentgym.agents.scripted import RandomPolicy
from agentgym.agents.transformer import TransformerConfig
from agentgym.algos.trainer import TrainConfig, Trainer
from agentgym.cli import main
from agentgym.pools import EnvPool
from agentgym.rollout.groups import group_rollouts

ENV = "agentgym/Sokoban-Tiny-v0"
LEVEL = 7  # one fixed level: the agent must learn to solve it


def _success(policy, episodes=32, seed=LEVEL):
    with EnvPool([lambda: gym.make(ENV)] * 8, backend="sync") as pool:
        pool.reset(seeds=[0] * 8)
        return group_rollouts(pool, policy, [seed], group_size=episodes).success_rate()


@pytest.mark.slow
def test_short_gigpo_run_beats_random_on_a_sokoban_level():
    torch.set_num_threads(1)
    random_rate = _success(RandomPolicy(seed=0), episodes=64)
    cfg = TrainConfig(
        env_id=ENV,
        algo="gigpo",
        iterations=12,
        tasks_per_iter=2,
        group_size=8,
        task_seeds=[LEVEL],
        num_envs=16,
        backend="sync",
        lr=1e-2,
        ppo_epochs=4,
        minibatch_size=64,
        model=TransformerConfig(d_model=32, n_layers=1, max_prompt_bytes=48),
        progress=False,
    )
    trainer = Trainer(cfg)
    result = trainer.run()
    assert all(math.isfinite(m["loss"]) for m in result.metrics)
    learned = _success(result.policy)
    assert learned > random_rate + 0.2, (random_rate, learned)


def test_cli_train_writes_logs_plot_checkpoint_and_resumes(tmp_path):
    out = tmp_path / "run"
    args = [
        "train",
        "--env",
        ENV,
        "--algo",
        "tree-grpo",
        "--iterations",
        "2",
        "--tasks",
        "2",
        "--group-size",
        "2",
        "--num-envs",
        "4",
        "--backend",
        "sync",
        "--d-model",
        "16",
        "--layers",
        "1",
        "--out",
        str(out),
        "--no-progress",
        "--max-turns",
        "3",
    ]
    assert main(args) == 0
    assert (out / "checkpoint.pt").exists() and (out / "curve.png").stat().st_size > 0
    args[args.index("--iterations") + 1] = "3"
    assert main([*args, "--resume"]) == 0
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["iteration"]) for r in rows] == [0, 1, 2]
    steps = [int(r["env_steps"]) for r in rows]
    assert steps == sorted(steps) and steps[0] > 0
    assert all(np.isfinite(float(r["loss"])) for r in rows)
    # the same metrics as TensorBoard scalars, one point per iteration, against env steps
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "tb"))
    events.Reload()
    success = events.Scalars("train/success")
    assert [e.step for e in success] == steps
    assert [e.value for e in success] == pytest.approx([float(r["success"]) for r in rows])


def test_unknown_algo_and_env_are_typed_errors():
    from agentgym.error import AgentGymError

    with pytest.raises(AgentGymError):
        TrainConfig(algo="ppo").validate()
    with pytest.raises(AgentGymError):
        TrainConfig(env_id="agentgym/Nope-v0").validate()
    assert main(["train", "--env", "agentgym/Nope-v0", "--no-progress"]) == 2


@pytest.mark.parametrize("bad", ["{max_turns: 8}", "[8]"])
def test_env_kwargs_that_are_not_a_json_object_are_typed_errors(bad, capsys):
    for command in (["train", "--env", ENV], ["serve", ENV]):
        assert main([*command, "--env-kwargs", bad]) == 2
        assert "--env-kwargs must be a JSON object" in capsys.readouterr().err


def test_cli_train_records_the_trained_agent_and_the_recording_replays(tmp_path):
    from agentgym.trajectory import open as open_trajectory
    from agentgym.trajectory import replay

    out = tmp_path / "rec"
    args = [
        "train",
        "--env",
        ENV,
        "--iterations",
        "1",
        "--tasks",
        "2",
        "--group-size",
        "2",
        "--d-model",
        "16",
        "--layers",
        "1",
        "--out",
        str(out),
        "--no-progress",
        "--record",
    ]
    assert main(args) == 0
    with open_trajectory(out / "rollouts.agtr") as reader:
        episodes = list(reader.episodes())
    assert len(episodes) == 8 and all(ep.steps for ep in episodes)
    report = replay(out / "rollouts.agtr")
    assert report.ok


def test_update_skips_minibatches_of_forced_choices_and_trains_on_the_rest():
    """A row with one admissible action has a loss that depends on no weight; a minibatch
    of only such rows used to crash backward() ("does not require grad")."""
    from agentgym.agents.base import PolicyInput
    from agentgym.rollout.steps import StepRecord

    cfg = TrainConfig(
        env_id=ENV, num_envs=1, backend="sync", minibatch_size=2, ppo_epochs=1, progress=False
    )
    cfg.model = TransformerConfig(d_model=16, n_layers=1)
    trainer = Trainer(cfg)
    try:
        policy = trainer.policy

        def row(actions, traj):
            inp = PolicyInput(messages=[{"role": "user", "content": "s"}], info={})
            inp.info["admissible_actions"] = actions
            (gen,) = policy.act([inp])
            return StepRecord("g", traj, 0, "s", gen, 1.0, True, True)

        forced = [row(["only"], t) for t in range(2)]
        before = [p.detach().clone() for p in policy.model.parameters()]
        trainer.update(forced, np.array([1.0, -1.0]))  # no crash, no step
        assert all(torch.equal(a, b) for a, b in zip(before, policy.model.parameters()))
        trainer.update([row(["a", "b"], 2), row(["a", "b"], 3)], np.array([1.0, -1.0]))
        assert not all(torch.equal(a, b) for a, b in zip(before, policy.model.parameters()))
    finally:
        trainer.pool.close()

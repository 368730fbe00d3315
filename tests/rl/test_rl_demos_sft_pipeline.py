"""Demonstrations -> SFT -> RL from the SFT checkpoint -> held-out eval, end to end."""

import csv

import gymnasium as gym
import pytest
import torch

import agentgym  # noqa: F401
from agentgym.agents import NoisyPolicy, OraclePolicy
from agentgym.agents.load import load_checkpoint_state
from agentgym.agents.transformer import TransformerConfig, TransformerPolicy, prompt_text
from agentgym.algos.demos import demo_steps, record_demos
from agentgym.algos.sft import demo_generations, demo_nll
from agentgym.cli import main
from agentgym.pools import EnvPool
from agentgym.rollout.groups import group_rollouts

TWENTY = "agentgym/UserTwentyQuestions-v0"
SOKOBAN = "agentgym/Sokoban-Tiny-v0"


class _Spy:
    """Wraps a policy and keeps every input it was given."""

    def __init__(self, base):
        self.base, self.inputs = base, []

    def act(self, inputs):
        self.inputs.extend(inputs)
        return self.base.act(inputs)


def test_demo_inputs_are_exactly_what_training_rollouts_give_the_policy(tmp_path):
    path = tmp_path / "d.agtr"
    record_demos(TWENTY, path, episodes=3, epsilon=0.0, seed=5, num_envs=1)
    steps = demo_steps(path, history_turns=None)
    spy = _Spy(OraclePolicy())
    with EnvPool([lambda: gym.make(TWENTY)], backend="sync") as pool:
        pool.reset(seeds=[0])
        group_rollouts(pool, spy, [5, 6, 7], group_size=1, history_turns=None)
    assert len(steps) == len(spy.inputs) > 3
    for demo, live in zip(steps, spy.inputs):
        assert prompt_text(demo.input, "dialogue") == prompt_text(live, "dialogue")
        assert demo.input.info["admissible_actions"] == live.info["admissible_actions"]
        assert demo.action in live.info["admissible_actions"]


def test_noisy_oracle_makes_imperfect_demonstrations(tmp_path):
    clean = record_demos(TWENTY, tmp_path / "a.agtr", episodes=8, epsilon=0.0)
    noisy = record_demos(TWENTY, tmp_path / "b.agtr", episodes=8, epsilon=0.5)
    assert clean.success == 1.0 and noisy.success < 1.0
    policy = NoisyPolicy(OraclePolicy(), 1.0, seed=0)
    env = gym.make(TWENTY)
    _, info = env.reset(seed=0)
    from agentgym.agents.base import PolicyInput

    gen = policy.act([PolicyInput(messages=[], info=info, env=env.unwrapped)])[0]
    assert gen.meta["noise"] and gen.text in info["admissible_actions"]


@pytest.mark.slow
def test_demos_then_sft_then_gigpo_then_eval_end_to_end(tmp_path, capsys):
    demos, sft, rl = tmp_path / "demos.agtr", tmp_path / "sft", tmp_path / "rl"
    small = ["--d-model", "16", "--layers", "1", "--prompt-bytes", "64", "--backend", "sync"]
    assert main(["demos", SOKOBAN, "--episodes", "12", "--out", str(demos), "--quiet"]) == 0
    sft_args = ["train", "--env", SOKOBAN, "--algo", "sft", "--demos", str(demos)]
    sft_args += ["--iterations", "6", "--lr", "1e-2", "--minibatch", "16", *small]
    sft_args += ["--eval-every", "6", "--eval-tasks", "4", "--out", str(sft), "--no-progress"]
    assert main(sft_args) == 0

    # SFT lowered the demonstrations' NLL below the untrained model's (same init seed)
    state = load_checkpoint_state(sft / "checkpoint.pt")
    trained = TransformerPolicy.from_state_dict(state)
    fresh = TransformerPolicy(TransformerConfig(**state["config"]), seed=0)
    steps = demo_steps(demos)
    before = demo_nll(fresh, demo_generations(fresh, steps))
    after = demo_nll(trained, demo_generations(trained, steps))
    assert after < before - 0.05, (before, after)

    rl_args = ["train", "--env", SOKOBAN, "--algo", "gigpo", "--init", str(sft / "checkpoint.pt")]
    rl_args += ["--iterations", "2", "--tasks", "1", "--group-size", "2", "--num-envs", "2"]
    rl_args += ["--backend", "sync", "--eval-every", "2"]
    rl_args += ["--eval-tasks", "4", "--out", str(rl), "--no-progress"]
    assert main(rl_args) == 0
    assert "initialised from" in capsys.readouterr().out
    with open(sft / "eval.csv") as f:
        sft_evals = list(csv.DictReader(f))
    with open(rl / "eval.csv") as f:
        rl_evals = list(csv.DictReader(f))
    # the RL run started from the SFT weights: its first greedy held-out eval (before any RL
    # update) is the SFT run's last one (greedy play is deterministic, same test episodes)
    assert rl_evals[0]["test_success_greedy"] == sft_evals[-1]["test_success_greedy"]
    rl_state = torch.load(rl / "checkpoint.pt", weights_only=False)
    assert rl_state["train_config"]["init"] == str(sft / "checkpoint.pt")
    assert rl_state["train_config"]["model"] == state["config"]
    assert [int(r["iteration"]) for r in rl_evals] == [0, 2]
    assert int(sft_evals[-1]["iteration"]) == 6

    res = tmp_path / "res.jsonl"
    eval_args = ["eval", SOKOBAN, "--policy", "checkpoint", "--checkpoint", str(rl)]
    eval_args += ["--episodes", "4", "--mode", "greedy", "--out", str(res), "--no-progress"]
    assert main(eval_args) == 0
    assert "greedy" in capsys.readouterr().out
    assert len(res.read_text().splitlines()) == 4


def test_web_pipeline_with_element_candidates_keeps_the_view_from_demos_to_rl(tmp_path):
    """Todo clicks scored as element lines: SFT learns them, RL and eval inherit the view."""
    env_id, kinds = "agentgym/WebTodoText-v0", '{"kinds": ["delete"]}'
    demos, sft, rl = tmp_path / "demos.agtr", tmp_path / "sft", tmp_path / "rl"
    common = ["--env", env_id, "--env-kwargs", kinds, "--backend", "sync", "--no-progress"]
    assert (
        main(
            [
                "demos",
                env_id,
                "--env-kwargs",
                kinds,
                "--episodes",
                "12",
                "--epsilon",
                "0",
                "--out",
                str(demos),
            ]
        )
        == 0
    )
    sft_args = ["train", *common, "--algo", "sft", "--demos", str(demos), "--iterations", "4"]
    sft_args += ["--candidates", "element", "--d-model", "16", "--layers", "1"]
    sft_args += ["--prompt-bytes", "96", "--prompt-head-bytes", "80", "--lr", "1e-2"]
    sft_args += ["--minibatch", "16", "--out", str(sft)]
    assert main(sft_args) == 0
    state = load_checkpoint_state(sft / "checkpoint.pt")
    assert state["config"]["candidates"] == "element"
    trained = TransformerPolicy.from_state_dict(state)
    steps = demo_steps(demos)
    gens = demo_generations(trained, steps)
    # what SFT cloned is the clicked element's line, e.g. 'button "Delete: buy kelp 2"'
    assert all(g.meta["candidates"][g.meta["choice"]].startswith('button "Delete: ') for g in gens)
    fresh = TransformerPolicy(TransformerConfig(**state["config"]), seed=0)
    assert demo_nll(trained, gens) < demo_nll(fresh, demo_generations(fresh, steps)) - 0.05

    rl_args = ["train", *common, "--algo", "gigpo", "--init", str(sft / "checkpoint.pt")]
    rl_args += ["--iterations", "1", "--tasks", "1", "--group-size", "2", "--num-envs", "2"]
    rl_args += ["--eval-every", "1", "--eval-tasks", "2", "--out", str(rl)]
    assert main(rl_args) == 0
    rl_state = torch.load(rl / "checkpoint.pt", weights_only=False)
    assert rl_state["train_config"]["model"]["candidates"] == "element"

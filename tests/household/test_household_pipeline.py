"""The CPU reference-agent pipeline runs on Household-v0: demos -> SFT -> GiGPO / Tree-GRPO."""

from __future__ import annotations

import csv

import pytest

from agentgym.agents.load import load_checkpoint_state
from agentgym.agents.transformer import TransformerConfig, TransformerPolicy, prompt_text
from agentgym.algos.demos import demo_steps, record_demos
from agentgym.algos.sft import demo_generations, demo_nll
from agentgym.cli import main

ENV_ID = "agentgym/Household-v0"
SMALL = ["--d-model", "16", "--layers", "1", "--backend", "sync", "--no-progress"]
VIEW = ["--context", "dialogue", "--history-turns", "-1", "--prompt-bytes", "160"]


@pytest.mark.slow
def test_demos_sft_then_gigpo_and_tree_grpo_run_at_a_tiny_budget(tmp_path):
    demos = tmp_path / "demos.agtr"
    stats = record_demos(ENV_ID, demos, episodes=4, epsilon=0.2, seed=0, num_envs=2)
    assert stats.episodes == 4 and stats.steps >= 4
    steps = demo_steps(demos, history_turns=None)
    for step in steps:
        assert step.action in step.input.info["admissible_actions"]
        # the task line opens the conversation, so the model's prompt head holds it
        assert prompt_text(step.input, "dialogue").startswith("Your task is to: ")

    sft = tmp_path / "sft"
    args = ["train", "--env", ENV_ID, "--algo", "sft", "--demos", str(demos), "--lr", "1e-2"]
    args += ["--iterations", "3", "--minibatch", "16", "--prompt-head-bytes", "60"]
    assert main([*args, *VIEW, *SMALL, "--out", str(sft)]) == 0
    state = load_checkpoint_state(sft / "checkpoint.pt")
    trained = TransformerPolicy.from_state_dict(state)
    fresh = TransformerPolicy(TransformerConfig(**state["config"]), seed=0)
    steps = demo_steps(demos, history_turns=None)
    before = demo_nll(fresh, demo_generations(fresh, steps))
    after = demo_nll(trained, demo_generations(trained, steps))
    assert after < before - 0.05, (before, after)

    for algo in ("gigpo", "tree-grpo"):
        out = tmp_path / algo
        args = ["train", "--env", ENV_ID, "--algo", algo, "--init", str(sft / "checkpoint.pt")]
        args += ["--env-kwargs", '{"max_turns": 6}', "--iterations", "1", "--tasks", "1"]
        args += ["--group-size", "2", "--num-envs", "2", "--history-turns", "-1"]
        assert main([*args, "--backend", "sync", "--no-progress", "--out", str(out)]) == 0
        with open(out / "metrics.csv") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 1 and int(rows[0]["env_steps"]) >= 6

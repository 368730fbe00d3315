"""The interaction form's reward path on the verl versions docs/integrations/verl.md names.

verl's SGLang multi-turn rollout keeps each ``generate_response`` reward in the sample's
``reward_scores["user_turn_rewards"]``. From verl 0.6 its stock reward managers hand that
dict to the reward function as ``extra_info["rollout_reward_scores"]``; verl 0.5.0's never
do, so no reward function can see the env reward there. Each version runs in its own venv
(``--system-site-packages`` plus ``pip install --no-deps verl==X``, built once under the test
cache): an episode is played through ``AgentGymInteraction`` (on that version's
``BaseInteraction``) as the rollout calls it, and the rollout's batch goes through that
version's own ``load_reward_manager`` (naive manager, ``compute_score`` loaded from the file
path) and ``compute_reward``, as its trainer does.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.venvs import cached_venv

pytestmark = pytest.mark.slow

_SCRIPT = r"""
import asyncio, json, sys
import numpy as np, torch
from omegaconf import OmegaConf
import verl
from verl import DataProto
from verl.trainer.ppo.reward import compute_reward, load_reward_manager
import agentgym.integrations.verl as agverl
from examples.integrations.offline import char_tokenizer
from agentgym.parsing import render_tool_call

ENV = "agentgym/Sokoban-Tiny-v0"
PLAYS = {"solve": ["up", "left"], "stall": ["down", "down"]}
inter = agverl.AgentGymInteraction({"env_id": ENV})
rows = agverl.interaction_rows(ENV, [0, 0])


async def rollout(row, request_id, moves):
    # as verl's SGLang rollout calls the interaction: start, then one reply per turn
    await inter.start_interaction(request_id, **row["extra_info"]["interaction_kwargs"])
    messages, rewards = list(row["prompt"]), []
    for move in moves:
        messages.append({"role": "assistant", "content": render_tool_call("move", {"direction": move})})
        done, reply, reward, _ = await inter.generate_response(request_id, messages)
        rewards.append(reward)
        messages.append({"role": "user", "content": reply})
        if done:
            break
    return rewards


async def play():
    return [await rollout(r, k, m) for r, (k, m) in zip(rows, PLAYS.items())]


turns = asyncio.run(play())
inter.close()
n, prompt_len, response_len, lengths = 2, 4, 6, [5, 3]
mask = torch.zeros(n, prompt_len + response_len, dtype=torch.long)
mask[:, :prompt_len] = 1
for i, length in enumerate(lengths):
    mask[i, prompt_len : prompt_len + length] = 1
data = DataProto.from_dict(
    tensors={"prompts": torch.full((n, prompt_len), 5), "responses": torch.full((n, response_len), 6),
             "attention_mask": mask},
    non_tensors={
        "data_source": np.array([r["data_source"] for r in rows], dtype=object),
        "reward_model": np.array([r["reward_model"] for r in rows], dtype=object),
        "extra_info": np.array([dict(r["extra_info"]) for r in rows], dtype=object),
        "reward_scores": np.array([{"user_turn_rewards": t} for t in turns], dtype=object),
    },
)
config = OmegaConf.create({
    "reward_model": {"reward_manager": "naive"},
    "data": {"reward_fn_key": "data_source"},
    "custom_reward_function": {"path": agverl.__file__, "name": "compute_score"},
})
out = {"version": verl.__version__, "verl_file": verl.__file__, "turn_sums": [sum(t) for t in turns]}
try:
    manager = load_reward_manager(config, char_tokenizer(), num_examine=0)
    tensor, _ = compute_reward(data, manager)
    out["scores"] = [float(tensor[i, lengths[i] - 1]) for i in range(n)]
    out["totals"] = [float(tensor[i].abs().sum()) for i in range(n)]
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
print("RESULT " + json.dumps(out))
"""


def _run(version: str) -> dict:
    python = cached_venv(f"verl-{version}", [f"verl=={version}"])
    done = subprocess.run([str(python), "-c", _SCRIPT], capture_output=True, text=True, timeout=600)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, f"verl {version}: no result\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    out = json.loads(line[len("RESULT ") :])
    assert out["version"] == version and "site-packages/verl" in out["verl_file"]
    return out


def test_verl_0_6_1_stock_reward_manager_puts_the_env_reward_on_the_last_token():
    out = _run("0.6.1")
    assert "error" not in out, out
    solved, stalled = out["turn_sums"]
    assert solved > 1.0 > stalled  # the two episodes really differ
    assert out["scores"] == pytest.approx([solved, stalled], abs=1e-6)
    assert out["totals"] == pytest.approx([abs(solved), abs(stalled)], abs=1e-6)


def test_verl_0_5_0_stock_reward_manager_cannot_pass_it_and_compute_score_says_why():
    out = _run("0.5.0")
    assert "scores" not in out
    error = out["error"]
    assert error.startswith("InvalidConfigError") and "verl 0.5.0" in error
    assert "0.6" in error and "agent loop" in error

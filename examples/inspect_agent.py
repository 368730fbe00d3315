"""Watch a trained reference agent: success and its most common action paths per task.

    python examples/inspect_agent.py runs/twenty-q/gigpo-s0 --task-seeds 0 1 2 5
    python examples/inspect_agent.py runs/widgets/gigpo-s0 --task-seeds 0 1 2 3

Reads ``config.json`` (env id, env kwargs, history window) and ``checkpoint.pt`` from a
training run's folder, plays ``--episodes`` sampled episodes per task seed with the trained
policy, and prints the success rate and the three most frequent action sequences (tool
calls written compactly) for each. Useful to see *what* was learned, e.g. whether a
twenty-questions agent's guess depends on the answers it got.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import gymnasium as gym
import torch
from agentgym.wrappers.chat import observation_message

import agentgym  # noqa: F401  (registers the envs)
from agentgym.agents.base import PolicyInput
from agentgym.agents.transformer import TransformerPolicy, compact_action
from agentgym.rollout.steps import Chat


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("run", help="a training run folder (config.json + checkpoint.pt)")
    p.add_argument("--task-seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    p.add_argument("--episodes", type=int, default=20)
    args = p.parse_args()
    run = Path(args.run)
    cfg = json.loads((run / "config.json").read_text())
    state = torch.load(run / "checkpoint.pt", weights_only=False)
    policy = TransformerPolicy.from_state_dict(state["policy"])
    history = cfg.get("history_turns")
    env = gym.make(cfg["env_id"], **cfg.get("env_kwargs", {}))
    for seed in args.task_seeds:
        paths: collections.Counter[str] = collections.Counter()
        wins = 0
        for _ in range(args.episodes):
            obs, info = env.reset(seed=seed)
            task_id = info["task_id"]
            head = [{"role": "system", "content": info.get("system_prompt") or ""}]
            chat = Chat([*head, observation_message(obs)])
            steps = []
            while True:
                gen = policy.act([PolicyInput(messages=chat.messages(history), info=info)])[0]
                obs, _, terminated, truncated, info = env.step(gen.text)
                steps.append(compact_action(gen.text)[2:])
                chat.turns.append(
                    ({"role": "assistant", "content": gen.text}, observation_message(obs))
                )
                if terminated or truncated:
                    break
            wins += bool(info.get("success"))
            paths[" | ".join(steps)] += 1
        print(f"task seed {seed} ({task_id}): success {wins / args.episodes:.2f}")
        for path, n in paths.most_common(3):
            print(f"   {n:3d}x  {path[:300]}")
    env.close()


if __name__ == "__main__":
    main()

"""Train the byte-transformer agent on Sokoban with GiGPO through the Python API.

    python examples/train_sokoban.py                      # ~5 min on 2 CPU cores
    python examples/train_sokoban.py --env agentgym/Sokoban-Small-v0 --algo tree-grpo

Writes runs/sokoban-<algo>/{metrics.csv,curve.png,checkpoint.pt}. Any env id works; envs
without ``info["admissible_actions"]`` make the policy write free-form bytes instead.
GiGPO and GRPO collect through the asynchronous rollout engine (``agentgym.rollout``: no
barrier across envs, infrastructure failures kept out of the advantages); ``--lockstep``
uses the lockstep loop instead.
"""

from __future__ import annotations

import argparse

import torch

from agentgym.agents.transformer import TransformerConfig
from agentgym.algos import TrainConfig, train


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env", default="agentgym/Sokoban-Tiny-v0")
    p.add_argument("--algo", default="gigpo", choices=["gigpo", "grpo", "tree-grpo"])
    p.add_argument("--iterations", type=int, default=40)
    p.add_argument(
        "--levels", type=int, default=8, help="train on this many fixed levels (0: fresh)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="output folder (default runs/sokoban-<algo>)")
    p.add_argument(
        "--lockstep", action="store_true", help="collect with the lockstep loop, not the engine"
    )
    args = p.parse_args()
    torch.set_num_threads(1)
    cfg = TrainConfig(
        env_id=args.env,
        algo=args.algo,
        iterations=args.iterations,
        seed=args.seed,
        tasks_per_iter=4,
        group_size=8,
        num_envs=32,
        backend="sync",
        rollout_engine=args.algo != "tree-grpo" and not args.lockstep,
        lr=3e-3,
        ppo_epochs=4,
        minibatch_size=128,
        task_seeds=list(range(args.levels)) or None,
        model=TransformerConfig(d_model=32, n_layers=2, max_prompt_bytes=64),
        out_dir=args.out or f"runs/sokoban-{args.algo}",
    )
    result = train(cfg)
    first, last = result.metrics[0], result.metrics[-1]
    if cfg.rollout_engine:
        print("rollouts: asynchronous engine (agentgym.rollout)")
    print(
        f"success {first['success']:.2f} -> {last['success']:.2f} "
        f"over {last['env_steps']} env steps; see {result.out_dir}/curve.png"
    )


if __name__ == "__main__":
    main()

"""How much step-level signal GiGPO finds in an env: anchor-group sizes and what they carry.

GiGPO adds to GRPO's episode advantage a step advantage computed over *anchor groups*: the
rows of one episode group whose env state before the action is identical. Where states
never repeat, or repeat but every row in the group has the same discounted return, the step
advantage is zero and GiGPO is GRPO. This script plays the policy of a checkpoint (or a fresh
byte model) in GiGPO's own group rollouts and measures, per env:

* ``shared``: fraction of rows whose anchor group has at least 2 rows;
* ``anchor size``: mean anchor-group size, weighted by rows;
* ``A_S != 0``: fraction of rows with a non-zero step advantage;
* ``A_E != 0``: fraction of rows with a non-zero episode advantage (GRPO's only signal);
* ``|A_S| / |A_E|``: mean magnitude of the step advantage relative to the episode one.

    python examples/anchor_groups.py --env agentgym/Sokoban-Tiny-v0 --init runs/sok-sft/checkpoint.pt

Nothing is trained; the rollouts use the trainer's task seeds for ``--seed``.
"""

from __future__ import annotations

import argparse
import json

from agentgym.algos.gigpo import anchor_group_stats
from agentgym.algos.trainer import TrainConfig, Trainer


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", required=True)
    p.add_argument("--init", default=None, help="checkpoint whose policy plays (default: fresh)")
    p.add_argument("--env-kwargs", default="{}")
    p.add_argument("--iterations", type=int, default=8, help="rollout batches")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--history-turns", type=int, default=1, help="-1: the whole conversation")
    p.add_argument("--context", default="latest", choices=["latest", "dialogue"])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    cfg = TrainConfig(
        env_id=args.env,
        algo="gigpo",
        tasks_per_iter=args.tasks,
        group_size=args.group,
        seed=args.seed,
        env_kwargs=json.loads(args.env_kwargs),
        history_turns=None if args.history_turns < 0 else args.history_turns,
        num_envs=min(32, args.tasks * args.group),
        rollout_engine=True,  # the asynchronous engine (agentgym.rollout), as training uses
        init=args.init,
        progress=False,
    )
    cfg.model.context = args.context
    trainer = Trainer(cfg)
    try:
        rows = []
        for it in range(args.iterations):
            rows += trainer.rollout(it).steps
    finally:
        assert trainer.pool is not None
        trainer.pool.close()
    s = anchor_group_stats(rows, cfg.gigpo)
    print(
        f"| {args.env} | {int(s['rows'])} | {s['shared']:.2f} | {s['anchor_size']:.1f} | "
        f"{s['step_nonzero']:.2f} | {s['episode_nonzero']:.2f} | {s['step_over_episode']:.2f} |"
    )


if __name__ == "__main__":
    main()

"""``agentgym demos``: record imperfect demonstrations with the env's oracle, for SFT.

Example::

    agentgym demos agentgym/UserTwentyQuestions-v0 --episodes 256 --epsilon 0.2 --out demos.agtr
    agentgym train --env agentgym/UserTwentyQuestions-v0 --algo sft --demos demos.agtr --out runs/sft

Each step the oracle's action is replaced, with probability ``--epsilon``, by a random
admissible one, so the clone also sees mistakes and what follows them. Episodes come from
the TRAIN split (episode k is reset with seed ``--seed`` + k); held-out evaluation uses the
test split. The file is a normal trajectory file (``agentgym view demos.agtr``).
"""

from __future__ import annotations

import argparse

from agentgym.cli.args import json_object, progress_wanted


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demos",
        help="record epsilon-noisy oracle demonstrations to .agtr (for --algo sft)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id (see `agentgym list`)")
    p.add_argument("--episodes", type=int, default=64, help="episodes to record (default 64)")
    p.add_argument(
        "--epsilon",
        type=float,
        default=0.2,
        help="chance of a random admissible action at each step (default 0.2)",
    )
    p.add_argument(
        "--demonstrator",
        default="oracle",
        choices=["oracle", "observer"],
        help="oracle: the env's privileged oracle; observer: the observation-only "
        "demonstrator (Household-v0 explorer, SearchQA-v0 reader)",
    )
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed+k")
    p.add_argument("--num-envs", type=int, default=8, help="envs stepped concurrently")
    p.add_argument("--env-kwargs", default="{}", help="JSON dict passed to gym.make")
    p.add_argument("--out", required=True, help="output .agtr file")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar (none either when stderr is not a terminal)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.algos.demos import record_demos

    stats = record_demos(
        args.env_id,
        args.out,
        episodes=args.episodes,
        epsilon=args.epsilon,
        seed=args.seed,
        env_kwargs=json_object(args.env_kwargs),
        num_envs=args.num_envs,
        progress=progress_wanted(args.quiet),
        demonstrator=args.demonstrator,
    )
    print(
        f"recorded {stats.episodes} episodes ({stats.steps} steps, success {stats.success:.2f}) "
        f"to {stats.path}"
    )
    return 0

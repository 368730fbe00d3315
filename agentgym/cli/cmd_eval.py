"""``agentgym eval``: held-out success of any policy on an env's TEST split.

Examples::

    agentgym eval agentgym/Sokoban-Tiny-v0 --policy oracle --episodes 100
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy random --episodes 100
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy checkpoint --checkpoint runs/x/checkpoint.pt
    agentgym eval agentgym/Sokoban-Tiny-v0 --policy hf --model ./my-model --episodes 20

Plays ``--episodes`` episodes of ``--split`` (default ``test``: tasks disjoint from the
training split; episode k is reset with seed ``--seed`` + k), greedy and/or sampled, through
the same rollout loop as training, so a trained checkpoint sees the input it was trained on
(its history window is read from the checkpoint). Prints a summary table; ``--out`` writes
one JSON line per episode (mode, task id, seed, success, return, turns).
"""

from __future__ import annotations

import argparse
import json

from agentgym.cli.args import json_object


def add_parser(sub: argparse._SubParsersAction) -> None:
    from agentgym.agents.load import POLICY_KINDS

    p = sub.add_parser(
        "eval",
        help="held-out (test split) success of a policy or checkpoint, greedy and sampled",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("env_id", metavar="ID", help="a registered id (see `agentgym list`)")
    p.add_argument("--policy", default="checkpoint", choices=list(POLICY_KINDS))
    p.add_argument("--checkpoint", default=None, help="checkpoint.pt (or its run folder)")
    p.add_argument("--model", default=None, help="--policy hf: a local transformers folder")
    p.add_argument("--epsilon", type=float, default=0.2, help="--policy noisy-oracle: noise")
    p.add_argument("--episodes", type=int, default=100, help="held-out episodes per mode")
    p.add_argument("--split", choices=["train", "test"], default="test")
    p.add_argument(
        "--mode",
        choices=["both", "greedy", "sampled"],
        default="both",
        help="greedy (temperature 0), sampled, or both (default)",
    )
    p.add_argument(
        "--history-turns",
        type=int,
        default=None,
        help="turn pairs of history in the input (-1: all; default: the checkpoint's, else 1)",
    )
    p.add_argument("--env-kwargs", default=None, help="JSON dict passed to gym.make")
    p.add_argument("--seed", type=int, default=0, help="episode k is reset with seed+k")
    p.add_argument("--num-envs", type=int, default=16, help="envs stepped concurrently")
    p.add_argument("--device", default="cpu", help="cpu or cuda (learned policies)")
    p.add_argument(
        "--max-new-tokens", type=int, default=256, help="--policy hf: generation budget per turn"
    )
    p.add_argument("--out", default=None, help="per-episode results, JSON lines")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def _checkpoint_settings(path: str | None) -> dict:
    """The training config stored in a checkpoint (empty for older ones or none)."""
    if not path:
        return {}
    from agentgym.agents.load import read_checkpoint

    return dict(read_checkpoint(path).get("train_config") or {})


def run(args: argparse.Namespace) -> int:
    from agentgym.agents.load import load_policy
    from agentgym.rl.heldout import heldout_eval

    trained = _checkpoint_settings(args.checkpoint) if args.policy == "checkpoint" else {}
    if args.history_turns is not None:
        history = None if args.history_turns < 0 else args.history_turns
    else:
        history = trained.get("history_turns", 1)
    env_kwargs = (
        json_object(args.env_kwargs)
        if args.env_kwargs is not None
        else {k: v for k, v in (trained.get("env_kwargs") or {}).items() if k != "split"}
    )
    policy = load_policy(
        args.policy,
        checkpoint=args.checkpoint,
        model=args.model,
        epsilon=args.epsilon,
        seed=args.seed,
        device=args.device,
        max_new_tokens=args.max_new_tokens,
    )
    modes = ["greedy", "sampled"] if args.mode == "both" else [args.mode]
    results = [
        heldout_eval(
            args.env_id,
            policy,
            episodes=args.episodes,
            split=args.split,
            greedy=mode == "greedy",
            env_kwargs=env_kwargs,
            history_turns=history,
            num_envs=args.num_envs,
            seed=args.seed,
            progress=not args.no_progress,
        )
        for mode in modes
    ]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            for res in results:
                for row in res.rows():
                    fh.write(json.dumps(row) + "\n")
    name = (
        args.policy
        if args.policy not in ("checkpoint", "hf")
        else (args.checkpoint if args.policy == "checkpoint" else args.model)
    )
    print(f"{results[0].env_id}  split={args.split}  policy={name}")
    print(f"{'mode':<8} {'episodes':>8} {'success':>8} {'+-se':>6} {'return':>8} {'turns':>6}")
    for res in results:
        turns = sum(o.turns for o in res.outcomes) / max(1, len(res.outcomes))
        print(
            f"{res.mode:<8} {len(res.outcomes):>8} {res.success:>8.3f} {res.stderr:>6.3f} "
            f"{res.return_mean:>8.3f} {turns:>6.1f}"
        )
    if args.out:
        print(f"per-episode results: {args.out}")
    return 0

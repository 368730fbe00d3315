"""``agentgym train``: train the reference byte-transformer agent (GiGPO, GRPO, Tree-GRPO, SFT).

Examples::

    agentgym train --env agentgym/Sokoban-Tiny-v0 --algo gigpo --iterations 30 --out runs/tiny
    agentgym demos agentgym/Sokoban-Tiny-v0 --episodes 64 --epsilon 0.2 --out demos.agtr
    agentgym train --env agentgym/Sokoban-Tiny-v0 --algo sft --demos demos.agtr --out runs/sft
    agentgym train --env agentgym/Sokoban-Tiny-v0 --algo gigpo --init runs/sft/checkpoint.pt \
        --eval-every 5 --out runs/sft-gigpo

Writes ``metrics.csv``, ``eval.csv`` (held-out test success), ``tb/`` (TensorBoard),
``curve.png``, ``config.json`` and ``checkpoint.pt`` to ``--out``. A folder that already
holds a run is refused: ``--resume`` continues it, ``--overwrite`` replaces it. Ctrl-C saves
a checkpoint at the last finished iteration (exit 130); ``--resume`` goes on from there.
"""

from __future__ import annotations

import argparse
import sys

from agentgym.cli.args import check_device, check_env_args, json_object, progress_wanted


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train the reference agent (GiGPO / GRPO / Tree-GRPO)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--env", required=True, help="env id, e.g. agentgym/Sokoban-Tiny-v0")
    p.add_argument(
        "--algo",
        default="gigpo",
        choices=["gigpo", "grpo", "tree-grpo", "sft"],
        help="RL algorithm, or sft to clone --demos",
    )
    p.add_argument(
        "--policy",
        default="byte",
        choices=["byte", "hf"],
        help="byte: the byte transformer; hf: a local transformers model (--model PATH)",
    )
    p.add_argument("--model", default=None, help="--policy hf: a local transformers folder")
    p.add_argument(
        "--max-new-tokens", type=int, default=256, help="--policy hf: generation budget per turn"
    )
    p.add_argument("--demos", default=None, help="sft: .agtr demonstrations (agentgym demos)")
    p.add_argument(
        "--demos-only-success",
        action="store_true",
        help="sft: clone only the demonstration episodes that succeeded",
    )
    p.add_argument(
        "--init",
        default=None,
        metavar="CHECKPOINT",
        help="start from this checkpoint's policy (e.g. the sft run's checkpoint.pt)",
    )
    p.add_argument("--iterations", type=int, default=20, help="training iterations")
    p.add_argument("--max-env-steps", type=int, default=None, help="stop at this env-step budget")
    p.add_argument("--tasks", type=int, default=4, help="task seeds per iteration")
    p.add_argument("--group-size", type=int, default=8, help="chains per task (GRPO/GiGPO)")
    p.add_argument("--trees", type=int, default=2, help="Tree-GRPO: trees per task (M)")
    p.add_argument("--expand", type=int, default=2, help="Tree-GRPO: nodes expanded per round (N)")
    p.add_argument("--rounds", type=int, default=1, help="Tree-GRPO: expansion rounds (L)")
    p.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate")
    p.add_argument("--ppo-epochs", type=int, default=4, help="passes over each iteration's rows")
    p.add_argument("--minibatch", type=int, default=128, help="rows per gradient step")
    p.add_argument("--kl-coef", type=float, default=0.0, help="KL to the initial policy")
    p.add_argument("--omega", type=float, default=1.0, help="GiGPO step-advantage weight")
    p.add_argument("--gamma", type=float, default=0.95, help="GiGPO discount")
    p.add_argument("--d-model", type=int, default=32, help="byte transformer width")
    p.add_argument("--prompt-bytes", type=int, default=160, help="prompt tail the byte model reads")
    p.add_argument(
        "--prompt-head-bytes",
        type=int,
        default=0,
        help="of --prompt-bytes, how many come from the text's start (e.g. a page's task line)",
    )
    p.add_argument("--layers", type=int, default=2, help="byte transformer layers")
    p.add_argument(
        "--context",
        default="latest",
        choices=["latest", "dialogue"],
        help="what the model reads: the latest observation, or the whole conversation",
    )
    p.add_argument(
        "--candidates",
        default="action",
        choices=["action", "element"],
        help="how the byte model sees a choice: the action, or (web) the clicked element's line",
    )
    p.add_argument(
        "--history-turns",
        type=int,
        default=1,
        help="turn pairs of history in the policy's input (-1: all)",
    )
    p.add_argument("--max-turns", type=int, default=None, help="override the env's turn budget")
    p.add_argument("--num-envs", type=int, default=32, help="env pool size")
    p.add_argument(
        "--task-seeds",
        type=int,
        nargs="*",
        default=None,
        help="train on these task seeds only (default: fresh tasks each iteration)",
    )
    p.add_argument(
        "--backend",
        default="thread",
        choices=["thread", "process", "sync"],
        help="how the env pool steps its envs",
    )
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--seed", type=int, default=0, help="seed of the model, sampling and tasks")
    p.add_argument(
        "--eval-every",
        type=int,
        default=0,
        help="held-out test-split eval before training and every K iterations (0: off)",
    )
    p.add_argument("--eval-tasks", type=int, default=32, help="held-out episodes per eval")
    p.add_argument("--env-kwargs", default="{}", help="JSON dict passed to gym.make")
    p.add_argument("--out", default=None, help="output folder (metrics, plot, checkpoint)")
    p.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="delete the run already in --out and start again",
    )
    p.add_argument(
        "--record",
        action="store_true",
        help="after training, record episodes of the trained agent to OUT/rollouts.agtr",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from agentgym.agents.transformer import TransformerConfig
    from agentgym.rl.gigpo import GiGPOConfig
    from agentgym.rl.losses import PPOLossConfig
    from agentgym.rl.trainer import TrainConfig, Trainer
    from agentgym.rl.tree_grpo import TreeGRPOConfig

    env_kwargs = json_object(args.env_kwargs)
    if args.max_turns is not None:
        env_kwargs["max_turns"] = args.max_turns
    check_env_args(args.env, env_kwargs, "train")  # typed errors before any env is built
    check_device(args.device)
    cfg = TrainConfig(
        env_id=args.env,
        algo=args.algo,
        iterations=args.iterations,
        max_env_steps=args.max_env_steps,
        tasks_per_iter=args.tasks,
        group_size=args.group_size,
        seed=args.seed,
        env_kwargs=env_kwargs,
        num_envs=args.num_envs,
        backend=args.backend,
        lr=args.lr,
        minibatch_size=args.minibatch,
        task_seeds=args.task_seeds,
        ppo_epochs=args.ppo_epochs,
        device=args.device,
        policy=args.policy,
        hf_model=args.model,
        max_new_tokens=args.max_new_tokens,
        model=TransformerConfig(
            d_model=args.d_model,
            n_layers=args.layers,
            max_prompt_bytes=args.prompt_bytes,
            prompt_head_bytes=args.prompt_head_bytes,
            context=args.context,
            candidates=args.candidates,
        ),
        history_turns=None if args.history_turns < 0 else args.history_turns,
        loss=PPOLossConfig(kl_coef=args.kl_coef),
        gigpo=GiGPOConfig(gamma=args.gamma, omega=args.omega),
        tree=TreeGRPOConfig(trees=args.trees, expand=args.expand, rounds=args.rounds),
        eval_every=args.eval_every,
        eval_tasks=args.eval_tasks,
        demos=args.demos,
        demos_only_success=args.demos_only_success,
        init=args.init,
        out_dir=args.out,
        resume=args.resume,
        overwrite=args.overwrite,
        progress=progress_wanted(args.no_progress),
        record=args.record,
    )
    trainer = Trainer(cfg)
    if trainer.resumed_from is not None:
        print(f"resumed from iteration {trainer.resumed_from} ({args.out}/checkpoint.pt)")
        if trainer.lost_iterations:
            print(
                f"note: metrics.csv logged {trainer.lost_iterations} iteration(s) after that "
                "checkpoint (the run was killed before saving them); they are trained again"
            )
    if cfg.init:
        print(f"initialised from {cfg.init}")
    try:
        result = trainer.run()
    except KeyboardInterrupt:
        if args.out:
            print(
                f"interrupted after iteration {trainer.iteration}: checkpoint saved to "
                f"{args.out}/checkpoint.pt; continue with the same command and --resume",
                file=sys.stderr,
            )
        else:
            print(f"interrupted after iteration {trainer.iteration} (no --out: nothing saved)",
                  file=sys.stderr)  # fmt: skip
        return 130
    last = result.metrics[-1] if result.metrics else {}
    if cfg.algo == "sft":
        nll = last.get("demo_nll", float("nan"))
        print(f"trained {len(result.metrics)} sft epochs; demo NLL {nll:.4f}")
    else:
        print(
            f"trained {len(result.metrics)} iterations, {last.get('env_steps', 0)} env steps; "
            f"last training-rollout success {last.get('success', 0):.2f}"
        )
    if trainer.evals:
        ev = trainer.evals[-1]
        print(
            f"held-out test success ({ev['test_episodes']} episodes): "
            f"sampled {ev['test_success']:.3f}, greedy {ev['test_success_greedy']:.3f}"
        )
    if result.out_dir:
        print(f"metrics: {result.out_dir / 'metrics.csv'}  plot: {result.out_dir / 'curve.png'}")
    return 0

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

The options are the fields of ``agentgym.algos.TrainConfig``, with its defaults and docs: no
options trains ``TrainConfig()``. A nested setting is ``--loss.clip-low``; ``--d-model``,
``--layers`` and ``--context`` set both the byte (``--model.*``) and word (``--word.*``) model.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from agentgym.cli.args import check_device, check_env_args, progress_wanted
from agentgym.cli.from_config import ConfigFlags, Flag, Shared, add_deferred

if TYPE_CHECKING:
    from agentgym.algos.trainer import TrainConfig

CONTEXTS = ("latest", "dialogue")

#: Where a flag differs from the generated ``--field-name``: the names earlier versions had
#: (commands in the docs and benchmarks keep working), and help or choices for fields of
#: nested configs whose classes leave them out.
FLAGS = {
    "env_id": Flag("--env", metavar="ID"),
    "tasks_per_iter": Flag("--tasks"),
    "minibatch_size": Flag("--minibatch"),
    "history_turns": Flag(none=("-1",)),
    "hf_model": Flag("--model", metavar="PATH"),
    "demos": Flag(metavar="FILE"),
    "init": Flag(metavar="CHECKPOINT"),
    "out_dir": Flag("--out", metavar="DIR"),
    "model.max_prompt_bytes": Flag("--prompt-bytes"),
    "model.prompt_head_bytes": Flag("--prompt-head-bytes"),
    "model.context": Flag(choices=CONTEXTS),
    "model.candidates": Flag("--candidates", choices=("action", "element")),
    "word.d_model": Flag(help="Width of the word transformer's residual stream."),
    "word.n_layers": Flag(help="Blocks of the word transformer."),
    "word.n_heads": Flag(help="Attention heads per block of the word transformer."),
    "word.max_tokens": Flag("--context-tokens"),
    "word.context": Flag(choices=CONTEXTS),
    "word.latest_feature": Flag("--latest-feature"),
    "loss.kl_coef": Flag("--kl-coef"),
    "grpo.mode": Flag(choices=("mean_std_norm", "mean_norm")),
    "gigpo.gamma": Flag("--gamma"),
    "gigpo.omega": Flag("--omega"),
    "gigpo.mode": Flag(choices=("mean_norm", "mean_std_norm")),
    "gigpo.episode_stats": Flag(choices=("rows", "trajectories")),
    "gigpo.penalty_timing": Flag(choices=("after", "before")),
    "gigpo.eps": Flag(help="Added to the standard deviations."),
    "tree.trees": Flag("--trees"),
    "tree.expand": Flag("--expand"),
    "tree.rounds": Flag("--rounds"),
    "tree.eps": Flag(help="Added to the standard deviations."),
}

#: One flag for the same setting of both reference models (``--policy byte`` or ``word``).
SHARED = (
    Shared("--d-model", ("model.d_model", "word.d_model")),
    Shared("--layers", ("model.n_layers", "word.n_layers")),
    Shared("--context", ("model.context", "word.context")),
)


def config_flags() -> ConfigFlags[TrainConfig]:
    """The flags of :class:`~agentgym.algos.trainer.TrainConfig` (the one source of defaults)."""
    from agentgym.algos.trainer import TrainConfig

    return ConfigFlags(TrainConfig, FLAGS, SHARED)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train the reference agent (GiGPO / GRPO / Tree-GRPO)",
        description=__doc__,
        usage="%(prog)s [--env ID] [--algo ALGO] [OPTIONS]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_deferred(p, config_flags, "train")
    p.add_argument(
        "--max-turns",
        type=int,
        default=None,
        help="override the env's turn budget (sets max_turns in --env-kwargs)",
    )
    p.set_defaults(func=run)


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The :class:`TrainConfig` the parsed flags describe (no flags: ``TrainConfig()``)."""
    cfg = config_flags().config(args)
    if getattr(args, "max_turns", None) is not None:
        cfg.env_kwargs["max_turns"] = args.max_turns
    return cfg


def run(args: argparse.Namespace) -> int:
    from agentgym.algos.trainer import Trainer

    cfg = train_config(args)
    check_env_args(cfg.env_id, cfg.env_kwargs, "train")  # typed errors before any env is built
    check_device(cfg.device)
    if cfg.policy != "hf":  # byte and word choose among admissible actions: say if none
        from agentgym.cli.cmd_check import admissible_actions_warning

        if note := admissible_actions_warning(cfg.env_id, cfg.env_kwargs):
            print(note, file=sys.stderr)
    cfg.progress = progress_wanted(not cfg.progress)  # no bar in a redirected stderr
    trainer = Trainer(cfg)
    if trainer.resumed_from is not None:
        print(f"resumed from iteration {trainer.resumed_from} ({cfg.out_dir}/checkpoint.pt)")
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
        if cfg.out_dir:
            print(
                f"interrupted after iteration {trainer.iteration}: checkpoint saved to "
                f"{cfg.out_dir}/checkpoint.pt; continue with the same command and --resume",
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

"""Compare GiGPO, GRPO and Tree-GRPO at the same env-step budget, over several seeds.

Runs every (algorithm, seed) pair as its own process (each single-threaded torch), writes
each run's metrics under ``--out``, then a learning-curve PNG (mean and min-max band over
seeds) and a markdown table of start / final success per algorithm.

    python examples/train_compare.py --env agentgym/Sokoban-Tiny-v0 \
        --algos gigpo grpo tree-grpo --seeds 0 1 2 --budget 6000 --out runs/compare

Works for any registered env id (web, simulated users, ...): pass ``--env``. With
``--eval-every K`` every run is evaluated on the env's held-out TEST split (greedy and
sampled) before training and every K iterations; the table and the plot then report
held-out success, the headline metric. ``--init CHECKPOINT`` starts every run from one
checkpoint (e.g. an SFT run's), for demonstrations-then-RL comparisons.
"""

from __future__ import annotations

import argparse
import csv
import json
import multiprocessing as mp
from pathlib import Path

import numpy as np


def _one(job: dict) -> str:
    import torch

    torch.set_num_threads(1)
    from agentgym.agents.transformer import TransformerConfig
    from agentgym.algos.trainer import TrainConfig, train

    cfg = TrainConfig(
        env_id=job["env"],
        algo=job["algo"],
        seed=job["seed"],
        iterations=10_000,
        max_env_steps=job["budget"],
        tasks_per_iter=job["tasks"],
        group_size=job["group"],
        env_kwargs=job["env_kwargs"],
        num_envs=job["tasks"] * job["group"],
        backend="sync",
        lr=job["lr"],
        ppo_epochs=job["epochs"],
        minibatch_size=job["minibatch"],
        model=TransformerConfig(
            d_model=job["d_model"],
            n_layers=job["layers"],
            max_prompt_bytes=job["prompt_bytes"],
            prompt_head_bytes=job["prompt_head_bytes"],
            context=job["context"],
            candidates=job["candidates"],
        ),
        history_turns=None if job["history_turns"] < 0 else job["history_turns"],
        out_dir=job["out"],
        progress=False,
        checkpoint_every=1000,
        task_seeds=job["task_seeds"],
        eval_every=job["eval_every"],
        eval_tasks=job["eval_tasks"],
        init=job["init"],
        overwrite=job["overwrite"],
    )
    # Tree-GRPO: M=2 trees, N=2 expansions, L=1 round -> 6 leaves per task; use group/2 tasks'
    # worth of trees so its batch is about as many leaves as the chains of the others
    cfg.tree.trees, cfg.tree.expand, cfg.tree.rounds = 2, 2, 1
    cfg.loss.kl_coef = job["kl_coef"]
    train(cfg)
    return job["out"]


def _read(path: Path, name: str = "metrics.csv") -> list[dict]:
    if not (path / name).exists():
        return []
    with open(path / name) as f:
        return list(csv.DictReader(f))


def _mean_std(values: list[float]) -> str:
    return f"{np.mean(values):.3f} ± {np.std(values):.3f}" if values else "-"


def summarise(out: Path, algos: list[str], seeds: list[int], env: str, budget: int) -> str:
    from agentgym.algos.trainer import plot_curves

    runs = {
        a: [_read(out / f"{a}-s{s}") for s in seeds if (out / f"{a}-s{s}" / "metrics.csv").exists()]
        for a in algos
    }
    evals = {
        a: [e for e in (_read(out / f"{a}-s{s}", "eval.csv") for s in seeds) if e] for a in algos
    }
    png = out / "curve.png"
    plot_curves(
        {a: r for a, r in runs.items() if r},
        png,
        title=f"{env}: success vs env steps",
        heldout={a: e for a, e in evals.items() if e} or None,
    )
    lines = [
        f"Env `{env}`, budget {budget} env steps, seeds {seeds}. Success = fraction of "
        "the iteration's rollout episodes solved.",
        "",
        "| algo | runs | rollouts in budget (episodes or tree leaves) | first-5-iter success | last-10-iter success | env steps |",
        "|---|---|---|---|---|---|",
    ]
    for a, rs in runs.items():
        if not rs:
            continue
        first = [np.mean([float(x["success"]) for x in r[:5]]) for r in rs]
        last = [np.mean([float(x["success"]) for x in r[-10:]]) for r in rs]
        eps = np.mean([sum(float(x["episodes"]) for x in r) for r in rs])
        steps = np.mean([float(r[-1]["env_steps"]) for r in rs])
        lines.append(
            f"| {a} | {len(rs)} | {eps:.0f} | {np.mean(first):.3f} ± {np.std(first):.3f} "
            f"| {np.mean(last):.3f} ± {np.std(last):.3f} | {steps:.0f} |"
        )
    if any(evals.values()):
        lines += [
            "",
            "Held-out TEST-split success (mean ± std over seeds): at env step 0 (the starting "
            "policy) and at the end.",
            "",
            "| algo | runs | start greedy | start sampled | final greedy | final sampled |",
            "|---|---|---|---|---|---|",
        ]
        for a, es in evals.items():
            if not es:
                continue
            cells = [
                _mean_std([float(e[i][key]) for e in es])
                for i in (0, -1)
                for key in ("test_success_greedy", "test_success")
            ]
            lines.append(f"| {a} | {len(es)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--env", default="agentgym/Sokoban-Tiny-v0")
    p.add_argument("--algos", nargs="+", default=["gigpo", "grpo"])
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--budget", type=int, default=20000, help="env steps per run")
    p.add_argument("--tasks", type=int, default=4)
    p.add_argument("--group", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument(
        "--kl-coef", type=float, default=0.0, help="KL towards the starting (e.g. SFT) policy"
    )
    p.add_argument("--minibatch", type=int, default=128)
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--prompt-bytes", type=int, default=64)
    p.add_argument("--prompt-head-bytes", type=int, default=0)
    p.add_argument("--context", default="latest", choices=["latest", "dialogue"])
    p.add_argument(
        "--candidates",
        default="action",
        choices=["action", "element"],
        help="element: web clicks shown as the clicked element's line",
    )
    p.add_argument("--history-turns", type=int, default=1, help="-1: the whole conversation")
    p.add_argument("--env-kwargs", default="{}")
    p.add_argument(
        "--task-seeds",
        nargs="*",
        type=int,
        default=None,
        help="train on these task seeds only (default: fresh tasks every iteration)",
    )
    p.add_argument("--eval-every", type=int, default=0, help="held-out eval period (0: off)")
    p.add_argument("--eval-tasks", type=int, default=100, help="held-out episodes per eval")
    p.add_argument("--init", default=None, help="start every run from this checkpoint")
    p.add_argument("--overwrite", action="store_true", help="replace runs already in --out")
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--out", default="runs/compare")
    p.add_argument("--summary-only", action="store_true")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.summary_only:
        jobs = [
            dict(
                env=args.env,
                algo=a,
                seed=s,
                budget=args.budget,
                tasks=args.tasks,
                group=args.group,
                lr=args.lr,
                epochs=args.epochs,
                kl_coef=args.kl_coef,
                minibatch=args.minibatch,
                d_model=args.d_model,
                layers=args.layers,
                prompt_bytes=args.prompt_bytes,
                prompt_head_bytes=args.prompt_head_bytes,
                context=args.context,
                candidates=args.candidates,
                history_turns=args.history_turns,
                env_kwargs=json.loads(args.env_kwargs),
                out=str(out / f"{a}-s{s}"),
                task_seeds=args.task_seeds,
                eval_every=args.eval_every,
                eval_tasks=args.eval_tasks,
                init=args.init,
                overwrite=args.overwrite,
            )
            for s in args.seeds
            for a in args.algos
        ]
        with mp.get_context("spawn").Pool(args.workers) as pool:
            for done in pool.imap_unordered(_one, jobs):
                print("done", done, flush=True)
    table = summarise(out, args.algos, args.seeds, args.env, args.budget)
    (out / "summary.md").write_text(table + "\n")
    print(table)
    print(f"plot: {out / 'curve.png'}")


if __name__ == "__main__":
    main()

"""The learning table under a sound protocol: demos -> SFT -> GiGPO / GRPO / Tree-GRPO.

One env, end to end, one process at a time (torch single-threaded), resumable: every stage
writes its result file and a rerun skips what exists. The protocol:

1. noisy-oracle demonstrations for each demonstration seed, and an SFT start per seed;
2. three disjoint sets of DISTINCT tasks (no task played twice): ``valid`` (from the
   ``valid`` split, for choosing hyperparameters), the table set and the re-evaluation set
   (both from the unseen ``test`` split, disjoint from each other);
3. the learning rate of each algorithm chosen on the valid set only: one run per
   (algorithm, lr) from demonstration seed 0, RL seed 0, scored on valid;
4. every (demonstration seed x RL seed) run of every algorithm from its SFT start at the
   same env-step budget with the chosen lr (the sweep's run is reused where it matches);
5. start (the SFT checkpoint) and final policies played greedy and sampled on the table
   set and on the re-evaluation set; standard errors over runs, paired differences (start
   vs final on the same tasks); GiGPO's share of rows with a non-zero step advantage.

Writes ``results.json`` (every number, per task), ``table.md`` and ``curve.png`` (training
rollout success vs env steps, mean and SE band over runs) under ``--out``.

    python examples/learning_protocol.py --env household --out runs/learning/household
    python examples/learning_protocol.py --env search --out runs/learning/search
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ALGOS = ("gigpo", "grpo", "tree-grpo", "tree-grpo-q")
#: Run label -> (trainer algorithm, share of the chains' env-step budget). ``tree-grpo-q`` is
#: Tree-GRPO at a quarter of the chains' budget, the comparison of the Tree-GRPO paper.
#: Run-by-run comparisons (same demonstration and RL seeds, same tasks).
COMPARISONS = (("gigpo", "grpo"), ("tree-grpo", "grpo"), ("tree-grpo-q", "grpo"))
RUNS = {
    "gigpo": ("gigpo", 1.0),
    "grpo": ("grpo", 1.0),
    "tree-grpo": ("tree-grpo", 1.0),
    "tree-grpo-q": ("tree-grpo", 0.25),
}

#: Per env: id, env kwargs and the byte model's view (as in docs/household.md, docs/search.md).
PRESETS: dict[str, dict[str, Any]] = {
    "household": dict(
        env="agentgym/Household-v0",
        env_kwargs={"max_turns": 20},
        context="dialogue",
        history_turns=None,
        prompt_bytes=320,
        prompt_head_bytes=80,
        test_name="test_unseen",
    ),
    "search": dict(
        env="agentgym/SearchQA-v0",
        env_kwargs={},
        context="dialogue",
        history_turns=1,
        prompt_bytes=512,
        prompt_head_bytes=128,
        test_name="test",
    ),
}


@dataclass
class Protocol:
    """The sizes of one protocol run (all of them in ``results.json``)."""

    env: str
    demo_seeds: list[int] = field(default_factory=lambda: [0, 1])
    rl_seeds: list[int] = field(default_factory=lambda: [0, 1])
    demo_episodes: int = 64
    epsilon: float = 0.2
    sft_epochs: int = 8
    sft_lr: float = 3e-3
    d_model: int = 16
    layers: int = 1
    budget: int = 1000
    """Env steps per RL run."""
    tasks: int = 2
    group: int = 4
    epochs: int = 2
    minibatch: int = 64
    kl_coef: float = 0.05
    lr_grid: list[float] = field(default_factory=lambda: [1e-3, 3e-4])
    valid_tasks: int = 40
    test_tasks: int = 100
    reeval_tasks: int = 100
    max_turns: int = 0
    """Episode turn limit for training and evaluation (0: the preset's)."""
    policy: str = "byte"
    """``byte`` (the byte transformer) or ``word`` (the word transformer, whole episode)."""
    demonstrator: str = "oracle"
    """``oracle`` (privileged, noisy) or ``observer`` (observation-only, noisy)."""
    relabel: bool = False
    """SFT labels every demonstrated step with the observer's choice there."""
    heads: int = 4
    sft_minibatch: int = 0
    """Rows per SFT gradient step (0: ``minibatch``)."""
    context_tokens: int = 1024
    """``word``: the window in words."""
    latest_feature: bool = False
    """``word``: mark candidate tokens that occur in the latest observation."""
    algos: list[str] = field(default_factory=lambda: ["gigpo", "grpo", "tree-grpo"])
    """Run labels (see :data:`RUNS`); ``tree-grpo-q`` adds Tree-GRPO at a quarter budget."""


# ---- one process, one thing at a time -------------------------------------------------------


def _preset(p: Protocol) -> dict[str, Any]:
    pre = dict(PRESETS[p.env])
    if p.max_turns:
        pre["env_kwargs"] = {**pre["env_kwargs"], "max_turns": p.max_turns}
    return pre


def _done(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.exists() else None


def _save(path: Path, data: Any) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def _history(p: Protocol) -> int | None:
    """Turn pairs the policy reads: the word policy reads the whole episode."""
    return None if p.policy == "word" else _preset(p)["history_turns"]


def _model(p: Protocol) -> Any:
    from agentgym.agents.transformer import TransformerConfig
    from agentgym.agents.wordmodel import WordConfig

    pre = _preset(p)
    if p.policy == "word":
        return WordConfig(
            d_model=p.d_model,
            n_layers=p.layers,
            n_heads=p.heads,
            max_tokens=p.context_tokens,
            context=pre["context"],
            latest_feature=p.latest_feature,
        )
    return TransformerConfig(
        d_model=p.d_model,
        n_layers=p.layers,
        max_prompt_bytes=pre["prompt_bytes"],
        prompt_head_bytes=pre["prompt_head_bytes"],
        context=pre["context"],
    )


def demos_and_sft(p: Protocol, out: Path, demo_seed: int) -> Path:
    """The SFT start of one demonstration seed (demos recorded on the train split)."""
    from agentgym.algos.demos import record_demos
    from agentgym.algos.trainer import TrainConfig, train

    pre = _preset(p)
    sft = out / f"sft-d{demo_seed}"
    marker = sft / "done.json"
    if marker.exists():
        return sft / "checkpoint.pt"
    t0 = time.perf_counter()
    demos = out / f"demos-d{demo_seed}.agtr"
    recorded = out / f"demos-d{demo_seed}.json"
    if _done(recorded) is None:
        stats = record_demos(
            pre["env"],
            demos,
            episodes=p.demo_episodes,
            epsilon=p.epsilon,
            # far from the RL runs' task seeds (1_000_003 * seed + ...), distinct per demo seed
            seed=500_000 + 10_000 * demo_seed,
            env_kwargs=pre["env_kwargs"],
            num_envs=8,
            demonstrator=p.demonstrator,
        )
        _save(recorded, stats.__dict__)
    stats_d = _done(recorded)
    assert stats_d is not None
    t1 = time.perf_counter()
    resume = (sft / "checkpoint.pt").exists()  # a killed SFT run goes on from its last epoch
    cfg = TrainConfig(
        env_id=pre["env"],
        algo="sft",
        demos=str(demos),
        iterations=p.sft_epochs,
        seed=demo_seed,
        lr=p.sft_lr,
        minibatch_size=p.sft_minibatch or p.minibatch,
        history_turns=_history(p),
        policy=p.policy,
        demos_relabel=p.relabel,
        out_dir=str(sft),
        progress=False,
        checkpoint_every=1,
        overwrite=not resume,
        resume=resume,
        demo_nll_every=1 if p.policy == "byte" else 1000,
    )
    if p.policy == "word":
        cfg.word = _model(p)
    else:
        cfg.model = _model(p)
    train(cfg)
    _save(
        marker,
        {
            "demo_episodes": stats_d["episodes"],
            "demo_steps": stats_d["steps"],
            "demo_success": stats_d["success"],
            "demos_s": t1 - t0,
            "sft_s": time.perf_counter() - t1,
        },
    )
    return sft / "checkpoint.pt"


def _trainer_class() -> Any:
    """A Trainer that also records GiGPO's anchor statistics of every batch."""
    from agentgym.algos.gigpo import anchor_group_stats
    from agentgym.algos.trainer import Trainer

    class AnchorTrainer(Trainer):
        """Records each GiGPO batch's anchor statistics (with its iteration) in
        ``anchor.json`` next to the checkpoint, so a resumed run keeps the earlier ones."""

        def __init__(self, cfg: Any):
            super().__init__(cfg)
            path = self.out / "anchor.json" if self.out else None
            old = (_done(path) or []) if path is not None else []
            self.anchor: list[dict[str, float]] = [
                a for a in old if a.get("iteration", 0) < self.iteration
            ]

        def advantages(self, batch: Any) -> Any:
            rows, adv = super().advantages(batch)
            if self.cfg.algo == "gigpo" and rows:
                stats = anchor_group_stats(rows, self.cfg.gigpo)
                self.anchor.append({**stats, "iteration": self.iteration})
                if self.out:
                    _save(self.out / "anchor.json", self.anchor)
            return rows, adv

    return AnchorTrainer


def rl_run(p: Protocol, run_dir: Path, algo: str, init: Path, seed: int, lr: float) -> Path:
    """One RL run (``algo``: a label of :data:`RUNS`) from ``init`` at its share of the
    protocol's env-step budget; its checkpoint. A run killed part-way resumes from its last
    checkpoint."""
    from agentgym.algos.trainer import TrainConfig

    pre = _preset(p)
    marker = run_dir / "done.json"
    if marker.exists():
        return run_dir / "checkpoint.pt"
    trainer_algo, share = RUNS[algo]
    resume = (run_dir / "checkpoint.pt").exists()
    cfg = TrainConfig(
        env_id=pre["env"],
        algo=trainer_algo,
        seed=seed,
        iterations=100_000,
        max_env_steps=int(p.budget * share),
        tasks_per_iter=p.tasks,
        group_size=p.group,
        env_kwargs=pre["env_kwargs"],
        num_envs=p.tasks * p.group,
        backend="sync",
        lr=lr,
        ppo_epochs=p.epochs,
        minibatch_size=p.minibatch,
        history_turns=_history(p),
        out_dir=str(run_dir),
        progress=False,
        checkpoint_every=1000 if p.policy == "byte" else 2,
        init=str(init),
        overwrite=not resume,
        resume=resume,
    )
    # Tree-GRPO: 2 trees x 2 expansions x 1 round = 6 leaves per task (the chains' 4-8)
    cfg.tree.trees, cfg.tree.expand, cfg.tree.rounds = 2, 2, 1
    cfg.loss.kl_coef = p.kl_coef
    t0, c0 = time.perf_counter(), time.process_time()
    trainer = _trainer_class()(cfg)
    trainer.run()
    anchor = list(getattr(trainer, "anchor", []))
    _save(
        marker,
        {
            "train_s": time.perf_counter() - t0,
            "train_cpu_s": time.process_time() - c0,
            "resumed": resume,
            "env_steps": trainer.env_steps,
            "iterations": trainer.iteration,
            "anchor": anchor,
        },
    )
    return run_dir / "checkpoint.pt"


def evaluate(
    p: Protocol, ckpt: Path, cache: Path, split: str, seeds: list[int]
) -> dict[str, list[float]]:
    """Greedy and sampled success of a checkpoint on the given distinct-task seeds (cached)."""
    import torch

    from agentgym.agents.load import load_checkpoint_state
    from agentgym.agents.transformer import TransformerPolicy
    from agentgym.agents.wordmodel import WordPolicy, is_word_state
    from agentgym.algos.heldout import heldout_eval

    got = _done(cache)
    if got is not None and got.get("seeds") == seeds:
        return got
    pre = _preset(p)
    state = load_checkpoint_state(ckpt)
    if is_word_state(state):
        policy: Any = WordPolicy.from_state_dict(state)
    else:
        policy = TransformerPolicy.from_state_dict(state)
    t0 = time.perf_counter()
    res: dict[str, Any] = {"seeds": seeds, "split": split}
    for mode in ("greedy", "sampled"):
        policy.generator.manual_seed(12_345)
        torch.manual_seed(12_345)
        r = heldout_eval(
            pre["env"],
            policy,
            split=split,
            seeds=seeds,
            greedy=mode == "greedy",
            env_kwargs=pre["env_kwargs"],
            history_turns=_history(p),
            num_envs=min(32, len(seeds)),
            backend="sync",
        )
        res[mode] = [float(o.success) for o in r.outcomes]
        res[f"{mode}_tasks"] = [o.task_id for o in r.outcomes]
        res[f"{mode}_steps"] = r.env_steps
    res["eval_s"] = time.perf_counter() - t0
    _save(cache, res)
    return res


def demonstrator_success(p: Protocol, out: Path, sets: dict[str, list[int]]) -> dict[str, Any]:
    """Success of the demonstrator (noise-free) on 200 train tasks and on every task set:
    what cloning it can reach at most (cached in ``demonstrator.json``)."""
    from agentgym.agents.scripted import OraclePolicy
    from agentgym.algos.demos import observer_for
    from agentgym.algos.heldout import heldout_eval

    path = out / "demonstrator.json"
    got = _done(path)
    if got is not None:
        return got
    pre = _preset(p)
    name = p.demonstrator
    policy = OraclePolicy() if name == "oracle" else observer_for(pre["env"])
    plays = {
        "train": ("train", [500_000 + 10_000 * 9 + k for k in range(200)]),
        "valid": ("valid", sets["valid"]),
        "table": ("test", sets["table"]),
        "reeval": ("test", sets["reeval"]),
    }
    res: dict[str, Any] = {"demonstrator": name}
    for key, (split, seeds) in plays.items():
        r = heldout_eval(pre["env"], policy, split=split, seeds=seeds, env_kwargs=pre["env_kwargs"],
                         history_turns=None, num_envs=16, backend="sync")  # fmt: skip
        res[key] = {"success": r.success, "tasks": len(seeds),
                    "turns": float(np.mean([o.turns for o in r.outcomes]))}  # fmt: skip
    _save(path, res)
    return res


def task_sets(p: Protocol, out: Path) -> dict[str, list[int]]:
    """valid, table and re-evaluation seeds: distinct tasks, the two test sets disjoint."""
    from agentgym.algos.heldout import distinct_task_seeds, seed_task_mapper

    path = out / "task_sets.json"
    got = _done(path)
    want = {"valid": p.valid_tasks, "table": p.test_tasks, "reeval": p.reeval_tasks}
    if got is not None and {k: len(got[k]) for k in want} == want:
        return got
    pre = _preset(p)
    task_of, close = seed_task_mapper(pre["env"], "valid", pre["env_kwargs"])
    try:
        valid = distinct_task_seeds(task_of, p.valid_tasks, start=0)
    finally:
        close()
    task_of, close = seed_task_mapper(pre["env"], "test", pre["env_kwargs"])
    try:
        table = distinct_task_seeds(task_of, p.test_tasks, start=0)
        used = [task_of(s) for s in table]
        reeval = distinct_task_seeds(task_of, p.reeval_tasks, start=100_000, exclude=used)
    finally:
        close()
    sets = {"valid": valid, "table": table, "reeval": reeval}
    _save(path, sets)
    return sets


def _run_seed(demo_seed: int, rl_seed: int) -> int:
    return 1 + 100 * demo_seed + rl_seed


def _mine(shard: tuple[int, int] | None, index: int) -> bool:
    """Whether run number ``index`` belongs to this process (``shard`` = (k, n): every
    n-th run from the k-th; None: all)."""
    return shard is None or index % shard[1] == shard[0]


def _wait_for(paths: list[Path], poll_s: float = 60.0) -> None:
    """Block until every path exists (another shard's runs)."""
    while not all(path.exists() for path in paths):
        time.sleep(poll_s)


def sweep_lr(
    p: Protocol,
    out: Path,
    sets: dict[str, list[int]],
    starts: dict[int, Path],
    shard: tuple[int, int] | None,
    results: dict[str, Any],
) -> dict[str, float]:
    """The learning rate of each algorithm, chosen on the valid set: one run per (algorithm,
    lr) from demonstration seed 0 and RL seed 0 (this shard's share of them), scored by mean
    greedy and sampled valid success; ties go to the first lr. Fills ``results["sweep"]``."""
    ev = out / "evals"
    d0, r0 = p.demo_seeds[0], p.rl_seeds[0]
    swept = [a for a in p.algos if a != "tree-grpo-q"]
    if "tree-grpo-q" in p.algos and "tree-grpo" not in swept:
        swept.append("tree-grpo")
    sweep = [(a, lr) for a in swept for lr in p.lr_grid]
    for i, (algo, lr) in enumerate(sweep):
        name = f"{algo}-lr{lr:g}-d{d0}-r{r0}"
        if _mine(shard, i):
            ckpt = rl_run(p, out / "runs" / name, algo, starts[d0], _run_seed(d0, r0), lr)
            evaluate(p, ckpt, ev / f"{name}-valid.json", "valid", sets["valid"])
    _wait_for([ev / f"{a}-lr{lr:g}-d{d0}-r{r0}-valid.json" for a, lr in sweep])
    chosen: dict[str, float] = {}
    for algo in swept:
        scores = {}
        for lr in p.lr_grid:
            name = f"{algo}-lr{lr:g}-d{d0}-r{r0}"
            v = evaluate(p, out / "runs" / name / "checkpoint.pt", ev / f"{name}-valid.json",
                         "valid", sets["valid"])  # fmt: skip
            scores[lr] = (float(np.mean(v["greedy"])) + float(np.mean(v["sampled"]))) / 2
            results["sweep"][name] = {
                "lr": lr,
                "valid_greedy": float(np.mean(v["greedy"])),
                "valid_sampled": float(np.mean(v["sampled"])),
            }
        chosen[algo] = max(p.lr_grid, key=lambda lr: (scores[lr], -p.lr_grid.index(lr)))
    if "tree-grpo-q" in p.algos:
        chosen["tree-grpo-q"] = chosen["tree-grpo"]
    return chosen


def run_protocol(p: Protocol, out: Path, shard: tuple[int, int] | None = None) -> dict[str, Any]:
    """Every stage in order, skipping the finished ones; returns results.json's content.

    With ``shard`` = (k, n), this process trains and evaluates only every n-th RL run from
    the k-th (n processes share the work: start them after the SFT starts exist); it waits
    for the other shards' valid runs before the main runs, and a final call without a shard
    assembles the results."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "protocol.json").write_text(json.dumps(p.__dict__, indent=1))
    sets = task_sets(p, out)
    ev = out / "evals"
    ev.mkdir(exist_ok=True)
    for i, d in enumerate(p.demo_seeds):
        if _mine(shard, i):
            demos_and_sft(p, out, d)
    _wait_for([out / f"sft-d{d}" / "done.json" for d in p.demo_seeds])
    starts = {d: demos_and_sft(p, out, d) for d in p.demo_seeds}
    results: dict[str, Any] = {"protocol": p.__dict__, "sets": sets, "start": {}, "sweep": {}}
    d0, r0 = p.demo_seeds[0], p.rl_seeds[0]
    if shard is None:
        results["start_valid"] = evaluate(
            p, starts[d0], ev / f"start-d{d0}-valid.json", "valid", sets["valid"]
        )
        results["demonstrator"] = demonstrator_success(p, out, sets)
    # 3. learning rate per algorithm, on valid only (tree-grpo-q uses tree-grpo's)
    chosen = sweep_lr(p, out, sets, starts, shard, results)
    results["chosen_lr"] = chosen
    # 4-5. every seed pair, evaluated on the table and the re-evaluation sets
    if shard is None:
        for d in p.demo_seeds:
            results["start"][d] = {
                s: evaluate(p, starts[d], ev / f"start-d{d}-{s}.json", "test", sets[s])
                for s in ("table", "reeval")
            }
    results["runs"] = {}
    todo = [
        (algo, d, r)
        for algo, d, r in itertools.product(p.algos, p.demo_seeds, p.rl_seeds)
        if not (d == d0 and r == r0 and algo != "tree-grpo-q")  # the sweep trained these
    ]
    mine = {run for i, run in enumerate(todo) if _mine(shard, i)}
    for algo, d, r in itertools.product(p.algos, p.demo_seeds, p.rl_seeds):
        lr = chosen[algo]
        name = f"{algo}-lr{lr:g}-d{d}-r{r}"
        if shard is not None and (algo, d, r) not in mine:
            continue
        ckpt = rl_run(p, out / "runs" / name, algo, starts[d], _run_seed(d, r), lr)
        results["runs"][name] = {
            "algo": algo,
            "demo_seed": d,
            "rl_seed": r,
            "lr": lr,
            "train": _done(out / "runs" / name / "done.json"),
            **{
                s: evaluate(p, ckpt, ev / f"{name}-{s}.json", "test", sets[s])
                for s in ("table", "reeval")
            },
        }
        _save(out / "results.json", results)
    results["timings"] = {
        "sft": {d: _done(out / f"sft-d{d}" / "done.json") for d in p.demo_seeds},
    }
    _save(out / "results.json", results)
    return results


def anchor_probe(
    p: Protocol, out: Path, epsilons: tuple[float, ...] = (0.3, 0.6, 0.9), batches: int = 4
) -> dict[str, Any]:
    """GiGPO's anchor statistics under noisy oracles that succeed part of the time (cached).

    When the SFT start never succeeds every return is equal and no row gets a step advantage;
    this measures what GiGPO's rollouts of a policy between the start and the oracle would
    give, in the same group shape (``tasks`` x ``group`` chains on training seeds).
    """
    import functools

    import gymnasium as gym

    from agentgym.agents.scripted import NoisyPolicy, OraclePolicy
    from agentgym.algos.gigpo import GiGPOConfig, anchor_group_stats
    from agentgym.pools import EnvPool
    from agentgym.registry import get_record
    from agentgym.rollout.groups import group_rollouts

    path = out / "anchor_probe.json"
    got = _done(path)
    if got is not None:
        return got
    pre = _preset(p)
    factory = functools.partial(gym.make, get_record(pre["env"]).id, **pre["env_kwargs"])
    n = p.tasks * p.group
    result: dict[str, Any] = {}
    for eps in epsilons:
        rows: list[Any] = []
        solved: list[bool] = []
        with EnvPool([factory] * n, backend="sync") as pool:
            pool.reset(seeds=[0] * n)
            policy = NoisyPolicy(OraclePolicy(), eps, seed=0)
            for b in range(batches):
                seeds = [700_000 + b * p.tasks + k for k in range(p.tasks)]
                batch = group_rollouts(
                    pool,
                    policy,
                    seeds,
                    group_size=p.group,
                    history_turns=pre["history_turns"],
                    group_prefix=f"{b}:",
                )
                rows += batch.steps
                solved += [t.success for t in batch.trajectories]
        stats = anchor_group_stats(rows, GiGPOConfig())
        result[f"{eps:g}"] = {**stats, "success": float(np.mean(solved))}
    _save(path, result)
    return result


# ---- the report ---------------------------------------------------------------------------


def _fmt(mean: float, se: float) -> str:
    return f"{mean:.3f} ± {se:.3f}" if np.isfinite(se) else f"{mean:.3f}"


def _sgn(mean: float, se: float) -> str:
    return f"{mean:+.3f} ± {se:.3f}" if np.isfinite(se) else f"{mean:+.3f}"


def summarise(results: dict[str, Any]) -> dict[str, Any]:
    """Means, SEs and paired differences per algorithm, set and mode."""
    from agentgym.algos.heldout import mean_se, paired_difference

    start = {int(d): v for d, v in results["start"].items()}
    summary: dict[str, Any] = {"start": {}, "algos": {}, "vs": {}}
    for s, mode in itertools.product(("table", "reeval"), ("greedy", "sampled")):
        per_demo = [float(np.mean(start[d][s][mode])) for d in sorted(start)]
        summary["start"][f"{s}/{mode}"] = {"per_demo_seed": per_demo, "mean_se": mean_se(per_demo)}
    runs = results["runs"]
    for algo in ALGOS:
        mine = [v for v in runs.values() if v["algo"] == algo]
        if not mine:
            continue
        cell: dict[str, Any] = {"runs": len(mine)}
        for s, mode in itertools.product(("table", "reeval"), ("greedy", "sampled")):
            finals = [float(np.mean(v[s][mode])) for v in mine]
            gains = [
                float(np.mean(v[s][mode])) - float(np.mean(start[v["demo_seed"]][s][mode]))
                for v in mine
            ]
            # per task: start vs the mean of the runs' finals on that task (pairs over tasks)
            before = np.mean([start[v["demo_seed"]][s][mode] for v in mine], axis=0)
            after = np.mean([v[s][mode] for v in mine], axis=0)
            cell[f"{s}/{mode}"] = {
                "final": mean_se(finals),
                "gain_runs": mean_se(gains),
                "gain_tasks": paired_difference(list(before), list(after)),
                "runs_up": int(sum(g > 0 for g in gains)),
                "runs_down": int(sum(g < 0 for g in gains)),
                "per_run_gain": gains,
            }
        anchors = [a for v in mine for a in ((v.get("train") or {}).get("anchor") or [])]
        if anchors:
            # fractions of rows, pooled over every batch of every run (weighted by rows)
            w = np.array([a["rows"] for a in anchors])
            cell["anchor_rows"] = int(w.sum())
            for key in ("step_nonzero", "episode_nonzero", "shared", "anchor_size"):
                cell[key] = float(np.average([a[key] for a in anchors], weights=w))
            # the start policy's batches (the first 2 of each run) and the final's (last 2)
            for part, pick in (("start", slice(0, 2)), ("final", slice(-2, None))):
                got = [a for v in mine for a in ((v.get("train") or {}).get("anchor") or [])[pick]]
                wp = np.array([a["rows"] for a in got])
                for key in ("step_nonzero", "episode_nonzero"):
                    cell[f"{key}_{part}"] = float(np.average([a[key] for a in got], weights=wp))
        summary["algos"][algo] = cell
        trains = [v["train"] for v in mine if v.get("train")]
        if trains:
            summary.setdefault("cost", {})[algo] = float(
                sum(t["train_s"] for t in trains) / sum(t["env_steps"] for t in trains)
            )
            cpu = [t for t in trains if "train_cpu_s" in t and not t.get("resumed")]
            if cpu:
                summary.setdefault("cpu_cost", {})[algo] = float(
                    sum(t["train_cpu_s"] for t in cpu) / sum(t["env_steps"] for t in cpu)
                )
    for a, b in COMPARISONS:
        for s, mode in itertools.product(("table", "reeval"), ("greedy", "sampled")):
            pairs = []
            for v in runs.values():
                if v["algo"] != a:
                    continue
                twin = [
                    w
                    for w in runs.values()
                    if w["algo"] == b
                    and w["demo_seed"] == v["demo_seed"]
                    and w["rl_seed"] == v["rl_seed"]
                ]
                if twin:
                    pairs.append((float(np.mean(twin[0][s][mode])), float(np.mean(v[s][mode]))))
            if pairs:
                summary["vs"][f"{a}-{b}/{s}/{mode}"] = {
                    "diff": paired_difference([x for x, _ in pairs], [y for _, y in pairs]),
                    "wins": int(sum(y > x for x, y in pairs)),
                    "ties": int(sum(y == x for x, y in pairs)),
                    "pairs": len(pairs),
                }
    return summary


def _ratio(value: float) -> str:
    """A ratio, or "-" where it is undefined (NaN: every A_E is zero)."""
    return f"{value:.2f}" if np.isfinite(value) else "-"


def _beyond(cell: dict[str, Any]) -> bool:
    """A gain above twice its SE over runs and over tasks (NaN SEs never pass)."""
    gain, se_runs = cell["gain_runs"]
    se_tasks = cell["gain_tasks"][1]
    return bool(gain > 2 * se_runs and gain > 2 * se_tasks)


def _demonstrator_lines(results: dict[str, Any]) -> list[str]:
    """The demonstrator's success on each set (what cloning it can reach), as markdown."""
    lines: list[str] = []
    demo = results.get("demonstrator")
    if demo:
        lines += [
            "",
            f"The demonstrator ({demo['demonstrator']}, no noise) on each set, what cloning it "
            "can reach: "
            + ", ".join(
                f"{k} {demo[k]['success']:.3f} ({demo[k]['tasks']} tasks, "
                f"{demo[k]['turns']:.1f} turns)"
                for k in ("train", "valid", "table", "reeval")
            )
            + ".",
        ]
    return lines


def table_markdown(results: dict[str, Any], summary: dict[str, Any]) -> str:
    """The learning table, paired differences and comparisons as markdown."""
    p = results["protocol"]
    sets = results["sets"]
    test_name = PRESETS[p["env"]]["test_name"]
    algos = [a for a in ALGOS if a in summary["algos"]]
    n_runs = {a: summary["algos"][a]["runs"] for a in algos}
    lines = [
        f"`{PRESETS[p['env']]['env']}`: {len(p['demo_seeds'])} demonstration seeds x "
        f"{len(p['rl_seeds'])} RL seeds = {max(n_runs.values(), default=0)} runs per algorithm, "
        f"{p['budget']} env steps each from the SFT start; table set {len(sets['table'])} "
        f"distinct {test_name} tasks, re-evaluation set {len(sets['reeval'])} other distinct "
        f"tasks, valid set {len(sets['valid'])} distinct valid tasks.",
        "",
        "Learning rate chosen on valid only (mean of greedy and sampled valid success, "
        "demonstration seed 0, RL seed 0; KL "
        f"{p['kl_coef']} fixed):",
        "",
        "| run | lr | valid greedy | valid sampled |",
        "|---|---|---|---|",
    ]
    sv = results.get("start_valid")
    if sv:
        lines.append(
            f"| SFT start (d0) | - | {np.mean(sv['greedy']):.3f} | {np.mean(sv['sampled']):.3f} |"
        )
    for name, v in results["sweep"].items():
        pick = " (chosen)" if results["chosen_lr"].get(name.split("-lr")[0]) == v["lr"] else ""
        lines.append(
            f"| {name.split('-lr')[0]}{pick} | {v['lr']:g} | {v['valid_greedy']:.3f} "
            f"| {v['valid_sampled']:.3f} |"
        )
    for s, title in (("table", "Table set"), ("reeval", "Re-evaluation set")):
        lines += [
            "",
            f"{title} ({len(sets[s])} distinct {test_name} tasks). Success: mean ± SE over "
            "runs (start: over demonstration seeds). Gain: final minus its own SFT start on "
            "the same tasks, mean ± SE over runs; [± SE over tasks of the per-task paired "
            "difference]; runs up/down.",
            "",
            "| | SFT start | " + " | ".join(algos) + " |",
            "|---|---|" + "---|" * len(algos),
        ]
        for mode in ("greedy", "sampled"):
            st = summary["start"][f"{s}/{mode}"]
            row = [f"{mode} success", _fmt(*st["mean_se"])]
            row += [_fmt(*summary["algos"][a][f"{s}/{mode}"]["final"]) for a in algos]
            lines.append("| " + " | ".join(row) + " |")
            gain = [f"{mode} gain", "-"]
            for a in algos:
                c = summary["algos"][a][f"{s}/{mode}"]
                gain.append(
                    f"{_sgn(*c['gain_runs'])} [± {c['gain_tasks'][1]:.3f}] "
                    f"{c['runs_up']}/{c['runs_down']}"
                )
            lines.append("| " + " | ".join(gain) + " |")
    lines += _demonstrator_lines(results)
    lines += ["", "SFT start per demonstration seed (table set):"]
    for mode in ("greedy", "sampled"):
        per = summary["start"][f"table/{mode}"]["per_demo_seed"]
        lines.append(f"- {mode}: " + ", ".join(f"{v:.3f}" for v in per))
    lines += [
        "",
        "Does RL raise held-out success beyond the spread? (gain > 2 SE over runs "
        "and > 2 SE over tasks, on both sets)",
        "",
    ]
    for a in algos:
        for mode in ("greedy", "sampled"):
            ok = all(_beyond(summary["algos"][a][f"{s}/{mode}"]) for s in ("table", "reeval"))
            lines.append(f"- {a} {mode}: {'yes' if ok else 'no'}")
    cost = summary.get("cost", {})
    if cost:
        lines += [
            "",
            "Wall seconds per RL env step (one single-threaded process on the shared machine), "
            "rollouts and updates: " + ", ".join(f"{a} {v:.3f}" for a, v in cost.items()),
        ]
    cpu_cost = summary.get("cpu_cost", {})
    if cpu_cost:
        lines += [
            "",
            "CPU seconds per RL env step (the process's own CPU time, which the machine's load "
            "does not inflate; runs that were resumed are left out): "
            + ", ".join(f"{a} {v:.3f}" for a, v in cpu_cost.items()),
        ]
    lines += [
        "",
        "Between algorithms, run by run (same demonstration and RL seed, same tasks): mean "
        "difference ± SE over the pairs, and how many pairs the first one wins.",
        "",
        "| comparison | set | greedy | sampled |",
        "|---|---|---|---|",
    ]
    for a, b in COMPARISONS:
        for s in ("table", "reeval"):
            cells = []
            for mode in ("greedy", "sampled"):
                v = summary["vs"].get(f"{a}-{b}/{s}/{mode}")
                cells.append(
                    f"{_sgn(*v['diff'])} ({v['wins']}/{v['pairs']} wins, {v['ties']} ties)"
                    if v
                    else "-"
                )
            lines.append(f"| {a} - {b} | {s} | " + " | ".join(cells) + " |")
    g = summary["algos"].get("gigpo", {})
    if "step_nonzero" in g:
        lines += [
            "",
            f"GiGPO's training batches: {g['step_nonzero']:.2f} of rows have a non-zero step "
            f"advantage, {g['episode_nonzero']:.2f} a non-zero episode advantage, "
            f"{g['shared']:.2f} share their anchor state with another row (mean anchor-group "
            f"size {g['anchor_size']:.1f}; {g['anchor_rows']} rows, every batch of every run). "
            f"The start policy's batches (first 2 of each run): {g['step_nonzero_start']:.2f} "
            f"non-zero step, {g['episode_nonzero_start']:.2f} non-zero episode advantage; the "
            f"final policy's (last 2): {g['step_nonzero_final']:.2f} and "
            f"{g['episode_nonzero_final']:.2f}.",
        ]
    probe = results.get("anchor_probe")
    if probe:
        lines += [
            "",
            "The same statistics in GiGPO's group shape under noisy oracles (a random admissible "
            "command with probability epsilon), a policy that succeeds part of the time:",
            "",
            "| epsilon | episodes solved | rows | rows in a shared anchor group | rows with A_S != 0 "
            "| rows with A_E != 0 | mean abs A_S / mean abs A_E |",
            "|---|---|---|---|---|---|---|",
        ]
        for eps, v in probe.items():
            lines.append(
                f"| {eps} | {v['success']:.2f} | {int(v['rows'])} | {v['shared']:.2f} "
                f"| {v['step_nonzero']:.2f} | {v['episode_nonzero']:.2f} "
                f"| {_ratio(v['step_over_episode'])} |"
            )
    return "\n".join(lines)


def _read_metrics(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def plot(results: dict[str, Any], summary: dict[str, Any], out: Path, png: Path) -> None:
    """Training-rollout success vs env steps: per algorithm, mean and SE band over runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from agentgym.algos.curves import trailing_mean

    p = results["protocol"]
    fig, ax = plt.subplots(figsize=(6, 4))
    grid = np.linspace(0, p["budget"], 21)
    for algo in ALGOS:
        curves = []
        for name, v in results["runs"].items():
            if v["algo"] != algo:
                continue
            rows = _read_metrics(out / "runs" / name / "metrics.csv")
            if not rows:
                continue
            x = np.array([float(r["env_steps"]) for r in rows])
            y = np.array([float(r["success"]) for r in rows])
            # trailing mean over 3 iterations, then onto a common env-step grid
            ys = trailing_mean(y, 3)
            curves.append(np.interp(grid, x, ys, left=ys[0]))
        if not curves:
            continue
        c = np.array(curves)
        mean = c.mean(axis=0)
        se = c.std(axis=0, ddof=1) / np.sqrt(len(c)) if len(c) > 1 else np.zeros_like(mean)
        (line,) = ax.plot(grid, mean, label=f"{algo} ({len(c)} runs)")
        ax.fill_between(grid, mean - se, mean + se, alpha=0.25, color=line.get_color())
        cell = summary["algos"].get(algo, {}).get("table/sampled")
        if cell:
            ax.errorbar(
                [p["budget"] * 1.02],
                [cell["final"][0]],
                yerr=[np.nan_to_num(cell["final"][1])],
                fmt="o",
                color=line.get_color(),
                capsize=3,
            )
    start = summary["start"]["table/sampled"]["mean_se"]
    ax.errorbar(
        [0],
        [start[0]],
        yerr=[np.nan_to_num(start[1])],
        fmt="ks",
        capsize=3,
        label="held-out sampled (table set): SFT start, finals",
    )
    ax.set_xlabel("env steps")
    ax.set_ylabel("training-rollout success (train split)")
    ax.set_title(f"{PRESETS[p['env']]['env']}: from the SFT start, mean ± SE")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


#: The settings an SFT start depends on: a run may reuse another's starts only if they agree.
SFT_FIELDS = ("env", "demo_seeds", "demo_episodes", "epsilon", "sft_epochs", "sft_lr", "d_model",
              "layers", "max_turns", "valid_tasks", "test_tasks", "reeval_tasks")  # fmt: skip


def reuse_starts(p: Protocol, source: Path, out: Path) -> None:
    """Copy the SFT starts, task sets and start evaluations of the protocol run in ``source``
    into ``out`` (what exists there is kept), so a run at another RL budget starts from the
    very same checkpoints. Refuses a source made with other SFT or task-set settings."""
    import shutil

    theirs = json.loads((source / "protocol.json").read_text())
    differ = [k for k in SFT_FIELDS if theirs.get(k) != p.__dict__[k]]
    if differ:
        raise SystemExit(f"--starts-from {source}: made with other {', '.join(differ)}")
    (out / "evals").mkdir(parents=True, exist_ok=True)
    names = ["task_sets.json", "anchor_probe.json"]
    names += [f"demos-d{d}.agtr" for d in p.demo_seeds] + [f"sft-d{d}" for d in p.demo_seeds]
    names += [f"evals/{f.name}" for f in (source / "evals").glob("start-*.json")]
    for name in names:
        src, dst = source / name, out / name
        if dst.exists() or not src.exists():
            continue
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)


def report(out: Path) -> str:
    results = json.loads((out / "results.json").read_text())
    results["anchor_probe"] = _done(out / "anchor_probe.json")
    summary = summarise(results)
    _save(out / "summary.json", summary)
    md = table_markdown(results, summary)
    (out / "table.md").write_text(md + "\n")
    plot(results, summary, out, out / "curve.png")
    return md


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--env", choices=sorted(PRESETS), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument(
        "--anchor-probe", action="store_true", help="only GiGPO's anchor statistics, noisy oracle"
    )
    ap.add_argument(
        "--shard",
        metavar="K/N",
        help="train and evaluate only every N-th RL run from the K-th (N processes share "
        "the runs; start them once the SFT starts exist, then run once without --shard)",
    )
    ap.add_argument(
        "--starts-from",
        metavar="DIR",
        help="reuse the SFT starts (and task sets) of the protocol run in DIR, e.g. to train "
        "the same starts at another --budget",
    )
    defaults = Protocol(env="household")
    for name, value in defaults.__dict__.items():
        if name == "env":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, list):
            kind = {"lr_grid": float, "algos": str}.get(name, int)
            ap.add_argument(flag, nargs="+", type=kind, default=value)
        elif isinstance(value, bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=value)
        else:
            ap.add_argument(flag, type=type(value), default=value)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    out = Path(args.out)
    if args.anchor_probe:
        out.mkdir(parents=True, exist_ok=True)
        probe = anchor_probe(Protocol(**{k: getattr(args, k) for k in defaults.__dict__}), out)
        print(json.dumps(probe, indent=1))
        return
    if not args.report_only:
        p = Protocol(**{k: getattr(args, k) for k in defaults.__dict__})
        if args.starts_from:
            reuse_starts(p, Path(args.starts_from), out)
        shard = None
        if args.shard:
            k, n = (int(x) for x in args.shard.split("/"))
            shard = (k, n)
        run_protocol(p, out, shard)
        if shard is not None:
            print(f"shard {args.shard} done")
            return
    print(report(out))
    print(f"curve: {out / 'curve.png'}")


if __name__ == "__main__":
    main()

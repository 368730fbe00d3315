"""The training loop: rollouts -> advantages -> PPO-clip updates, with logs and checkpoints.

Python API::

    from agentgym.algos import TrainConfig, train
    result = train(TrainConfig(env_id="agentgym/Sokoban-Tiny-v0", algo="gigpo", iterations=20,
                               out_dir="runs/sokoban-gigpo"))

Command line: ``agentgym train --env agentgym/Sokoban-Tiny-v0 --algo gigpo --out runs/x``.

Each iteration draws ``tasks_per_iter`` fresh task seeds (never repeated across iterations),
collects rollouts with the algorithm's sampler, turns them into step rows with advantages,
then runs ``ppo_epochs`` passes of minibatched PPO-clip updates (token-mean over generated
tokens; the frozen initial policy is the KL reference).

``algo="sft"`` instead clones demonstrations (``demos``: an ``.agtr`` file, see
:mod:`agentgym.algos.demos`): each iteration is one epoch of minibatched token-mean NLL with
the same token mask as RL. ``init`` starts any algorithm from a checkpoint (e.g. the SFT
one), so the pipeline is demos -> ``sft`` -> ``gigpo --init``.

The headline metric is held-out success: with ``eval_every=K`` the policy plays
``eval_tasks`` episodes of the env's TEST split (disjoint from the train split) before
training and every K iterations, greedy and sampled (:mod:`agentgym.algos.heldout`).

Written to ``out_dir`` (which must not hold another run unless ``resume`` or ``overwrite``;
see :mod:`agentgym.algos.rundir`):

* ``metrics.csv`` — one row per iteration (stable column names, see :data:`METRIC_FIELDS`);
  ``test_success`` / ``test_success_greedy`` are filled on rows after which an evaluation
  ran;
* ``eval.csv`` — every held-out evaluation, from the untrained policy at env step 0;
* ``tb/`` — the same metrics as TensorBoard event files (``train/*`` and ``test/*``) against
  env steps, when the ``tensorboard`` package is installed (``agentgym-suite[train]``);
* ``curve.png`` — success (training rollouts, held-out), return and loss against env steps;
* ``checkpoint.pt`` — policy, optimiser, RNG and iteration; ``resume=True`` continues;
  written every ``checkpoint_every`` iterations, at the end, and on Ctrl-C (at the last
  finished iteration: an interrupted rollout is dropped, an update always completes);
* ``config.json`` — the full configuration.
"""

from __future__ import annotations

import csv
import functools
import json
import logging
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from tqdm.auto import tqdm

from agentgym.agents.transformer import TransformerConfig, TransformerPolicy
from agentgym.agents.wordmodel import WordConfig, WordPolicy, is_word_state
from agentgym.algos.curves import plot_curves
from agentgym.algos.gigpo import GiGPOConfig, gigpo_rows
from agentgym.algos.grpo import GRPOConfig, grpo_rows
from agentgym.algos.heldout import heldout_eval
from agentgym.algos.losses import PPOLossConfig, ppo_clip_loss
from agentgym.algos.native_memory import release_freed_memory
from agentgym.algos.rundir import (
    logged_iterations,
    prepare_run_dir,
    sigint_deferred,
    write_atomically,
)
from agentgym.algos.tree_grpo import TreeGRPOConfig, tree_rows
from agentgym.error import InvalidConfigError
from agentgym.pools import EnvPool
from agentgym.registry import get_record
from agentgym.rollout.groups import group_rollouts, tree_rollouts
from agentgym.rollout.steps import RolloutBatch, StepRecord

logger = logging.getLogger(__name__)

RL_ALGOS = ("gigpo", "grpo", "tree-grpo")
ALGOS = (*RL_ALGOS, "sft")

__all__ = [
    "ALGOS",
    "METRIC_FIELDS",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "plot_curves",
    "train",
]

METRIC_FIELDS = [
    "iteration",
    "env_steps",
    "episodes",
    "success",
    "return_mean",
    "turns_mean",
    "loss",
    "pg_loss",
    "kl",
    "entropy",
    "clip_frac",
    "adv_abs_mean",
    "adv_ms",
    "rollout_s",
    "update_s",
    "demo_nll",
    "test_success",
    "test_success_greedy",
]

EVAL_FIELDS = ["iteration", "env_steps", "test_success", "test_success_greedy", "test_episodes"]


@dataclass
class TrainConfig:
    """Everything a run needs; saved as ``config.json`` next to the metrics."""

    env_id: str = "agentgym/Sokoban-Tiny-v0"
    """Any registered single-agent env id."""
    algo: Literal["gigpo", "grpo", "tree-grpo", "sft"] = "gigpo"
    """``gigpo``, ``grpo``, ``tree-grpo``, or ``sft`` (clone ``demos``)."""
    iterations: int = 20
    """Training iterations (each: rollouts then PPO updates)."""
    max_env_steps: int | None = None
    """Stop once this many env steps were used (for equal-budget comparisons)."""
    tasks_per_iter: int = 4
    """Distinct task seeds per iteration."""
    group_size: int = 8
    """Chains per task seed (GRPO / GiGPO)."""
    seed: int = 0
    """Seeds the model init, sampling and the task seeds."""
    task_seeds: list[int] | None = None
    """Train on these task seeds only (cycled ``tasks_per_iter`` at a time) instead of fresh
    ones each iteration; e.g. ``[7]`` to check a model can learn one level."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to ``gym.make`` (e.g. ``max_turns``, ``reward_weights``)."""
    history_turns: int | None = 1
    """Turn pairs of chat history the policy sees; None: the whole conversation."""
    num_envs: int = 32
    """Env pool size (concurrent chains)."""
    backend: Literal["thread", "process", "sync"] = "thread"
    """Env pool backend: ``thread``, ``process`` or ``sync``."""
    rollout_engine: bool = False
    """Collect ``grpo``/``gigpo`` rollouts through the asynchronous engine
    (:func:`agentgym.rollout.training.collect_groups`): no barrier across envs, and a group
    with an infrastructure failure (env crash or timeout) is retried, then left out of the
    advantages instead of scored as zero. False: the lockstep ``group_rollouts``."""
    lr: float = 3e-3
    """AdamW learning rate (3e-4 suits RL that starts from an SFT checkpoint)."""
    ppo_epochs: int = 4
    """Passes over each iteration's rows."""
    minibatch_size: int = 128
    """Rows per gradient step."""
    max_grad_norm: float = 1.0
    """Gradients are clipped to this global norm."""
    device: str = "cpu"
    """``cuda`` batches the policy on a GPU."""
    policy: Literal["byte", "word", "hf"] = "byte"
    """``byte`` (the byte transformer, ``model``), ``word`` (the word transformer, ``word``:
    the whole episode in its window, for long-horizon envs with admissible actions) or
    ``hf`` (a local transformers model, ``hf_model``; e.g. a small LLM on a GPU)."""
    hf_model: str | None = None
    """``policy="hf"``: the local model folder."""
    max_new_tokens: int = 256
    """``policy="hf"``: generation budget per turn."""
    model: TransformerConfig = field(default_factory=lambda: TransformerConfig(d_model=32))
    """The byte transformer's settings (``policy="byte"``)."""
    word: WordConfig = field(default_factory=WordConfig)
    """``policy="word"``: its settings. An empty ``vocab`` is built from the train split:
    from ``demos`` when given, else from ``vocab_episodes`` random-policy episodes."""
    vocab_episodes: int = 64
    """``policy="word"`` without demos or a vocabulary: train-split episodes of a random
    admissible policy whose text builds the vocabulary."""
    loss: PPOLossConfig = field(default_factory=lambda: PPOLossConfig(kl_coef=0.0))
    """PPO settings. KL is off by default: the reference of a from-scratch model is its
    random initialisation. Set ``kl_coef`` (e.g. 0.01) when fine-tuning a pretrained one."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO's advantage settings (``algo="grpo"``)."""
    gigpo: GiGPOConfig = field(default_factory=GiGPOConfig)
    """GiGPO's advantage settings (``algo="gigpo"``)."""
    tree: TreeGRPOConfig = field(default_factory=TreeGRPOConfig)
    """Tree-GRPO's tree shape and advantage settings (``algo="tree-grpo"``)."""
    eval_every: int = 0
    """Evaluate on the test split before training and every this many iterations (0: never)."""
    eval_tasks: int = 32
    """Held-out episodes per evaluation (each mode: greedy and sampled)."""
    demos: str | None = None
    """``sft``: the ``.agtr`` demonstrations to clone."""
    demos_only_success: bool = False
    """``sft``: clone only the demonstration episodes that succeeded."""
    demo_nll_every: int = 1
    """``sft``: the ``demo_nll`` column (a forward pass over every demonstration) is computed
    every this many epochs and after the last; in between it is left empty."""
    demos_relabel: bool = False
    """``sft``: the label of every demonstrated step is what the env's observation-only
    demonstrator (:func:`agentgym.algos.demos.observer_for`) chooses there, so the noisy
    steps of noisy demonstrations keep their states and lose their random actions."""
    init: str | None = None
    """Start from this checkpoint's policy (e.g. the SFT one); its model config wins."""
    out_dir: str | None = None
    """Where metrics, plot and checkpoint go (None: keep nothing on disk)."""
    checkpoint_every: int = 5
    """Save ``checkpoint.pt`` every this many iterations (and at the end, and on Ctrl-C)."""
    resume: bool = False
    """Continue from ``out_dir/checkpoint.pt``; an error when there is none, or when the
    folder was trained with another ``algo``."""
    overwrite: bool = False
    """Delete the run already in ``out_dir`` (else a folder holding one is refused)."""
    progress: bool = True
    """Draw a progress bar."""
    record: bool = False
    """After training, play ``record_episodes`` episodes with the trained policy and record
    them to ``out_dir/rollouts.agtr`` (view with ``agentgym view``)."""
    record_episodes: int = 8
    """``record``: how many episodes."""

    def validate(self) -> None:
        if self.algo not in ALGOS:
            raise InvalidConfigError(f"algo must be one of {ALGOS}, got {self.algo!r}.")
        if self.rollout_engine and self.algo not in ("grpo", "gigpo"):
            raise InvalidConfigError(
                f"rollout_engine collects GRPO groups (algo grpo or gigpo), not {self.algo!r}."
            )
        for name in (
            "iterations",
            "tasks_per_iter",
            "group_size",
            "num_envs",
            "ppo_epochs",
            "minibatch_size",
        ):
            if getattr(self, name) < 1:
                raise InvalidConfigError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.eval_every < 0 or self.eval_tasks < 1:
            raise InvalidConfigError(
                f"eval_every must be >= 0 and eval_tasks >= 1, got {self.eval_every} and "
                f"{self.eval_tasks}."
            )
        if self.algo == "sft" and not self.demos:
            raise InvalidConfigError(
                "algo 'sft' needs demos: a .agtr file of demonstrations, e.g. from "
                "`agentgym demos ENV --episodes 64 --epsilon 0.2 --out demos.agtr`."
            )
        for name in ("demos", "init"):
            value = getattr(self, name)
            if value and not Path(value).exists():
                raise InvalidConfigError(f"{name}: no such file {value!r}.")
        if self.policy not in ("byte", "word", "hf"):
            raise InvalidConfigError(f"policy must be 'byte', 'word' or 'hf', got {self.policy!r}.")
        if self.policy == "word":
            self.word.validate()
        if self.policy == "hf" and not self.hf_model and not self.init:
            raise InvalidConfigError("policy 'hf' needs hf_model (--model PATH), or --init.")
        get_record(self.env_id)  # raises a typed error with suggestions for unknown ids

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        nested = {
            "model": TransformerConfig,
            "word": WordConfig,
            "loss": PPOLossConfig,
            "grpo": GRPOConfig,
            "gigpo": GiGPOConfig,
            "tree": TreeGRPOConfig,
        }
        kw = {k: (nested[k](**v) if k in nested else v) for k, v in data.items()}
        return cls(**kw)


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    metrics: list[dict[str, Any]]
    policy: Any
    """The trained policy (:class:`TransformerPolicy`, or ``HFPolicy`` for ``policy="hf"``)."""
    out_dir: Path | None


class Trainer:
    """Owns the env pool, policy, optimiser and logs of one run; see the module docstring."""

    def __init__(self, config: TrainConfig):
        config.validate()
        self.cfg = config
        self.policy: Any = build_policy(config)
        # the folder is prepared only once the inputs loaded, so a bad --init leaves no trace
        self.out = Path(config.out_dir) if config.out_dir else None
        resume_from = (
            prepare_run_dir(
                self.out, algo=config.algo, resume=config.resume, overwrite=config.overwrite
            )
            if self.out
            else None
        )
        self.reference = self.policy.frozen_copy() if config.loss.kl_coef else None
        self.optim = torch.optim.AdamW(self.policy.model.parameters(), lr=config.lr)
        self.rng = np.random.default_rng(config.seed)
        self.iteration = 0
        self.env_steps = 0
        self.metrics: list[dict[str, Any]] = []
        self.evals: list[dict[str, Any]] = []
        self.resumed_from: int | None = None
        """The iteration a resumed run continued from (None for a fresh run)."""
        self.lost_iterations = 0
        """Of a resumed run: iterations logged after its last checkpoint (a killed run), which
        are played again."""
        self._traj = 0
        self.infra_failures = 0
        """Rollout attempts ended by an infrastructure failure (``rollout_engine`` only)."""
        if self.out:
            if resume_from is not None:
                logged = logged_iterations(self.out)
                self.load(resume_from)
                self.resumed_from = self.iteration
                self.lost_iterations = max(0, logged - self.iteration)
            (self.out / "config.json").write_text(json.dumps(asdict(config), indent=2))
        self._tb = _tensorboard_writer(self.out / "tb") if self.out else None
        self._demo_gens: list[Any] = []
        self.pool: EnvPool | None = None
        if config.algo == "sft":
            from agentgym.algos.demos import demo_steps
            from agentgym.algos.sft import demo_generations

            assert config.demos is not None
            steps = demo_steps(
                config.demos,
                history_turns=config.history_turns,
                only_success=config.demos_only_success,
            )
            if config.demos_relabel:
                from agentgym.algos.demos import relabel

                steps = relabel(steps, config.env_id, config.demos)
            self._demo_gens = demo_generations(self.policy, steps)
            self._demo_episodes = len({s.episode_id for s in steps})
            return
        record = get_record(config.env_id)
        kwargs = dict(config.env_kwargs)
        self.pool = EnvPool(
            [functools.partial(gym.make, record.id, **kwargs)] * config.num_envs,
            backend=config.backend,
        )
        self.pool.reset(seeds=[config.seed] * config.num_envs)  # wrappers need one reset

    # ---- one iteration ---------------------------------------------------------------------

    def _next_traj(self) -> int:
        self._traj += 1
        return self._traj

    def _seeds(self, iteration: int) -> list[int]:
        if self.cfg.task_seeds:
            fixed = self.cfg.task_seeds
            k = self.cfg.tasks_per_iter
            return [fixed[(iteration * k + j) % len(fixed)] for j in range(k)]
        base = 1_000_003 * self.cfg.seed + iteration * self.cfg.tasks_per_iter
        return [base + k for k in range(self.cfg.tasks_per_iter)]

    def rollout(self, iteration: int) -> RolloutBatch:
        cfg = self.cfg
        assert self.pool is not None, "sft runs have no env pool"
        seeds = self._seeds(iteration)
        if cfg.algo == "tree-grpo":
            return tree_rollouts(
                self.pool,
                self.policy,
                seeds,
                trees=cfg.tree.trees,
                expand=cfg.tree.expand,
                rounds=cfg.tree.rounds,
                rng=self.rng,
                history_turns=cfg.history_turns,
                group_prefix=f"{iteration}:",
                traj_counter=self._next_traj,
            )
        groups: dict[str, Any] = {
            "group_size": cfg.group_size,
            "history_turns": cfg.history_turns,
            "group_prefix": f"{iteration}:",
        }
        if cfg.rollout_engine:
            from agentgym.rollout.training import collect_groups

            batch, summary = collect_groups(
                self.pool, self.policy, seeds, policy_version=iteration, **groups
            )
            self.infra_failures += summary.infra_failures
            return batch
        return group_rollouts(self.pool, self.policy, seeds, traj_counter=self._next_traj, **groups)

    def advantages(self, batch: RolloutBatch) -> tuple[list[StepRecord], np.ndarray]:
        if self.cfg.algo == "gigpo":
            return gigpo_rows(batch, self.cfg.gigpo)
        if self.cfg.algo == "grpo":
            return grpo_rows(batch, self.cfg.grpo)
        return tree_rows(batch, self.cfg.tree)

    def _gradient_step(self, loss: torch.Tensor) -> None:
        """One clipped optimizer step on ``loss``.

        A minibatch whose rows are all forced choices (a single admissible action) has a
        loss that depends on no weight; it is skipped rather than back-propagated.
        """
        if not loss.requires_grad:
            return
        self.optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.policy.model.parameters(), self.cfg.max_grad_norm)
        self.optim.step()

    def _row_order(self, episodes: list[Any]) -> np.ndarray:
        """The order rows are cut into minibatches: a random permutation, or, for a policy
        that packs the rows of one episode into one sequence (the word transformer), a
        random permutation of episodes with each episode's rows kept together."""
        if not getattr(self.policy, "packs_episodes", False):
            return self.rng.permutation(len(episodes))
        blocks: dict[Any, list[int]] = {}
        for i, e in enumerate(episodes):
            blocks.setdefault(e, []).append(i)
        keys = list(blocks)
        return np.array(
            [i for k in self.rng.permutation(len(keys)) for i in blocks[keys[k]]], dtype=np.int64
        )

    def update(self, rows: list[StepRecord], adv: np.ndarray) -> dict[str, float]:
        """``ppo_epochs`` passes of minibatched PPO-clip over the rows."""
        cfg = self.cfg
        gens = [r.generation for r in rows]
        sums: dict[str, float] = {}
        n_mb = 0
        if not rows:
            return {}
        # old logprobs: what the sampling policy reported (same weights, no dropout);
        # reference logprobs: the frozen initial policy (only when the KL term is on)
        old_by_row = [
            torch.as_tensor(g.logprobs, dtype=torch.float32, device=self.policy.device)
            for g in gens
        ]
        ref_by_row = None
        if self.reference is not None:
            with torch.no_grad():
                ref = [
                    self.reference.evaluate(gens[i : i + cfg.minibatch_size])[0]
                    for i in range(0, len(gens), cfg.minibatch_size)
                ]
            ref_by_row = [t for chunk in ref for t in chunk]
        adv_t = torch.as_tensor(adv, dtype=torch.float32, device=self.policy.device)
        for _ in range(cfg.ppo_epochs):
            order = self._row_order([r.traj_id for r in rows])
            for start in range(0, len(rows), cfg.minibatch_size):
                idx = order[start : start + cfg.minibatch_size]
                logp, ent, mask = self.policy.evaluate([gens[i] for i in idx])
                width = logp.shape[1]
                old_mb = torch.stack([_fit(old_by_row[i], width) for i in idx])
                ref_mb = (
                    torch.stack([_fit(ref_by_row[i], width) for i in idx])
                    if ref_by_row is not None
                    else None
                )
                loss, m = ppo_clip_loss(
                    logp,
                    old_mb,
                    adv_t[idx],
                    mask,
                    ref_logprobs=ref_mb,
                    entropy=ent,
                    config=cfg.loss,
                )
                self._gradient_step(loss)
                m["loss"] = float(loss.detach())
                for k, v in m.items():
                    sums[k] = sums.get(k, 0.0) + v
                n_mb += 1
        return {k: v / max(1, n_mb) for k, v in sums.items()}

    def sft_epoch(self) -> dict[str, Any]:
        """One epoch of minibatched token-mean NLL over the demonstrations."""
        from agentgym.algos.sft import demo_nll, nll_loss

        cfg = self.cfg
        gens = self._demo_gens
        t0 = time.perf_counter()
        order = self._row_order([g.meta.get("episode", i) for i, g in enumerate(gens)])
        losses = []
        for start in range(0, len(gens), cfg.minibatch_size):
            loss = nll_loss(
                self.policy, [gens[i] for i in order[start : start + cfg.minibatch_size]]
            )
            self._gradient_step(loss)
            losses.append(float(loss.detach()))
        update_s = time.perf_counter() - t0
        return {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "episodes": self._demo_episodes,
            "success": "",
            "return_mean": "",
            "turns_mean": "",
            "loss": float(np.mean(losses)),
            "pg_loss": "",
            "kl": "",
            "entropy": "",
            "clip_frac": "",
            "adv_abs_mean": "",
            "adv_ms": "",
            "rollout_s": 0.0,
            "update_s": update_s,
            "demo_nll": demo_nll(self.policy, gens) if self._nll_due() else "",
        }

    def _nll_due(self) -> bool:
        """Whether this SFT epoch (``self.iteration``, 0-based) computes ``demo_nll``."""
        epoch = self.iteration + 1
        every = max(1, self.cfg.demo_nll_every)
        return epoch % every == 0 or epoch >= self.cfg.iterations

    def step(self) -> dict[str, Any]:
        """Run one iteration and return its metrics row.

        Ctrl-C during the rollouts abandons them and puts the sampling state back where the
        iteration began; the update and its bookkeeping run whole (the interrupt waits for
        them); an interrupted held-out evaluation is left out. So after an interrupt the
        trainer is always at the end of its last finished iteration, ready to be saved.
        """
        mark = self._sampling_state()
        try:
            rollout = None if self.cfg.algo == "sft" else self._timed_rollout()
        except KeyboardInterrupt:
            self._set_sampling_state(mark)
            raise
        with sigint_deferred():
            row = self.sft_epoch() if rollout is None else self._learn(*rollout)
            self.iteration += 1
            row["test_success"] = row["test_success_greedy"] = ""
            self.metrics.append(row)
        if self.cfg.eval_every and self.iteration % self.cfg.eval_every == 0:
            ev = self.evaluate_heldout()
            row["test_success"] = ev["test_success"]
            row["test_success_greedy"] = ev["test_success_greedy"]
        release_freed_memory()  # else a long run's heap grows by what each iteration freed
        return row

    def _sampling_state(self) -> dict[str, Any]:
        """What rollouts advance: the RNGs, the trajectory counter (restorable)."""
        return {
            "rng": self.rng.bit_generator.state,
            "torch_rng": self._generator().get_state(),
            "traj": self._traj,
        }

    def _set_sampling_state(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self._generator().set_state(state["torch_rng"])
        self._traj = state["traj"]

    def rl_iteration(self) -> dict[str, Any]:
        """Rollouts, advantages and PPO updates of one RL iteration; its metrics row."""
        return self._learn(*self._timed_rollout())

    def _timed_rollout(self) -> tuple[RolloutBatch, float]:
        t0 = time.perf_counter()
        batch = self.rollout(self.iteration)
        return batch, time.perf_counter() - t0

    def _learn(self, batch: RolloutBatch, rollout_s: float) -> dict[str, Any]:
        """Advantages and PPO updates on one iteration's rollouts; its metrics row."""
        it = self.iteration
        t1 = time.perf_counter()
        rows, adv = self.advantages(batch)
        adv_ms = (time.perf_counter() - t1) * 1000
        t2 = time.perf_counter()
        losses = self.update(rows, adv)
        update_s = time.perf_counter() - t2
        self.env_steps += batch.env_steps
        trajs = batch.trajectories
        row: dict[str, Any] = {
            "iteration": it,
            "env_steps": self.env_steps,
            "episodes": len(trajs),
            "success": batch.success_rate(),
            "return_mean": float(np.mean([t.total_reward for t in trajs])) if trajs else 0.0,
            "turns_mean": float(np.mean([len(t.steps) for t in trajs])) if trajs else 0.0,
            **{
                k: losses.get(k, float("nan"))
                for k in ("loss", "pg_loss", "kl", "entropy", "clip_frac")
            },
            "adv_abs_mean": float(np.mean(np.abs(adv))) if len(adv) else 0.0,
            "adv_ms": adv_ms,
            "rollout_s": rollout_s,
            "update_s": update_s,
            "demo_nll": "",
        }
        return row

    # ---- evaluation, logging, persistence --------------------------------------------------

    def evaluate(self, tasks: int, split: str = "test", greedy: bool = False) -> float:
        """Success rate on ``tasks`` episodes of ``split`` (sampled, or greedy)."""
        res = heldout_eval(
            self.cfg.env_id,
            self.policy,
            episodes=tasks,
            split=split,
            greedy=greedy,
            env_kwargs=self.cfg.env_kwargs,
            history_turns=self.cfg.history_turns,
            num_envs=min(tasks, self.cfg.num_envs),
            backend=self.cfg.backend,
        )
        return res.success

    def evaluate_heldout(self) -> dict[str, Any]:
        """Greedy and sampled test-split success now; appended to :attr:`evals` and logged."""
        # the sampled evaluation draws from its own generator state, so evaluating does not
        # change the training run's sampling (a run with and without eval trains the same)
        generator = self._generator()
        gen_state = generator.get_state()
        generator.manual_seed(10_007 + 7_919 * self.cfg.seed + self.iteration)
        try:
            sampled = self.evaluate(self.cfg.eval_tasks)
            greedy = self.evaluate(self.cfg.eval_tasks, greedy=True)
        finally:
            generator.set_state(gen_state)
        ev = {
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "test_success": sampled,
            "test_success_greedy": greedy,
            "test_episodes": self.cfg.eval_tasks,
        }
        self.evals.append(ev)
        if self._tb is not None:
            self._tb.add_scalar("test/success", sampled, global_step=self.env_steps)
            self._tb.add_scalar("test/success_greedy", greedy, global_step=self.env_steps)
        logger.info(
            "held-out test success at iteration %d: sampled %.3f, greedy %.3f",
            self.iteration,
            sampled,
            greedy,
        )
        return ev

    def save(self, path: Path) -> None:
        """Write the checkpoint; whole or not at all (a temporary file, renamed; Ctrl-C waits)."""
        with sigint_deferred():
            write_atomically(path, functools.partial(torch.save, self._state()))

    def _state(self) -> dict[str, Any]:
        return {
            "policy": self.policy.state_dict(),
            "optim": self.optim.state_dict(),
            "reference": self.reference.state_dict() if self.reference else None,
            "iteration": self.iteration,
            "env_steps": self.env_steps,
            "rng": self.rng.bit_generator.state,
            "torch_rng": self._generator().get_state(),
            "metrics": self.metrics,
            "evals": self.evals,
            "traj": self._traj,
            "train_config": asdict(self.cfg),
        }

    def load(self, path: Path) -> None:
        state = torch.load(path, map_location=self.policy.device, weights_only=False)
        self.policy.load_state_dict(state["policy"])
        self.optim.load_state_dict(state["optim"])
        if self.reference is not None and state.get("reference"):
            self.reference.load_state_dict(state["reference"])
        self.iteration = state["iteration"]
        self.env_steps = state["env_steps"]
        self.rng.bit_generator.state = state["rng"]
        self._generator().set_state(state["torch_rng"])
        self.metrics = list(state["metrics"])
        self.evals = list(state.get("evals", []))
        self._traj = state["traj"]
        logger.info("resumed from %s at iteration %d", path, self.iteration)

    def _generator(self) -> torch.Generator:
        """The policy's sampling generator (torch's default one for the HF policy)."""
        gen = getattr(self.policy, "generator", None)
        return gen if gen is not None else torch.default_generator

    def _write_logs(self) -> None:
        """Write metrics.csv, eval.csv and the curves; whole (Ctrl-C waits, as for
        :meth:`save`: raised inside matplotlib's weakref callbacks while the curves are
        drawn, an interrupt is printed and dropped, and training went on)."""
        assert self.out is not None
        with sigint_deferred():
            with open(self.out / "metrics.csv", "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=METRIC_FIELDS, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(self.metrics)
            if self.evals:
                with open(self.out / "eval.csv", "w", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=EVAL_FIELDS)
                    writer.writeheader()
                    writer.writerows(self.evals)
            plot_curves(
                {self.cfg.algo: self.metrics},  # SFT rows have a loss and no rollout success
                self.out / "curve.png",
                title=f"{self.cfg.env_id} ({self.cfg.algo})",
                heldout={self.cfg.algo: self.evals} if self.evals else None,
            )

    def _log_tensorboard(self, row: dict[str, Any]) -> None:
        """One iteration's metrics as ``train/*`` scalars against env steps."""
        if self._tb is not None:
            for name in METRIC_FIELDS:
                value = row.get(name)
                if name in ("iteration", "env_steps") or name.startswith("test_"):
                    continue  # test/* scalars are written when the evaluation runs
                if isinstance(value, int | float):
                    self._tb.add_scalar(f"train/{name}", value, global_step=row["env_steps"])
            self._tb.flush()

    def _record_episodes(self) -> None:
        """Play ``record_episodes`` episodes with the trained policy into ``rollouts.agtr``.

        The file is a normal trajectory file: ``agentgym view`` shows it and ``agentgym
        replay`` re-executes it. Recording never stops training: failures only warn.
        """
        from agentgym.episodes import play
        from agentgym.trajectory import Recorder

        assert self.out is not None
        path = self.out / "rollouts.agtr"
        seed = self.cfg.seed * 1000 + self.iteration
        try:
            with Recorder(path) as rec:
                callbacks: dict[str, Any] = rec.play_callbacks(self.cfg.env_id, seed=seed)
                play(
                    self.cfg.env_id,
                    self.policy,
                    episodes=self.cfg.record_episodes,
                    seed=seed,
                    env_kwargs=self.cfg.env_kwargs,
                    history_turns=self.cfg.history_turns,
                    num_envs=min(self.cfg.num_envs, self.cfg.record_episodes),
                    progress=False,
                    **callbacks,
                )
        except Exception as exc:  # recording must never kill training
            warnings.warn(f"could not record episodes to {path}: {exc}", stacklevel=2)

    def run(self) -> TrainResult:
        """Train until ``iterations`` or ``max_env_steps``; returns metrics and the policy."""
        cfg = self.cfg
        bar = tqdm(
            total=cfg.iterations,
            initial=self.iteration,
            disable=None if cfg.progress else True,  # None: off when stderr is no terminal
            desc=f"{cfg.algo} {cfg.env_id}",
            unit="it",
        )
        try:
            if cfg.eval_every and not self.evals:
                self.evaluate_heldout()  # the untrained (or --init) policy, at env step 0
            while self.iteration < cfg.iterations:
                if cfg.max_env_steps is not None and self.env_steps >= cfg.max_env_steps:
                    break
                row = self.step()
                bar.update(1)
                if cfg.algo == "sft":
                    if row["demo_nll"] != "":
                        bar.set_postfix(nll=f"{row['demo_nll']:.3f}")
                else:
                    bar.set_postfix(success=f"{row['success']:.2f}", steps=row["env_steps"])
                self._log_tensorboard(row)
                if self.out is not None:
                    self._write_logs()
                    if self.iteration % cfg.checkpoint_every == 0:
                        self.save(self.out / "checkpoint.pt")
            if cfg.eval_every and self.evals[-1]["iteration"] != self.iteration:
                ev = self.evaluate_heldout()  # the final policy, whatever the period
                if self.metrics:
                    self.metrics[-1]["test_success"] = ev["test_success"]
                    self.metrics[-1]["test_success_greedy"] = ev["test_success_greedy"]
            if self.out is not None:
                self._write_logs()
                self.save(self.out / "checkpoint.pt")
                if cfg.record:
                    self._record_episodes()
        except KeyboardInterrupt:
            # the trainer stands at the end of its last finished iteration (see step)
            if self.out is not None:
                with sigint_deferred():
                    self._write_logs()
                    self.save(self.out / "checkpoint.pt")
                logger.info("interrupted: checkpoint at iteration %d saved", self.iteration)
            raise
        finally:
            bar.close()
            if self.pool is not None:
                self.pool.close()
            if self._tb is not None:
                self._tb.close()
        return TrainResult(self.metrics, self.policy, self.out)


def build_policy(config: TrainConfig) -> Any:
    """The policy ``config`` asks for, loaded from ``init`` when given (whose kind and model
    config then win: ``config.policy`` and its model settings are set from it)."""
    init_state = None
    if config.init:
        from agentgym.agents.load import load_checkpoint_state

        init_state = load_checkpoint_state(config.init)
        if "hf_model" in init_state:
            config.policy, config.hf_model = "hf", init_state["hf_model"]
        elif is_word_state(init_state):
            config.policy, config.word = "word", WordConfig(**init_state["config"])
        else:
            config.policy, config.model = "byte", TransformerConfig(**init_state["config"])
    policy: Any
    if config.policy == "hf":
        from agentgym.agents.hf import HFPolicy

        torch.manual_seed(config.seed)
        policy = HFPolicy(
            config.hf_model, device=config.device, max_new_tokens=config.max_new_tokens, seed=None
        )
    elif config.policy == "word":
        if not config.word.vocab:
            config.word.vocab = train_vocabulary(config)
        policy = WordPolicy(config.word, device=config.device, seed=config.seed)
    else:
        policy = TransformerPolicy(config.model, device=config.device, seed=config.seed)
    if init_state is not None:
        policy.load_state_dict(init_state)
    return policy


def train_vocabulary(config: TrainConfig) -> list[str]:
    """The word policy's vocabulary from the train split: the demonstrations' text when the
    config has demos, else ``vocab_episodes`` episodes of a random admissible policy."""
    from agentgym.agents.wordmodel import build_vocabulary
    from agentgym.algos.demos import demo_texts, random_texts

    if config.demos:
        texts = demo_texts(config.demos)
    else:
        texts = random_texts(
            config.env_id, config.env_kwargs, episodes=config.vocab_episodes, seed=config.seed
        )
    return build_vocabulary(texts, min_episodes=max(2, len(texts) // 100))


def _tensorboard_writer(path: Path) -> Any:
    """A TensorBoard ``SummaryWriter`` at ``path``, or None when tensorboard is missing."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        logger.info("tensorboard is not installed; metrics go to metrics.csv only")
        return None
    return SummaryWriter(str(path))


def _fit(t: torch.Tensor, width: int) -> torch.Tensor:
    if t.shape[0] >= width:
        return t[:width]
    return torch.nn.functional.pad(t, (0, width - t.shape[0]))


def train(config: TrainConfig) -> TrainResult:
    """Build a :class:`Trainer` and run it."""
    return Trainer(config).run()

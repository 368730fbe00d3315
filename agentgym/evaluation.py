"""Evaluation over repeated trials: pass@k and pass^k.

Agents that talk to users are judged on *reliability*, not just one lucky run. Each task is
played ``n`` times, each time with an independent user seed (the task - hidden facts,
catalogue, database - stays the same; only the user's phrasing changes), and ``c`` of the
``n`` trials succeed. Then, per task, with the unbiased estimators over ``n`` trials:

* ``pass@k = 1 - C(n - c, k) / C(n, k)``: the chance that at least one of ``k`` trials
  succeeds (capability);
* ``pass^k = C(c, k) / C(n, k)``: the chance that all ``k`` trials succeed (consistency, as
  in tau-bench).

Both are averaged over tasks.

Examples:
    >>> round(pass_at_k(n=4, c=1, k=2), 4), round(pass_hat_k(n=4, c=3, k=2), 4)
    (0.5, 0.5)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import comb
from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import TimeLimit

from agentgym.agents.base import Policy
from agentgym.error import InvalidConfigError
from agentgym.rollout.starts import EpisodeStart

__all__ = [
    "EvalConfig",
    "EvalReport",
    "TaskResult",
    "evaluate",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_summary",
    "report_ks",
    "user_seed_for",
]


@dataclass
class EvalConfig:
    """What ``agentgym eval`` plays and how; its flags, defaults and help are these fields.

    Example:
        >>> EvalConfig("agentgym/Sokoban-Tiny-v0", policy="oracle").episodes
        100
    """

    env_id: str
    """A registered id (see ``agentgym list``)."""
    policy: Literal["oracle", "random", "noisy-oracle", "checkpoint", "hf", "openai"] = "checkpoint"
    """What plays: a scripted baseline (``oracle``, ``random``, ``noisy-oracle``), a
    ``checkpoint`` of ``agentgym train``, a local transformers model (``hf``) or a model
    behind an OpenAI-compatible server (``openai``)."""
    checkpoint: str | None = None
    """``policy="checkpoint"``: the ``checkpoint.pt`` (or its run folder)."""
    model: str | None = None
    """``policy="hf"``: a local transformers folder; ``policy="openai"``: the served model's
    name."""
    base_url: str | None = None
    """``policy="openai"``: the server's OpenAI-compatible root, e.g.
    ``http://127.0.0.1:8000/v1``."""
    api_key_env: str | None = None
    """``policy="openai"``: the environment variable holding the API key (never the key
    itself). None: ``OPENAI_API_KEY``, sent when set; a variable named here must be set."""
    request_timeout: float = 120.0
    """``policy="openai"``: seconds to wait for one reply."""
    epsilon: float = 0.2
    """``policy="noisy-oracle"``: the chance of a random admissible action."""
    episodes: int = field(default=100, metadata={"min": 1})
    """Held-out tasks per mode."""
    split: str = "test"
    """Task split; envs with more (``valid``, ``test_seen``, ``test_unseen``) list them on
    their docs page."""
    mode: Literal["both", "greedy", "sampled"] | None = None
    """``greedy`` (temperature 0), ``sampled`` (the policy's temperature, or
    ``temperature``), or ``both`` (every episode twice). None: sampled when ``temperature``
    > 0 or ``samples_per_task`` > 1 asks for sampling, else greedy."""
    temperature: float | None = None
    """The sampled mode's temperature. None: the policy's own (``openai``: 1.0)."""
    top_p: float | None = None
    """``policy="openai"``: nucleus sampling mass, sent as the request's top_p. None: the
    server's."""
    extra_body: dict[str, Any] | None = None
    """``policy="openai"``: a JSON object merged into every request, e.g.
    ``{"chat_template_kwargs": {"enable_thinking": false}}``."""
    samples_per_task: int = field(default=1, metadata={"min": 1})
    """Play each task this many times and report pass@k and pass^k."""
    tool_messages: Literal["auto", "native", "text"] | None = None
    """``policy="openai"``: past tool calls as native ``tool_calls`` and ``role: tool``
    messages, as text, or ``auto``. None: auto (native until the server refuses them, then
    text)."""
    retries: int = 4
    """``policy="openai"``: retries of a request answered 429/5xx or cut off, with
    exponential backoff 1, 2, 4... s."""
    history_turns: int | None = None
    """Turn pairs of history in the input; -1: all. None: the checkpoint's, all for
    ``policy="openai"``, else 1."""
    env_kwargs: dict[str, Any] | None = None
    """Passed to ``gym.make``. None: the checkpoint's env settings (its split aside), else
    none."""
    seed: int = 0
    """Episode k is reset with seed + k."""
    num_envs: int = field(default=16, metadata={"min": 1})
    """Envs stepped concurrently (``policy="openai"``: also the requests in flight)."""
    device: str = "cpu"
    """``cpu`` or ``cuda`` (learned policies)."""
    max_new_tokens: int = 256
    """``policy="hf"`` or ``openai``: generation budget per turn (sent as ``max_tokens``)."""
    out: str | None = None
    """Per-episode results as JSON lines, each written the moment its episode ends."""
    record: str | None = None
    """Write every step of every episode to this ``.agtr`` trajectory file."""
    progress: bool = True
    """Draw a progress bar (never into a redirected stderr)."""


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise InvalidConfigError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}.")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of ``k`` trials drawn from ``n`` (``c`` successes) succeeds."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all ``k`` trials drawn from ``n`` (``c`` successes) succeed (pass^k)."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def report_ks(samples: int) -> tuple[int, ...]:
    """The ``k`` values worth reporting for ``samples`` trials per task: 1, powers of 2, n.

    >>> report_ks(1), report_ks(4), report_ks(6)
    ((1,), (1, 2, 4), (1, 2, 4, 6))
    """
    powers = {2**i for i in range(samples.bit_length()) if 2**i <= samples}
    return tuple(sorted(powers | {1, samples}))


def pass_k_summary(
    successes_by_task: Mapping[Any, Sequence[bool]], ks: Sequence[int]
) -> dict[str, tuple[float, int]]:
    """``{"pass@k": (mean, tasks), "pass^k": (mean, tasks)}`` for each ``k`` in ``ks``.

    Each task contributes the unbiased estimate over its own ``n`` trials; a task with
    fewer than ``k`` trials (an interrupted run) is left out of that ``k``, and ``tasks``
    says how many were averaged (the mean is NaN when none).

    >>> out = pass_k_summary({"a": [True, False, False, False], "b": [True, True, True, False]}, [2])
    >>> out["pass@2"], out["pass^2"]
    ((0.75, 2), (0.25, 2))
    """
    out: dict[str, tuple[float, int]] = {}
    for k in ks:
        runs = [(len(s), sum(map(bool, s))) for s in successes_by_task.values() if len(s) >= k]
        at = [pass_at_k(n, c, k) for n, c in runs]
        hat = [pass_hat_k(n, c, k) for n, c in runs]
        out[f"pass@{k}"] = (float(np.mean(at)) if at else float("nan"), len(runs))
        out[f"pass^{k}"] = (float(np.mean(hat)) if hat else float("nan"), len(runs))
    return out


def user_seed_for(seed: int, task_index: int, trial: int) -> int:
    """The user seed of one trial: independent across trials and tasks, reproducible."""
    state = np.random.SeedSequence([int(seed), int(task_index), int(trial)]).generate_state(1)
    return int(state[0]) >> 1


@dataclass
class TaskResult:
    """The trials of one task."""

    task_id: str
    successes: list[bool] = field(default_factory=list)
    user_seeds: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    sim_errors: int = 0

    @property
    def n(self) -> int:
        return len(self.successes)

    @property
    def c(self) -> int:
        return sum(self.successes)


@dataclass
class EvalReport:
    """Per-task results and the pass@k / pass^k averages over tasks."""

    tasks: list[TaskResult]
    ks: tuple[int, ...]

    def pass_at(self, k: int) -> float:
        return float(np.mean([pass_at_k(t.n, t.c, k) for t in self.tasks]))

    def pass_hat(self, k: int) -> float:
        return float(np.mean([pass_hat_k(t.n, t.c, k) for t in self.tasks]))

    @property
    def success_rate(self) -> float:
        return float(np.mean([t.c / t.n for t in self.tasks]))

    def summary(self) -> dict[str, float]:
        """``{"success": ..., "pass@1": ..., "pass^1": ..., ...}``."""
        out = {"success": self.success_rate}
        for k in self.ks:
            out[f"pass@{k}"] = self.pass_at(k)
            out[f"pass^{k}"] = self.pass_hat(k)
        return out


def evaluate(
    env: str | gym.Env | Callable[[], gym.Env],
    policy: Policy,
    *,
    tasks: Sequence[str] | int = 10,
    n: int = 4,
    ks: Sequence[int] = (1, 2, 4),
    seed: int = 0,
    max_steps: int = 100,
) -> EvalReport:
    """Play every task ``n`` times with independent user seeds; report pass@k and pass^k.

    The trials are played one after the other by the rollout engine
    (:class:`~agentgym.rollout.RolloutEngine`, lockstep with one env): trial ``t`` of task
    ``i`` resets with seed ``seed + i * n + t`` and options ``{"task_id": ..., "user_seed":
    ...}``. The policy reads the whole conversation: the env's system prompt (when it has
    one), the first observation, then every action and observation.

    Args:
        env: An env id, an env (used as it is and left open: it is the caller's), or a
            factory. Envs that take ``options["user_seed"]`` (the user envs) vary only the
            user between trials; others ignore it.
        policy: Any :class:`agentgym.agents.Policy` (called with one input per turn; the
            ``PolicyInput.env`` field is set for privileged scripted policies).
        tasks: Task ids, or how many of the env's split to take (the first ones).
        n: Trials per task.
        ks: The ``k`` values to report (each at most ``n``).
        seed: Base seed of the trials' env and user seeds.
        max_steps: Safety bound on one episode's length (a trial cut there fails).

    Raises:
        The env's own exception when a reset or step raises (no trial is retried: a
        pass^k over trials that were quietly replayed would not be what it says).
    """
    bad = [k for k in ks if not 1 <= k <= n]
    if bad:
        raise InvalidConfigError(f"every k must be in 1..n={n}; got {bad}.")
    made, source = _one_env_source(env, max_steps)
    try:
        task_ids = list(tasks) if not isinstance(tasks, int) else _first_tasks(made, tasks)
        starts = [
            EpisodeStart(
                seed + ti * n + trial,
                options={"task_id": task_id, "user_seed": user_seed_for(seed, ti, trial)},
            )
            for ti, task_id in enumerate(task_ids)
            for trial in range(n)
        ]
        episodes, sim_errors = _play_trials(source, policy, starts)
    finally:
        source.close()
    results = []
    for ti, task_id in enumerate(task_ids):
        res = TaskResult(task_id)
        for k in range(ti * n, (ti + 1) * n):
            res.successes.append(episodes[k].success)
            res.user_seeds.append(int(starts[k].options["user_seed"]))  # type: ignore[index]
            res.returns.append(episodes[k].total_reward)
            res.sim_errors += int(k in sim_errors)
        results.append(res)
    return EvalReport(results, tuple(ks))


class _Borrowed(gym.Wrapper):
    """A caller's env, bounded to ``max_steps`` and never closed here: it is theirs."""

    def close(self) -> None:
        pass


def _one_env_source(
    env: str | gym.Env | Callable[[], gym.Env], max_steps: int
) -> tuple[gym.Env, Any]:
    """The env, and a source that lends exactly it (the one given, or made from the id or
    factory), with a ``max_steps`` limit. It cannot replace a failed env, so a failure ends
    the run."""
    from agentgym.rollout.sources import LocalEnvSource

    if isinstance(env, gym.Env):
        made: gym.Env = _Borrowed(env)
    else:
        made = gym.make(env) if isinstance(env, str) else env()

    def only_this_one() -> gym.Env:  # (asked once: no retry, and one failure stops the run)
        return TimeLimit(made, max_steps)

    source = LocalEnvSource("", factory=only_this_one)
    source.capacity = 1  # the next trial waits until this one's env is back
    return made, source


def _first_tasks(env: gym.Env, count: int) -> list[str]:
    unwrapped: Any = env.unwrapped
    return list(unwrapped.task_ids()[:count])


def _play_trials(
    source: Any, policy: Policy, starts: list[EpisodeStart]
) -> tuple[list[Any], set[int]]:
    """Every trial played to its end, in order; the trials whose user simulator erred."""
    from agentgym.rollout import EpisodeCallbacks, RolloutConfig, RolloutEngine
    from agentgym.rollout.faults import FailureRunError

    sim_errors: set[int] = set()
    failed: list[Any] = []

    def watch(event: Any) -> None:
        if event.info.get("sim_error"):
            sim_errors.add(event.episode)

    def note_failure(ep: Any) -> None:
        if ep.status != "done":
            failed.append(ep)

    config = RolloutConfig.whole_run(
        1, group_size=1, history_turns=None, episode_retries=0, failure_run_limit=1
    )
    hooks = EpisodeCallbacks(on_step=watch, on_episode=note_failure)
    engine = RolloutEngine(source, policy, starts, config, hooks)
    try:
        collection = engine.run_to_end(len(starts))
    except FailureRunError:
        if failed and failed[0].error is not None:
            raise failed[0].error from None
        raise
    episodes = sorted((ep for g in collection.groups for ep in g.members), key=lambda e: e.index)
    return episodes, sim_errors

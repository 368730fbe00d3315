"""Replay: re-run recorded episodes and report the first place an env behaves differently.

For each episode the env is re-created from the recorded id and constructor kwargs, reset
exactly as it was recorded (same seed and options; when the seed is unknown, the recorded
task id is passed as ``options["task_id"]``), and fed the recorded executed actions one by
one. After the reset and after every step it compares observation text (exactly), images
(shape and pixel sha256), reward (within ``reward_tol``), reward components, the
terminated/truncated flags and success. The first mismatch of an episode is its
:class:`Divergence`, with a unified diff for text.

Nothing here is env-specific, so every registered single-agent env replays. A file is not
trusted: settings far beyond the registered env's, alone or together, are refused unless
``trust_settings`` is given, and the replay of a whole file has one budget of seconds and
work units (:mod:`.replay_guard`).
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agentgym.text import safe_text
from agentgym.trajectory.format import pack
from agentgym.trajectory.images import StoredImage, pixel_sha256
from agentgym.trajectory.reader import Episode, Problem, TrajectoryReader
from agentgym.trajectory.replay_guard import (
    DEFAULT_TIME_LIMIT_S,
    DEFAULT_WORK_LIMIT,
    ReplayBudget,
    ReplayTimeout,
    oversized_settings,
    refusal_message,
    settings_load,
    time_limit,
)


@dataclass
class Divergence:
    """Where a replayed episode first differs from its recording."""

    step: int
    """0 for the reset observation, else the 1-based step index."""
    field: str
    expected: Any
    got: Any
    diff: str = ""

    def describe(self) -> str:
        where = "reset" if self.step == 0 else f"step {self.step}"
        head = f"{where}: {self.field} differs: recorded {_short(self.expected)}, "
        head += f"replayed {_short(self.got)}"
        return head + (f"\n{self.diff}" if self.diff else "")


@dataclass
class EpisodeReplay:
    """The outcome of replaying one episode."""

    episode_id: str
    env_id: str | None
    task_id: str | None
    steps_recorded: int
    steps_checked: int = 0
    divergence: Divergence | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.divergence is None and self.error is None


@dataclass
class ReplayReport:
    """All episodes of a file: ``ok`` is True only when every one replayed identically."""

    path: str
    episodes: list[EpisodeReplay] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    budget: ReplayBudget | None = None
    """What the replay spent (work units) and was allowed (seconds, work)."""

    @property
    def work_used(self) -> float:
        """Work units spent: a reset or a step each, times its episode's settings load."""
        return 0.0 if self.budget is None else self.budget.work_used

    @property
    def ok(self) -> bool:
        return bool(self.episodes) and all(e.ok for e in self.episodes)

    @property
    def diverged(self) -> list[EpisodeReplay]:
        return [e for e in self.episodes if not e.ok]

    def format(self) -> str:
        """A human-readable report (what ``agentgym replay`` prints)."""
        lines = [f"replay of {self.path}: {len(self.episodes)} episodes"]
        for e in self.episodes:
            status = "ok" if e.ok else ("ERROR" if e.error else "DIVERGED")
            lines.append(
                f"  {status:8s} {e.episode_id}  {e.env_id}  task={e.task_id}  "
                f"steps {e.steps_checked}/{e.steps_recorded}"
            )
            if e.error:
                lines.append(f"           {e.error}")
            if e.divergence:
                lines.extend("           " + ln for ln in e.divergence.describe().splitlines())
        for p in self.problems:
            lines.append(f"  file problem {p}")
        if not self.episodes:
            lines.append("  no episodes found")
        if self.budget is not None:
            lines.append(f"  {self.budget.summary()}")
        bad = len(self.diverged)
        lines.append(
            "all episodes replayed identically"
            if self.ok
            else f"{bad} of {len(self.episodes)} episodes did not replay identically"
            if self.episodes
            else "nothing to replay"
        )
        return safe_text("\n".join(lines))  # printable: valid UTF-8 whatever was recorded

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "episodes": [
                {
                    "episode_id": e.episode_id,
                    "env_id": e.env_id,
                    "task_id": e.task_id,
                    "ok": e.ok,
                    "steps_recorded": e.steps_recorded,
                    "steps_checked": e.steps_checked,
                    "error": e.error,
                    "divergence": None
                    if e.divergence is None
                    else {
                        "step": e.divergence.step,
                        "field": e.divergence.field,
                        "expected": _short(e.divergence.expected),
                        "got": _short(e.divergence.got),
                        "diff": e.divergence.diff,
                    },
                }
                for e in self.episodes
            ],
            "problems": [str(p) for p in self.problems],
            "work_used": self.work_used,
            "work_limit": None if self.budget is None else self.budget.work,
            "time_limit_s": None if self.budget is None else self.budget.time_s,
        }


def _short(value: Any, n: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."


def _text_diff(expected: str, got: str, max_lines: int = 40) -> str:
    lines = list(
        difflib.unified_diff(
            expected.splitlines(), got.splitlines(), "recorded", "replayed", lineterm="", n=1
        )
    )
    if len(lines) > max_lines:
        lines = [*lines[:max_lines], f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


def _image_sig(image: Any) -> tuple[tuple[int, ...], str]:
    if isinstance(image, StoredImage):
        return tuple(image.shape), image.sha256
    if isinstance(image, Mapping):
        return tuple(image.get("shape", ())), str(image.get("sha256", ""))
    return tuple(image.shape), pixel_sha256(image)


def _compare_obs(step: int, recorded: Mapping[str, Any], live: Any) -> Divergence | None:
    live_text = live.get("text", "") if isinstance(live, Mapping) else str(live)
    rec_text = recorded.get("text", "")
    # The recorder stores observation text as valid UTF-8 (lone surrogates -> U+FFFD), so
    # an env that echoes a surrogate is compared in that same form.
    if isinstance(live_text, str):
        live_text = safe_text(live_text)
    if rec_text != live_text:
        return Divergence(
            step, "observation.text", rec_text, live_text, _text_diff(rec_text, live_text)
        )
    rec_images = [_image_sig(im) for im in recorded.get("images", []) or []]
    live_images = [
        _image_sig(im) for im in (live.get("images", ()) if isinstance(live, Mapping) else ())
    ]
    if rec_images != live_images:
        return Divergence(step, "observation.images", rec_images, live_images)
    return None


def _close(a: float, b: float, tol: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def _compare_step(
    index: int, rec: Mapping[str, Any], result: tuple, tol: float
) -> Divergence | None:
    obs, reward, terminated, truncated, info = result
    div = _compare_obs(index, rec.get("observation", {}) or {}, obs)
    if div:
        return div
    if not _close(float(rec.get("reward", 0.0)), float(reward), tol):
        return Divergence(index, "reward", rec.get("reward"), float(reward))
    rec_comp = rec.get("reward_components") or {}
    live_comp = info.get("reward_components") or {}
    if set(rec_comp) != set(live_comp) or any(
        not _close(float(rec_comp[k]), float(live_comp[k]), tol) for k in rec_comp
    ):
        return Divergence(index, "reward_components", dict(rec_comp), dict(live_comp))
    for flag, live_value in (("terminated", terminated), ("truncated", truncated)):
        if bool(rec.get(flag)) != bool(live_value):
            return Divergence(index, flag, rec.get(flag), bool(live_value))
    rec_info = rec.get("info") or {}
    if "success" in rec_info and bool(rec_info["success"]) != bool(info.get("success")):
        return Divergence(index, "success", rec_info["success"], info.get("success"))
    return None


class _EnvCache:
    """One built env per (id, kwargs), reused across episodes."""

    def __init__(self) -> None:
        self._envs: dict[bytes, gym.Env] = {}

    @staticmethod
    def _key(env_id: str, kwargs: Mapping[str, Any]) -> bytes:
        return pack([env_id, dict(kwargs)])

    def get(self, env_id: str, kwargs: Mapping[str, Any]) -> gym.Env:
        key = self._key(env_id, kwargs)
        if key not in self._envs:
            from agentgym.registry import get_record

            record = get_record(env_id)
            if record.multi_agent:
                raise ValueError(f"{env_id} is a multi-agent env; replay covers single-agent envs")
            self._envs[key] = gym.make(record.id, **dict(kwargs))
        return self._envs[key]

    def discard(self, env_id: str, kwargs: Mapping[str, Any]) -> None:
        """Close and forget an env (one interrupted mid-call is not reused)."""
        env = self._envs.pop(self._key(env_id, kwargs), None)
        if env is not None:
            with contextlib.suppress(Exception):
                env.close()

    def close(self) -> None:
        for env in self._envs.values():
            with contextlib.suppress(Exception):  # closing is best effort
                env.close()
        self._envs.clear()


def replay_episode(
    episode: Episode,
    *,
    reward_tol: float = 1e-9,
    env: gym.Env | None = None,
    trust_settings: bool = False,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    work_limit: float | None = DEFAULT_WORK_LIMIT,
) -> EpisodeReplay:
    """Replay one recorded episode (building its env unless ``env`` is given).

    ``trust_settings``, ``time_limit_s`` and ``work_limit`` as in :func:`replay`, for this
    one episode. A given ``env`` is the caller's: its settings are neither judged nor
    weighed (each reset and step costs one unit).
    """
    result = EpisodeReplay(episode.episode_id, episode.env_id, episode.task_id, len(episode.steps))
    cache = None if env is not None else _EnvCache()
    budget = ReplayBudget(time_limit_s, work_limit, scope="this episode")
    try:
        return _replay(episode, result, reward_tol, env, cache, trust_settings, budget)
    finally:
        if cache is not None:
            cache.close()


def _load(env_id: str, env_kwargs: Mapping[str, Any]) -> float:
    """The settings' load as a float (inf when too large for one)."""
    try:
        return float(settings_load(env_id, env_kwargs))
    except OverflowError:
        return math.inf


def _replay(
    episode: Episode,
    result: EpisodeReplay,
    tol: float,
    env: gym.Env | None,
    cache: _EnvCache | None,
    trust_settings: bool,
    budget: ReplayBudget,
) -> EpisodeReplay:
    start = episode.start
    if start is None:
        result.error = "the episode_start frame is missing (damaged file); cannot replay"
        return result
    env_id = str(start.get("env_id"))
    env_kwargs = start.get("env_kwargs") or {}
    if env is None and not trust_settings:
        findings = oversized_settings(env_id, env_kwargs)
        if findings:
            result.error = refusal_message(findings)
            return result
    load = 1.0 if env is not None else _load(env_id, env_kwargs)
    refusal = budget.refusal(load, len(episode.steps))
    if refusal is not None:
        result.error = refusal
        return result
    stage = ["building and resetting the env"]
    try:
        with time_limit(budget.time_left()) as check:
            charge = functools.partial(budget.charge, load)  # a reset or a step begins
            return _replay_steps(episode, start, result, tol, env, cache, check, charge, stage)
    except ReplayTimeout:
        if env is None and cache is not None:
            cache.discard(env_id, env_kwargs)
        settings = ", ".join(f"{k}={v!r}" for k, v in env_kwargs.items()) or "none"
        result.error = (
            f"stopped at the time limit of {budget.time_s:g} s for {budget.scope}, while "
            f"{stage[0]} (recorded env settings: {settings}); give more time with "
            "--time-limit SECONDS (time_limit_s=...), or 0 for no limit"
        )
        return result


def _replay_steps(
    episode: Episode,
    start: Mapping[str, Any],
    result: EpisodeReplay,
    tol: float,
    env: gym.Env | None,
    cache: _EnvCache | None,
    check: Callable[[], None],
    charge: Callable[[], None],
    stage: list[str],
) -> EpisodeReplay:
    try:
        charge()
        if env is None:
            assert cache is not None
            env = cache.get(str(start.get("env_id")), start.get("env_kwargs") or {})
        seed = episode.seed
        options = dict(start.get("options") or {})
        if seed is None:
            options.setdefault("task_id", start.get("task_id"))
        obs, info = env.reset(seed=seed, options=options or None)
    except Exception as exc:
        result.error = f"could not re-create the env: {type(exc).__name__}: {exc}"
        return result
    if info.get("task_id") != start.get("task_id"):
        result.divergence = Divergence(0, "task_id", start.get("task_id"), info.get("task_id"))
        return result
    div = _compare_obs(0, start.get("observation") or {}, obs)
    if div:
        result.divergence = div
        return result
    for rec in episode.steps:
        index = int(rec.get("step", result.steps_checked + 1))
        check()
        charge()
        stage[0] = f"replaying step {index}"
        try:
            live = env.step(rec.get("action", ""))
        except Exception as exc:
            result.error = f"step {index} raised {type(exc).__name__}: {exc}"
            return result
        result.steps_checked += 1
        div = _compare_step(index, rec, live, tol)
        if div:
            result.divergence = div
            return result
    return result


def replay(
    path: str | os.PathLike[str],
    *,
    episode_ids: Iterable[str] | None = None,
    max_episodes: int | None = None,
    reward_tol: float = 1e-9,
    trust_settings: bool = False,
    time_limit_s: float | None = DEFAULT_TIME_LIMIT_S,
    work_limit: float | None = DEFAULT_WORK_LIMIT,
) -> ReplayReport:
    """Replay every episode of ``path`` (or the chosen ones); see the module docstring.

    Args:
        trust_settings: Build envs with whatever settings the file names. By default an
            episode whose numeric settings are far beyond the registered env's, alone or
            together (see :mod:`.replay_guard`), is not replayed and reported as an error
            saying why.
        time_limit_s: Seconds the whole file's replay may take (every env build, reset and
            step). The episode running at the deadline is stopped, later ones are not
            started; each is reported as an error saying so. None or 0: no limit.
        work_limit: Work units the whole file's replay may spend: a reset or a step costs
            its episode's settings load (1 at the registered settings). An episode whose
            work does not fit in what is left is not started. None or 0: no limit.
    """
    wanted = None if episode_ids is None else set(episode_ids)
    report = ReplayReport(str(path), budget=ReplayBudget(time_limit_s, work_limit))
    assert report.budget is not None
    cache = _EnvCache()
    try:
        with TrajectoryReader(path) as reader:
            for ep in reader.episodes():
                if wanted is not None and ep.episode_id not in wanted:
                    continue
                if max_episodes is not None and len(report.episodes) >= max_episodes:
                    break
                result = EpisodeReplay(ep.episode_id, ep.env_id, ep.task_id, len(ep.steps))
                report.episodes.append(
                    _replay(ep, result, reward_tol, None, cache, trust_settings, report.budget)
                )
            report.problems = list(reader.problems)
    finally:
        cache.close()
    return report

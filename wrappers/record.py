"""``Record``: records every episode of an env to an ``.agtr`` trajectory file.

Observations, rewards and infos pass through unchanged. Each ``reset`` starts an episode in
the file (with the exact seed and options, so ``agentgym replay`` can repeat it), each
``step`` appends a step frame, and the step that ends the episode writes ``episode_end``.
Several ``Record`` wrappers (or an env pool's envs) may share one
:class:`agentgym.trajectory.Recorder`: pass the recorder instead of a path.

Examples:
    >>> import gymnasium as gym, tempfile, os
    >>> import agentgym
    >>> from agentgym.wrappers import Record
    >>> path = os.path.join(tempfile.mkdtemp(), "sokoban.agtr")
    >>> env = Record(gym.make("agentgym/Sokoban-Tiny-v0"), path)
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
    >>> env.close()
    >>> import agentgym.trajectory as trj
    >>> with trj.open(path) as reader:
    ...     [len(ep.steps) for ep in reader.episodes()]
    [1]
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, SupportsFloat

import gymnasium as gym

from agentgym.trajectory.recorder import Recorder


def _env_id_and_kwargs(env: gym.Env) -> tuple[str, dict[str, Any]]:
    spec = env.spec
    if spec is None:
        unwrapped = env.unwrapped
        return f"{type(unwrapped).__module__}:{type(unwrapped).__qualname__}", {}
    return spec.id, dict(spec.kwargs or {})


class Record(gym.Wrapper):
    """Records episodes to a trajectory file; changes nothing the agent sees.

    Args:
        env: Any agentgym env (built with ``gym.make`` so its id and kwargs are known).
        path_or_recorder: An ``.agtr`` path (this wrapper owns and closes the file) or a shared
            :class:`~agentgym.trajectory.Recorder`.
        fsync: ``fsync`` every frame (only when given a path).
        mode: ``"w"`` or ``"a"`` (only when given a path); with ``"a"`` wrappers in several
            processes may record into one file (locked appends, see docs/trajectory.md).
        env_kwargs: Override the constructor kwargs stored for replay (default: ``env.spec``'s).
        buffer_bytes: 0 (default) writes every frame at once (a crash loses at most the
            frame being written). Above 0 (only when given a path), frames are batched up to
            this many bytes and flushed at every episode end: cheaper per step, and a crash
            loses the frames of the episode in progress that were not flushed yet.
    """

    def __init__(
        self,
        env: gym.Env,
        path_or_recorder: str | os.PathLike[str] | Recorder,
        *,
        fsync: bool = False,
        mode: str = "w",
        env_kwargs: Mapping[str, Any] | None = None,
        buffer_bytes: int = 0,
    ):
        super().__init__(env)
        env_id, kwargs = _env_id_and_kwargs(env)
        self._env_id = env_id
        self._env_kwargs = dict(kwargs if env_kwargs is None else env_kwargs)
        if isinstance(path_or_recorder, Recorder):
            self.recorder = path_or_recorder
            self._owns = False
        else:
            self.recorder = Recorder(
                path_or_recorder, fsync, mode=mode, env_id=env_id, buffer_bytes=buffer_bytes
            )
            self._owns = True
        self.episode_id: str | None = None
        self._last_return_t: float | None = None

    def _end_open_episode(self) -> None:
        """End the episode in progress as aborted (unless a fork left it to the parent)."""
        if self.episode_id is not None and self.recorder.is_open(self.episode_id):
            self.recorder.end_episode(self.episode_id, aborted=True)
        self.episode_id = None

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        self._end_open_episode()
        obs, info = self.env.reset(**kwargs)
        self.episode_id = self.recorder.start_episode(
            env_id=self._env_id,
            obs=obs,
            info=info,
            seed=kwargs.get("seed"),
            options=kwargs.get("options"),
            env_kwargs=self._env_kwargs,
        )
        self._last_return_t = time.perf_counter()
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        t0 = time.perf_counter()
        obs, reward, terminated, truncated, info = self.env.step(action)
        t1 = time.perf_counter()
        if self.episode_id is not None and self.recorder.is_open(self.episode_id):
            policy_ms = None if self._last_return_t is None else (t0 - self._last_return_t) * 1e3
            self.recorder.record_step(
                self.episode_id,
                action=action if isinstance(action, str) else repr(action),
                obs=obs,
                reward=float(reward),
                terminated=terminated,
                truncated=truncated,
                info=info,
                policy_ms=policy_ms,
                env_ms=(t1 - t0) * 1e3,
            )
            if terminated or truncated:
                self.recorder.end_episode(self.episode_id)
                self.episode_id = None
        self._last_return_t = time.perf_counter()
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        self._end_open_episode()
        if self._owns:
            self.recorder.close()
        super().close()

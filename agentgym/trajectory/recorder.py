"""``Recorder``: turns env events (reset, step, end) into ``.agtr`` frames.

One recorder serves any number of envs at once (a pool, several ``play`` calls in threads):
every episode gets an id unique in the file, every frame carries it, and writes are
serialised by a lock. Ids are ``<random token>-<process id>-<counter>``, so recorders in
different processes appending to one file never clash; a forked child draws a new token and
leaves the episodes in progress at the fork to the parent (it records from its next reset). Use it directly, through :func:`Recorder.play_callbacks` with
:func:`agentgym.episodes.play`, or through the :class:`agentgym.wrappers.Record` wrapper.

Examples:
    >>> import tempfile, os
    >>> from agentgym.agents import OraclePolicy
    >>> from agentgym.episodes import play
    >>> path = os.path.join(tempfile.mkdtemp(), "run.agtr")
    >>> with Recorder(path) as rec:
    ...     summaries = play("agentgym/Sokoban-Tiny-v0", OraclePolicy(), episodes=2, seed=0,
    ...                      progress=False, **rec.play_callbacks("agentgym/Sokoban-Tiny-v0"))
    >>> import agentgym.trajectory as trj
    >>> with trj.open(path) as reader:
    ...     [ep.success for ep in reader.episodes()]
    [True, True]
"""

from __future__ import annotations

import os
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.text import safe_text
from agentgym.trajectory.images import PNG_COMPRESS_LEVEL, encode_image
from agentgym.trajectory.writer import TrajectoryWriter

#: Info keys that never go to disk by default: ChatHistory's full message list (the step
#: frame already holds the messages this step added) and keys stored at the top level.
DEFAULT_DROP_INFO_KEYS = ("messages",)
_TOP_LEVEL_INFO = frozenset({"reward_components", "tool_calls", "error", "action_valid"})


@dataclass
class _Open:
    """Running totals of one episode that has started and not yet ended."""

    env_id: str
    seed: int | None
    steps: int = 0
    ret: float = 0.0
    components: dict[str, float] = field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    success: bool = False


class Recorder:
    """Record episodes to one ``.agtr`` file.

    Args:
        path: Output file.
        fsync: ``fsync`` after each frame (power-loss safe, slower). Every frame is written
            to the OS immediately either way, so a killed process loses at most one frame.
        mode: ``"w"`` (new file, one writer) or ``"a"`` (append; a torn tail from a crash is
            cut first; any number of ``"a"`` recorders, in any processes, may share the file).
        env_id: The file's main env id, written in the header (episodes carry their own).
        drop_info_keys: Info keys not to store.
        observation_role: Chat role of env feedback in the recorded messages.
        png_compress_level: zlib level for screenshots (0-9; lossless at every level).
        header_extra: Extra header fields, e.g. ``{"run": "exp-12", "policy": "oracle"}``.
        buffer_bytes: 0 (default): every frame goes to the OS at once. Above 0: frames are
            batched up to this many bytes and flushed at every episode end, so a killed
            process loses only frames written since the last flush (see
            :class:`~agentgym.trajectory.writer.TrajectoryWriter`); saves a system call
            per step.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        fsync: bool = False,
        *,
        mode: str = "w",
        env_id: str | None = None,
        drop_info_keys: Sequence[str] = DEFAULT_DROP_INFO_KEYS,
        observation_role: str = "user",
        png_compress_level: int = PNG_COMPRESS_LEVEL,
        header_extra: Mapping[str, Any] | None = None,
        buffer_bytes: int = 0,
    ):
        self.writer = TrajectoryWriter(
            path,
            mode,
            fsync=fsync,
            env_id=env_id,
            header_extra=header_extra,
            buffer_bytes=buffer_bytes,
        )
        self.path = self.writer.path
        self.drop_info_keys = frozenset(drop_info_keys) | _TOP_LEVEL_INFO
        self.observation_role = observation_role
        self.png_compress_level = png_compress_level
        self._step_messages = (
            {"role": "assistant", "content_ref": "action"},
            {"role": observation_role, "content_ref": "observation"},
        )
        self._token = _new_token()
        self._count = 0
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()
        _LIVE_RECORDERS.add(self)

    def _after_fork_in_child(self) -> None:
        """A forked child: its own ids, and the parent's episodes in progress are not its."""
        self._lock = threading.Lock()
        self._token = _new_token()
        self._count = 0
        self._open = {}

    # ---- encoding helpers ------------------------------------------------------------------

    def _observation(self, obs: Any) -> dict[str, Any]:
        if not isinstance(obs, Mapping):
            return {"text": safe_text(str(obs)), "images": []}
        raw_images = obs.get("images")
        images = (
            [encode_image(im, self.png_compress_level) for im in raw_images] if raw_images else []
        )
        text = obs.get("text", "")
        out = {"text": safe_text(text) if isinstance(text, str) else text, "images": images}
        for key, value in obs.items():  # a richer observation dict keeps its extra keys
            if key not in out:
                out[key] = value
        return out

    def _info(self, info: Mapping[str, Any]) -> dict[str, Any]:
        drop = self.drop_info_keys
        return {k: v for k, v in info.items() if k not in drop}

    # ---- events ----------------------------------------------------------------------------

    def start_episode(
        self,
        *,
        env_id: str,
        obs: Any,
        info: Mapping[str, Any],
        seed: int | None = None,
        options: Mapping[str, Any] | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> str:
        """Write ``episode_start``; returns the new episode's id.

        ``seed`` and ``options`` must be exactly what ``reset`` got, so replay can repeat it.
        """
        with self._lock:
            self._count += 1
            episode_id = f"{self._token}-{self._count:06d}"
            self._open[episode_id] = _Open(env_id=env_id, seed=seed)
        observation = self._observation(obs)
        messages: list[dict[str, Any]] = []
        if info.get("system_prompt"):
            messages.append({"role": "system", "content_ref": "system_prompt"})
        messages.append({"role": "user", "content_ref": "observation"})
        self.writer.write(
            {
                "type": "episode_start",
                "episode_id": episode_id,
                "t": time.time(),
                "env_id": env_id,
                "env_kwargs": dict(env_kwargs or {}),
                "task_id": info.get("task_id"),
                "seed": seed,
                "options": None if options is None else dict(options),
                "system_prompt": info.get("system_prompt", ""),
                "instruction": info.get("instruction", ""),
                "tools": list(info.get("tools", []) or []),
                "messages": messages,
                "observation": observation,
                "info": self._info({k: v for k, v in info.items() if k != "tools"}),
                "meta": dict(meta or {}),
            }
        )
        return episode_id

    def record_step(
        self,
        episode_id: str,
        *,
        action: str,
        obs: Any,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
        generation: Any = None,
        policy_ms: float | None = None,
        env_ms: float | None = None,
    ) -> None:
        """Write one ``step`` frame."""
        # This runs once per env step, so it is kept lean (see benchmarks/bench_trajectory).
        reward = float(reward)
        components = info.get("reward_components") or {}
        # No recorder lock here: a dict lookup is atomic, and an episode's totals are only
        # touched by the one thread stepping that episode. The writer serialises the bytes.
        ep = self._open.get(episode_id)
        if ep is None:
            raise KeyError(f"episode {episode_id!r} is not open in this recorder")
        index = ep.steps + 1
        if type(obs) is dict and len(obs) == 2 and "text" in obs and not obs.get("images", 1):
            text = obs.get("text", "")  # the common text case
            if isinstance(text, str) and not text.isascii():
                text = safe_text(text)
            observation = {"text": text, "images": []}
        else:
            observation = self._observation(obs)
        model_output = None
        if generation is not None:
            model_output = {
                "token_ids": getattr(generation, "token_ids", None),
                "logprobs": getattr(generation, "logprobs", None),
            }
            text = getattr(generation, "text", action)
            if text != action:  # stored only when the executed action differs
                model_output["text"] = text
            meta = getattr(generation, "meta", None)
            if meta:
                model_output["meta"] = meta
        drop = self.drop_info_keys
        self.writer.write(
            {
                "type": "step",
                "episode_id": episode_id,
                "step": index,
                "t": time.time(),
                "messages": self._step_messages,
                "model_output": model_output,
                "action": action,
                "tool_calls": info.get("tool_calls", []),
                "action_valid": info.get("action_valid", True),
                "observation": observation,
                "reward": reward,
                "reward_components": components,
                "terminated": bool(terminated),
                "truncated": bool(truncated),
                "info": {k: v for k, v in info.items() if k not in drop},
                "timings": {"policy_ms": policy_ms, "env_ms": env_ms},
                "error": info.get("error"),
            }
        )
        # The totals count the step only now that it is in the file, so ``episode_end``
        # never claims a step the file does not hold.
        ep.steps = index
        ep.ret += reward
        sums = ep.components
        for k, v in components.items():
            sums[k] = sums.get(k, 0.0) + v
        ep.terminated, ep.truncated = bool(terminated), bool(truncated)
        if "success" in info:
            ep.success = bool(info["success"])

    def end_episode(
        self,
        episode_id: str,
        *,
        success: bool | None = None,
        seed: int | None = None,
        error: str | None = None,
        aborted: bool = False,
    ) -> dict[str, Any]:
        """Write ``episode_end`` (return, success, length, why it ended); returns the frame."""
        with self._lock:
            ep = self._open.pop(episode_id, None)
        if ep is None:
            raise KeyError(f"episode {episode_id!r} is not open in this recorder")
        if aborted:
            reason = "aborted"
        elif error:
            reason = "error"
        elif ep.terminated:
            reason = "terminated"
        elif ep.truncated:
            reason = "truncated"
        else:
            reason = "aborted"
        frame = {
            "type": "episode_end",
            "episode_id": episode_id,
            "t": time.time(),
            "return": ep.ret,
            "success": ep.success if success is None else bool(success),
            "length": ep.steps,
            "terminated": ep.terminated,
            "truncated": ep.truncated,
            "termination": reason,
            "seed": ep.seed if seed is None else seed,
            "reward_components": ep.components,
            "error": error,
        }
        self.writer.write(frame)
        if self.writer.buffer_bytes:
            self.writer.flush()  # an ended episode is on disk whole, even when batching
        return frame

    def is_open(self, episode_id: str) -> bool:
        """Whether ``episode_id`` was started by this recorder (in this process), not ended."""
        return episode_id in self._open

    @property
    def open_episodes(self) -> list[str]:
        """Ids of episodes started and not yet ended."""
        with self._lock:
            return list(self._open)

    # ---- agentgym.episodes.play ------------------------------------------------------------

    def play_callbacks(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        seed: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Callable[..., None]]:
        """``on_reset``/``on_step``/``on_end`` for :func:`agentgym.episodes.play`.

        Pass ``seed`` (the ``seed`` given to ``play``) to have each episode's seed in its
        ``episode_start`` frame; without it the seed is taken from the episode summary and
        written in ``episode_end``. ``meta`` is added to every episode's ``meta`` (e.g.
        ``{"mode": "greedy"}`` when one file holds several evaluations). Each call gets its
        own slot table, so several ``play`` runs may share one recorder concurrently.
        """
        from agentgym.registry import get_record

        full_id = get_record(env_id).id
        kwargs = dict(env_kwargs or {})
        extra = dict(meta or {})
        slots: dict[int, str] = {}

        def on_reset(slot: int, episode: int, obs: Any, info: Mapping[str, Any]) -> None:
            slots[slot] = self.start_episode(
                env_id=full_id,
                obs=obs,
                info=info,
                seed=None if seed is None else seed + episode,
                options=None,
                env_kwargs=kwargs,
                meta={**extra, "episode_index": episode},
            )

        def on_step(event: Any) -> None:
            self.record_step(
                slots[event.slot],
                action=event.action,
                obs=event.obs,
                reward=event.reward,
                terminated=event.terminated,
                truncated=event.truncated,
                info=event.info,
                generation=event.generation,
                policy_ms=event.policy_ms,
                env_ms=event.env_ms,
            )

        def on_end(slot: int, summary: Any) -> None:
            self.end_episode(
                slots.pop(slot),
                success=summary.success,
                seed=summary.seed,
                error=summary.error,
            )

        return {"on_reset": on_reset, "on_step": on_step, "on_end": on_end}

    # ---- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """End still-open episodes as ``aborted`` and close the file. Idempotent."""
        for episode_id in self.open_episodes:
            try:
                self.end_episode(episode_id, aborted=True)
            except Exception:  # the file may already be unusable; close anyway
                break
        self.writer.close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _new_token() -> str:
    """8 random hex digits and this process's id: unique among live processes, and a
    later process that reuses the pid still has a fresh random part."""
    return f"{uuid.uuid4().hex[:8]}-{os.getpid():x}"


_LIVE_RECORDERS: weakref.WeakSet[Recorder] = weakref.WeakSet()


def _recorders_after_fork_in_child() -> None:
    for recorder in list(_LIVE_RECORDERS):
        recorder._after_fork_in_child()


os.register_at_fork(after_in_child=_recorders_after_fork_in_child)

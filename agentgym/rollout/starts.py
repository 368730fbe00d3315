"""Where an episode of the rollout engine begins, when a bare ``reset(seed)`` is not enough.

The engine's task source is an iterable of seeds; an item may also be an
:class:`EpisodeStart`, which adds:

* reset ``options`` (e.g. ``{"task_id": ..., "user_seed": ...}``: pass@k evaluation plays
  one task several times, each with another simulated user);
* a ``snapshot`` to restore instead of resetting, with the ``chat`` and ``info`` the
  episode had at that point: a search (Tree-GRPO) continues a branch from any node of an
  earlier episode. Such an episode is a branch, not a whole episode: the engine reports it
  to ``on_episode`` only, never to ``on_reset``/``on_step``/``on_end`` (a recorder would
  otherwise write half an episode).

With ``RolloutConfig(keep_branch_points=True)`` every episode keeps a
:class:`BranchPoint` after its start and after every step that does not end it: the
snapshot, chat and info a later :class:`EpisodeStart` restores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.error import InvalidConfigError
from agentgym.rollout.steps import Chat


@dataclass(frozen=True)
class EpisodeStart:
    """One task for the engine: a seed, and optionally reset options or a snapshot."""

    seed: int
    options: Mapping[str, Any] | None = None
    """Passed to the env's ``reset(seed=..., options=...)``."""
    snapshot: Any = None
    """An env snapshot (``env.snapshot()``) to restore instead of resetting."""
    chat: Chat | None = None
    """With ``snapshot``: the chat the policy had read at that point (branched, not shared)."""
    info: Mapping[str, Any] | None = None
    """With ``snapshot``: the episode's merged info at that point."""
    group_id: str | None = None
    """The group's id; None: ``RolloutConfig.group_prefix`` + the seed."""
    tag: Any = None
    """The caller's own bookkeeping (e.g. the tree and node it branches from)."""

    def __post_init__(self) -> None:
        if self.snapshot is not None and (self.chat is None or self.info is None):
            raise InvalidConfigError(
                "an EpisodeStart with a snapshot needs the chat and info it had there too."
            )
        if self.snapshot is not None and self.options is not None:
            raise InvalidConfigError(
                "an EpisodeStart restores a snapshot or resets with options, not both."
            )

    @property
    def restores(self) -> bool:
        """True when the episode continues from a snapshot instead of a reset."""
        return self.snapshot is not None


@dataclass
class BranchPoint:
    """A state an episode passed through, as an :class:`EpisodeStart` can restore it."""

    snapshot: Any
    chat: Chat
    info: dict[str, Any] = field(default_factory=dict)

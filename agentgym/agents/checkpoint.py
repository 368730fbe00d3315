"""Saving and restoring a reference policy: one torch module built from one config dataclass.

The byte transformer and the word model keep their weights the same way, so a checkpoint
written by ``agentgym train`` is a plain dict (``config`` fields, ``model`` weights, and a
``kind`` where the loader must tell models apart) that :func:`agentgym.agents.load_policy`
reads back without knowing which trainer wrote it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from typing import Self


class ModuleCheckpoint:
    """``state_dict``/``load_state_dict``/``from_state_dict`` for a policy holding ``model``
    (its torch module) built from ``config`` (an instance of ``config_class``)."""

    config_class: ClassVar[type[Any]]
    checkpoint_kind: ClassVar[str | None] = None
    """Written as ``state["kind"]`` when set (older byte-model checkpoints have none)."""
    config: Any
    model: Any
    """The torch module (each policy's own class)."""

    def __init__(self, config: Any = None, *, device: str = "cpu", seed: int = 0) -> None:
        raise NotImplementedError  # pragma: no cover - each policy builds its own model

    def state_dict(self) -> dict[str, Any]:
        """The config's fields and the module's weights (and the kind, where there is one)."""
        kind = {"kind": self.checkpoint_kind} if self.checkpoint_kind else {}
        return {**kind, "config": asdict(self.config), "model": self.model.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load the weights of ``state`` into this policy's module (same config)."""
        self.model.load_state_dict(state["model"])

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], device: str = "cpu") -> Self:
        """A new policy with the config and weights of ``state``."""
        policy = cls(cls.config_class(**state["config"]), device=device)
        policy.load_state_dict(state)
        return policy

    def num_parameters(self) -> int:
        """The module's parameter count."""
        return sum(p.numel() for p in self.model.parameters())

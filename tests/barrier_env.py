"""An env whose step meets every other copy at a barrier (for the process-pool tests).

Each step drops a file named after the env into a shared folder, then waits for the others'
files. Only workers that really run at the same time all meet; if a pool stepped its workers
one after another, each would wait alone and report so after ``patience`` seconds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentgym.core import AgentEnv, ResetOutcome, StepOutcome
from agentgym.parsing import ParsedAction


class BarrierEnv(AgentEnv):
    metadata = {"family": "test", "render_modes": ["ansi"]}

    def __init__(self, folder: str, name: str, parties: int, patience: float = 20.0):
        super().__init__()
        self.folder, self.name, self.parties, self.patience = Path(folder), name, parties, patience

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return ["meet"]

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        return ResetOutcome(text="", instruction="meet the others")

    def _step(self, action: ParsedAction) -> StepOutcome:
        (self.folder / self.name).touch()
        deadline = time.monotonic() + self.patience
        while time.monotonic() < deadline:
            if len(list(self.folder.iterdir())) >= self.parties:
                return StepOutcome(text="together", terminated=True, success=True)
            time.sleep(0.01)
        return StepOutcome(text="alone", terminated=True)

    def state_key(self) -> str:
        return "s"


def make(folder: str, name: str, parties: int) -> BarrierEnv:
    return BarrierEnv(folder, name, parties)

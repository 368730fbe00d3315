"""Task generators: ``generate(rng, difficulty, seed) -> Scene`` for each task type.

Each module draws one kind of image at high resolution and returns its exact ground truth.
Generators draw every random choice from the ``rng`` they are given, so one seed always gives
the same image, question and answer.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import Callable

import numpy as np
from agentgym.simulators.visual.scene import Scene
from agentgym.simulators.visual.tasks.common import DIFFICULTIES

#: task type -> (module, one-line description)
TASK_TYPES: dict[str, tuple[str, str]] = {
    "doc": ("doc", "tiny-text document lookup: read one record's code on a dense page"),
    "chart": ("chart", "bar/line chart: read the exact value printed on one bar or point"),
    "table": ("table", "table QA: read a cell of a dense table, or add two cells"),
    "objects": ("objects", "small coloured shapes: count one kind, or say where two stand"),
    "signs": ("signs", "rotated or faint text: read the word on one framed label"),
    "clock": ("clock", "analogue clock: read the time on a small clock"),
    "gauge": ("gauge", "instrument panel: read one dial's needle against its fine ticks"),
    "geometry": ("geometry", "geometry to scale: measure a side or an angle of a triangle"),
    "maze": ("maze", "maze: length of the shortest path between two marked cells"),
    "lines": ("lines", "line tracing: follow a thin tangled line from a letter to a number"),
}

Generator = Callable[[np.random.Generator, str, int], Scene]


def get_generator(task_type: str) -> Generator:
    """The ``generate`` function of a task type (imported on first use)."""
    module, _ = TASK_TYPES[task_type]
    return importlib.import_module(f"agentgym.simulators.visual.tasks.{module}").generate


def generate(task_type: str, seed: int, difficulty: str = "medium") -> Scene:
    """Render the task of ``task_type`` for ``seed`` (deterministic).

    The generator's stream mixes in the task type and difficulty, so the same seed does not
    give correlated draws (e.g. "legible or not") across task types.
    """
    salt = zlib.crc32(f"{task_type}/{difficulty}".encode())
    return get_generator(task_type)(np.random.default_rng([seed, salt]), difficulty, seed)


__all__ = ["DIFFICULTIES", "TASK_TYPES", "generate", "get_generator"]

"""The household task sets: which (layout, slot) pairs each split holds.

A task id is ``household-l<layout>-t<slot>``. Splits follow ALFWorld's: ``train``;
``test_seen``, new tasks (other slots) in the training layouts; ``test_unseen``, tasks in
layouts whose object sets never occur in training (layout numbers from
:data:`~agentgym.simulators.household.UNSEEN_FROM`); ``valid``, more unseen layouts, kept
apart from ``test_unseen`` for choosing hyperparameters. ``test`` (the split every agentgym
tool evaluates on) is ``test_unseen``.
"""

from __future__ import annotations

import re

from agentgym.simulators.household import UNSEEN_FROM

from agentgym.tasks import SeededTaskSet

TRAIN_LAYOUTS = range(0, 300)
TEST_UNSEEN_LAYOUTS = range(UNSEEN_FROM, UNSEEN_FROM + 40)
VALID_LAYOUTS = range(UNSEEN_FROM + 40, UNSEEN_FROM + 80)

#: split -> (layouts, slots); the task set is every pair, layout-major.
SPLIT_TABLE: dict[str, tuple[range, range]] = {
    "train": (TRAIN_LAYOUTS, range(0, 200)),
    "test_seen": (TRAIN_LAYOUTS, range(200, 204)),
    "test_unseen": (TEST_UNSEEN_LAYOUTS, range(0, 25)),
    "valid": (VALID_LAYOUTS, range(0, 25)),
}
SPLIT_TABLE["test"] = SPLIT_TABLE["test_unseen"]
SPLITS = ("train", "test", "test_seen", "test_unseen", "valid")

_TASK_ID = re.compile(r"^household-l(\d+)-t(\d+)$")


def parse_task_id(task_id: str) -> tuple[int, int]:
    """``"household-l12-t7"`` -> ``(12, 7)``; ValueError for anything else."""
    m = _TASK_ID.match(task_id)
    if m is None:
        raise ValueError(f"not a household task id: {task_id!r}")
    return int(m.group(1)), int(m.group(2))


class LayoutTaskSet(SeededTaskSet):
    """The task ids of every (layout, slot) pair, as a lazy sequence (layout-major).

    Examples:
        >>> tasks = LayoutTaskSet(range(0, 3), range(10, 12))
        >>> len(tasks), tasks[0], tasks[-1]
        (6, 'household-l0-t10', 'household-l2-t11')
        >>> "household-l1-t11" in tasks, "household-l1-t12" in tasks
        (True, False)
    """

    def __init__(self, layouts: range, slots: range):
        super().__init__("household", 0, len(layouts) * len(slots))
        self.layouts, self.slots = layouts, slots

    def task_id_of(self, seed: int) -> str:
        layout, slot = divmod(seed, len(self.slots))
        return f"household-l{self.layouts[layout]}-t{self.slots[slot]}"

    def __contains__(self, task_id: object) -> bool:
        if not isinstance(task_id, str):
            return False
        try:
            layout, slot = parse_task_id(task_id)
        except ValueError:
            return False
        canonical = f"household-l{layout}-t{slot}" == task_id  # no leading zeros
        return canonical and layout in self.layouts and slot in self.slots

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.layouts!r}, {self.slots!r})"


def split_tasks(split: str) -> LayoutTaskSet:
    """The task set of ``split``."""
    layouts, slots = SPLIT_TABLE[split]
    return LayoutTaskSet(layouts, slots)

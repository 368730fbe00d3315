"""Task sets: the ids an env can be reset to, per split.

Procedural families name a task by the seed that generates it. ``SeededTaskSet`` is a lazy
sequence of such ids, so a split of a million tasks costs nothing to hold, and splits are
disjoint by construction (disjoint seed ranges).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

SPLITS = ("train", "test")


class SeededTaskSet(Sequence[str]):
    """Task ids ``f"{prefix}-{seed}"`` for ``seed`` in ``range(start, start + count)``.

    Examples:
        >>> train = SeededTaskSet("sokoban-6x6", start=0, count=10_000)
        >>> train[3], "sokoban-6x6-9999" in train, "sokoban-6x6-10000" in train
        ('sokoban-6x6-3', True, False)
        >>> SeededTaskSet.seed_of("sokoban-6x6-42")
        42
    """

    def __init__(self, prefix: str, start: int, count: int):
        self.prefix = prefix
        self.start = int(start)
        self.size = int(count)

    def __len__(self) -> int:
        return self.size

    def task_id_of(self, seed: int) -> str:
        """The id of the task that ``seed`` generates (subclasses may encode more in it)."""
        return f"{self.prefix}-{seed}"

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if index < 0:
            index += self.size
        if not 0 <= index < self.size:
            raise IndexError(f"task index {index} out of range 0..{self.size - 1}")
        return self.task_id_of(self.start + index)

    def __contains__(self, task_id: object) -> bool:
        if not isinstance(task_id, str):
            return False
        tail = task_id.rsplit("-", 1)[-1]
        if not tail.isdigit():
            return False
        seed = int(tail)
        return self.start <= seed < self.start + self.size and self.task_id_of(seed) == task_id

    def __iter__(self) -> Iterator[str]:
        return (self.task_id_of(s) for s in range(self.start, self.start + self.size))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.prefix!r}, start={self.start}, count={self.size})"

    @staticmethod
    def seed_of(task_id: str) -> int:
        """The generator seed a task id names."""
        return int(task_id.rsplit("-", 1)[1])


def seeded_splits(prefix: str, train: int = 100_000, test: int = 1_000) -> dict[str, SeededTaskSet]:
    """Disjoint train/test task sets: train seeds first, then test seeds."""
    return {
        "train": SeededTaskSet(prefix, 0, train),
        "test": SeededTaskSet(prefix, train, test),
    }

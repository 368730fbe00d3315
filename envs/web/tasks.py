"""Task-id sets for the web family: ``<prefix>-<kind>-<seed>`` over several kinds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from agentgym.error import InvalidConfigError


def chosen_kinds(kinds: Sequence[str] | None, known: Sequence[str], what: str) -> tuple[str, ...]:
    """``kinds`` as a tuple (``known`` when None or empty); unknown names are a typed error
    that says which ``what`` (e.g. "widget kinds") exist."""
    chosen = tuple(kinds) if kinds else tuple(known)
    unknown = [k for k in chosen if k not in known]
    if unknown:
        raise InvalidConfigError(f"unknown {what} {unknown}; known: {list(known)}")
    return chosen


class KindSeedTaskSet(Sequence[str]):
    """Ids ``f"{prefix}-{kind}-{seed}"``; index ``i`` is kind ``i % K``, seed ``start + i // K``.

    Lazy like :class:`agentgym.tasks.SeededTaskSet`; train and test use disjoint seed ranges.
    """

    def __init__(self, prefix: str, kinds: Sequence[str], start: int, per_kind: int):
        self.prefix, self.kinds = prefix, tuple(kinds)
        self.start, self.per_kind = int(start), int(per_kind)

    def __len__(self) -> int:
        return len(self.kinds) * self.per_kind

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"task index {index} out of range")
        k = len(self.kinds)
        return f"{self.prefix}-{self.kinds[index % k]}-{self.start + index // k}"

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def __contains__(self, task_id: object) -> bool:
        parsed = self.parse(task_id) if isinstance(task_id, str) else None
        return (
            parsed is not None
            and parsed[0] in self.kinds
            and self.start <= parsed[1] < self.start + self.per_kind
        )

    def parse(self, task_id: str) -> tuple[str, int] | None:
        if not task_id.startswith(self.prefix + "-"):
            return None
        kind, _, seed = task_id[len(self.prefix) + 1 :].rpartition("-")
        return (kind, int(seed)) if seed.isdigit() and kind else None


def kind_seed_splits(
    prefix: str, kinds: Sequence[str], train: int = 10_000, test: int = 1_000
) -> dict[str, KindSeedTaskSet]:
    return {
        "train": KindSeedTaskSet(prefix, kinds, 0, train),
        "test": KindSeedTaskSet(prefix, kinds, train, test),
    }

"""Two-party negotiation over a pool of items (Deal-or-No-Deal style).

A pool holds books, hats and balls (1-4 of each). Each side values each kind privately
(integers, the pool worth 10 to each side). Sides alternate; on its turn a side may
``talk``, ``propose`` what it keeps (the other side gets the rest), or ``accept`` the other
side's standing proposal. A deal gives each side the value of its share divided by the
value of the whole pool; no deal within the turn limit gives both 0.

:func:`scripted_negotiator` is a fair, deterministic counterpart: it accepts offers worth at
least ``accept_share`` of its pool value and otherwise proposes keeping its most valued
items up to about ``ask_share`` of its value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KINDS = ("books", "hats", "balls")


@dataclass
class NegotiationGame:
    """The pool, both sides' private values, and the standing proposal."""

    counts: dict[str, int]
    values: dict[str, dict[str, int]]
    sides: tuple[str, str]
    standing: tuple[str, dict[str, int]] | None = None
    deal: dict[str, dict[str, int]] | None = None
    log: list[str] = field(default_factory=list)

    @classmethod
    def generate(cls, seed: int, sides: tuple[str, str]) -> NegotiationGame:
        """A seeded pool where both sides value the whole pool at exactly 10."""
        rng = np.random.default_rng(seed)
        while True:
            counts = {k: int(rng.integers(1, 5)) for k in KINDS}
            values = {}
            for side in sides:
                vals = _values_summing_to(rng, counts, 10)
                if vals is None:
                    break
                values[side] = vals
            if len(values) == 2 and values[sides[0]] != values[sides[1]]:
                return cls(counts=counts, values=values, sides=sides)

    def other(self, side: str) -> str:
        return self.sides[1] if side == self.sides[0] else self.sides[0]

    def worth(self, side: str, share: Mapping[str, int]) -> int:
        return sum(self.values[side][k] * int(share.get(k, 0)) for k in KINDS)

    def check_keep(self, keep: Mapping[str, Any]) -> str | None:
        """Why a proposal is impossible, or None."""
        for k in KINDS:
            n = keep.get(k, 0)
            if not isinstance(n, int) or not 0 <= n <= self.counts[k]:
                return f"{k} must be a whole number from 0 to {self.counts[k]}."
        return None

    def propose(self, side: str, keep: Mapping[str, int]) -> None:
        self.standing = (side, {k: int(keep.get(k, 0)) for k in KINDS})

    def accept(self, side: str) -> bool:
        """Accept the other side's standing proposal; False when there is none."""
        if self.standing is None or self.standing[0] == side:
            return False
        proposer, keep = self.standing
        rest = {k: self.counts[k] - keep[k] for k in KINDS}
        self.deal = {proposer: keep, side: rest}
        return True

    def score(self, side: str) -> float:
        if self.deal is None:
            return 0.0
        return self.worth(side, self.deal[side]) / 10.0

    def describe(self, side: str) -> str:
        pool = ", ".join(f"{self.counts[k]} {k}" for k in KINDS)
        vals = ", ".join(f"{k} {self.values[side][k]} each" for k in KINDS)
        return f"The pool: {pool}. Your values: {vals} (the whole pool is worth 10 to you)."

    def state(self) -> Any:
        return {"standing": self.standing, "deal": self.deal}


def _values_summing_to(
    rng: np.random.Generator, counts: Mapping[str, int], total: int
) -> dict[str, int] | None:
    for _ in range(200):
        vals = {k: int(rng.integers(0, 6)) for k in KINDS}
        if sum(vals[k] * counts[k] for k in KINDS) == total and sum(vals.values()) > 0:
            return vals
    return None


def best_keep(game: NegotiationGame, side: str, share: float) -> dict[str, int]:
    """Keep the items of highest value to ``side`` until reaching ``share`` of its value."""
    keep = {k: 0 for k in KINDS}
    order = sorted(KINDS, key=lambda k: (-game.values[side][k], k))
    for k in order:
        for _ in range(game.counts[k]):
            if game.worth(side, keep) >= share * 10:
                return keep
            keep[k] += 1
    return keep


def scripted_negotiator(
    game: NegotiationGame, side: str, *, accept_share: float = 0.5, ask_share: float = 0.6
) -> tuple[str, dict[str, Any]]:
    """A deterministic counterpart's move: ``("accept", {})`` or ``("propose", keep)``."""
    if game.standing is not None and game.standing[0] != side:
        _proposer, keep = game.standing
        mine = {k: game.counts[k] - keep[k] for k in KINDS}
        if game.worth(side, mine) >= accept_share * 10:
            return "accept", {}
    return "propose", best_keep(game, side, ask_share)

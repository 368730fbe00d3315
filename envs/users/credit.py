"""Turn-level reward assignment and trajectory scoring for the user envs (UserRL-style).

Each step of a user env returns its *immediate* reward (the weighted sum of that turn's
components), as the contract requires. Multi-turn RL often wants something else per turn,
so at the end of an episode the env also reports, in ``info``:

* ``turn_rewards`` - one credited reward per turn, chosen by ``turn_credit``:

  - ``"raw"``: the immediate rewards unchanged;
  - ``"equalized"``: every turn gets the episode's mean reward (the sum is kept, spread evenly);
  - ``"r2g"``: reward-to-go, ``G_t = r_t + gamma * G_{t+1}`` (``credit_gamma``, default 0.8);
  - ``"exact"``: 1.0 for turns whose immediate reward was positive, else 0.0.

* ``trajectory_score`` - one number per episode, chosen by ``trajectory_score``:

  - ``"sum"``: the sum of immediate rewards;
  - ``"mean"``: their mean;
  - ``"r2g"``: the discounted sum from the first turn, ``sum_t gamma^t r_t`` (rewards that
    come earlier count more).

Examples:
    >>> credit_turns([0.0, 1.0, 0.0, 2.0], "r2g", gamma=0.5)
    [0.75, 1.5, 1.0, 2.0]
    >>> score_trajectory([0.0, 1.0, 0.0, 2.0], "mean")
    0.75
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgym.error import InvalidConfigError

TURN_CREDITS = ("raw", "equalized", "r2g", "exact")
TRAJECTORY_SCORES = ("sum", "mean", "r2g")


def check_options(turn_credit: str, trajectory_score: str, gamma: float) -> None:
    """Raise :class:`InvalidConfigError` for unknown modes or a gamma outside [0, 1]."""
    if turn_credit not in TURN_CREDITS:
        raise InvalidConfigError(f"turn_credit must be one of {TURN_CREDITS}, got {turn_credit!r}.")
    if trajectory_score not in TRAJECTORY_SCORES:
        raise InvalidConfigError(
            f"trajectory_score must be one of {TRAJECTORY_SCORES}, got {trajectory_score!r}."
        )
    if not 0.0 <= gamma <= 1.0:
        raise InvalidConfigError(f"credit_gamma must be in [0, 1], got {gamma}.")


def credit_turns(rewards: Sequence[float], mode: str = "raw", gamma: float = 0.8) -> list[float]:
    """Per-turn credited rewards (see the module docstring)."""
    check_options(mode, "sum", gamma)
    r = [float(x) for x in rewards]
    if not r or mode == "raw":
        return r
    if mode == "equalized":
        mean = sum(r) / len(r)
        return [mean] * len(r)
    if mode == "exact":
        return [1.0 if x > 0 else 0.0 for x in r]
    out = [0.0] * len(r)
    g = 0.0
    for t in range(len(r) - 1, -1, -1):
        g = r[t] + gamma * g
        out[t] = g
    return out


def score_trajectory(rewards: Sequence[float], mode: str = "sum", gamma: float = 0.8) -> float:
    """One score per episode (see the module docstring)."""
    check_options("raw", mode, gamma)
    r = [float(x) for x in rewards]
    if not r:
        return 0.0
    if mode == "sum":
        return sum(r)
    if mode == "mean":
        return sum(r) / len(r)
    return sum(x * gamma**t for t, x in enumerate(r))

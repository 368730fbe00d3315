"""Sokoban levels are pinned: the same seed gives the same level, start, plan and generator
state as the first release, so task ids and recorded trajectories stay valid whatever the
generator's speed-ups.

The digests were computed with the generator as first released (before any optimisation);
a change to any level, start cell, optimal plan, observation or the number of draws taken
from the caller's generator changes them.
"""

from __future__ import annotations

import hashlib

import gymnasium as gym
import numpy as np
import pytest
from agentgym.simulators.grid import sokoban
from agentgym.simulators.grid.sokoban import generate_level, render, solve

import agentgym  # noqa: F401

#: name -> (generate_level keyword arguments, seeds, sha256 of what they produce)
LEVELS = {
    "tiny": (
        {"height": 5, "width": 5, "num_boxes": 1, "min_solution": 2, "pull_steps": 40},
        range(200),
        "3c37369ce076784cbd48396fb26e0f1c2f3ed9cb66a5fac089ad5b23c3e6ff03",
    ),
    "small": (
        {"height": 6, "width": 6, "num_boxes": 1, "min_solution": 4, "pull_steps": 60},
        range(200),
        "e1c054a19292ebd0f2fabff73c9d8eec849a8419af74e8499328b12b3ed91432",
    ),
    "medium": (
        {"height": 7, "width": 7, "num_boxes": 2, "min_solution": 6, "pull_steps": 80},
        range(200),
        "1bc2522ad552c45d3ebf6498641b528b3fef657841f4efbaedbcf4a612ca08ac",
    ),
    "large": (
        {"height": 8, "width": 8, "num_boxes": 3, "min_solution": 8, "pull_steps": 100},
        range(60),
        "0b195981407b957f7f083acc4a35e4f2a8a99e00db8797cbcdb62c51f88b2af9",
    ),
    "walls": (
        {
            "height": 9,
            "width": 7,
            "num_boxes": 2,
            "min_solution": 3,
            "pull_steps": 30,
            "wall_prob": 0.3,
        },
        range(200),
        "88b2051a7d25a4f0d28e705319f4b215c901fda410e2bb7a35eabdfb51b1d4bd",
    ),
}


def _levels_digest(kwargs: dict, seeds: range) -> str:
    h = hashlib.sha256()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        level, state, plan = generate_level(rng, **kwargs)
        h.update(render(level, state).encode())
        h.update(repr(state.player).encode())
        h.update(",".join(plan).encode())
        h.update(repr(sorted(level.walls)).encode())
        # the caller's generator is left where the first release left it
        h.update(repr(rng.integers(1 << 62)).encode())
    return h.hexdigest()


@pytest.mark.parametrize("name", sorted(LEVELS))
def test_generated_levels_match_the_first_release(name):
    kwargs, seeds, expected = LEVELS[name]
    assert _levels_digest(kwargs, seeds) == expected


#: env size -> (reset seeds, sha256 of resets and oracle episodes)
EPISODES = {
    "Tiny": (range(60), "adf14770a8cdd4d0a33f157b3b6ba98c77a9db99ece05050d1d625ad57893440"),
    "Small": (range(60), "b9974ccb1cf1238c36b88f5d79d318e63a72692c5c330edde77e17cf6b090f1d"),
    "Medium": (range(60), "2f87938f8d505ca3035442beeaae8213b0f2d8065243a123254cc8ea366c08b5"),
    "Large": (range(20), "f4864a6c03595195c475c34edf710e01cf2dbf64cf98f8dd7f9117fc1c4937f2"),
}


@pytest.mark.parametrize("size", sorted(EPISODES))
def test_env_episodes_match_the_first_release(size):
    seeds, expected = EPISODES[size]
    env = gym.make(f"agentgym/Sokoban-{size}-v0", disable_env_checker=True)
    h = hashlib.sha256()
    for seed in seeds:
        obs, info = env.reset(seed=seed)
        h.update(obs["text"].encode())
        h.update(info["task_id"].encode())
        h.update(info["state_key"].encode())
        for _ in range(40):
            action = env.unwrapped.oracle_action()
            h.update(action.encode())
            obs, reward, terminated, truncated, info = env.step(action)
            h.update(obs["text"].encode())
            h.update(repr(reward).encode())
            h.update(info["state_key"].encode())
            if terminated or truncated:
                break
    env.close()
    assert h.hexdigest() == expected


@pytest.mark.parametrize("name", ["tiny", "walls"])
def test_levels_are_the_same_with_numpy_calls_for_every_draw(name, monkeypatch):
    """The generator's fallback (numpy's own calls, for bit generators other than PCG64 or a
    numpy whose draws the raw model does not match) gives the pinned levels too."""
    monkeypatch.setattr(sokoban, "_RAW_MODEL_HOLDS", False)
    kwargs, seeds, expected = LEVELS[name]
    assert _levels_digest(kwargs, seeds) == expected


def test_the_raw_draw_model_holds_for_this_numpy():
    assert sokoban._raw_model_holds() is True


def _walk_with_numpy_calls(rng, is_floor, width, player, boxes, steps):
    """The reverse play as first written: one numpy call per draw (the reference)."""
    offsets = (-width, width, -1, 1)
    for _ in range(steps):
        offset = offsets[int(rng.integers(4))]
        nxt = player + offset
        if not is_floor[nxt] or nxt in boxes:
            continue
        if player - offset in boxes and rng.random() < 0.8:
            boxes.discard(player - offset)
            boxes.add(player)
        player = nxt
    return player


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.Philox, np.random.MT19937])
def test_the_reverse_play_draws_what_numpy_calls_draw(bits):
    side = 8
    is_floor = bytearray(
        1 if 0 < i // side < side - 1 and 0 < i % side < side - 1 else 0 for i in range(side**2)
    )
    for seed in range(30):
        ends = []
        for walk in (sokoban._reverse_play, _walk_with_numpy_calls):
            rng = np.random.Generator(bits(seed))
            rng.choice(10, size=seed % 3 + 1, replace=False)  # may leave a 32-bit half buffered
            boxes = {2 * side + 2, 3 * side + 4, 4 * side + 3}
            player = walk(rng, is_floor, side, 3 * side + 3, boxes, 50)
            ends.append((player, sorted(boxes), rng.integers(4), rng.integers(4), rng.random()))
        assert ends[0] == ends[1]
    level, state, plan = generate_level(np.random.Generator(bits(3)), 6, 6, 1)
    for step in plan:
        state = sokoban.move(level, state, step).state
    assert state.solved(level)


def test_the_cell_search_finds_the_plans_of_the_state_search():
    """solve() numbers the cells of enclosed levels; on every state along the oracle's way
    through 40 levels its plan is the one the general search over states finds."""
    checked = 0
    for seed in range(40):
        level, state, plan = generate_level(np.random.default_rng(seed), 7, 7, 2, min_solution=6)
        for step in plan:  # every state before the last move is unsolved
            assert solve(level, state) == sokoban._solve_any(level, state, 200_000)
            checked += 1
            state = sokoban.move(level, state, step).state
        assert solve(level, state) == []
    assert checked > 200


def test_a_level_the_player_can_walk_out_of_is_searched_as_states():
    level, state = sokoban.parse("__$.\n#@##")  # no ring of walls: the player may leave
    assert not sokoban._enclosed(level, state)
    assert solve(level, state) == sokoban._solve_any(level, state, 200_000) is not None

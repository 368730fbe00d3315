"""SearchQA-v0's env-side cost per reset and per step, against Sokoban-Tiny in the same run.

Rows, timed interleaved round by round (``benchmarks.timing``), per operation:

* **world build, cold**: a new world (entities, relations), its articles and the BM25 index
  (``bm25s``), what the first reset of a world costs in a process (later resets of the world
  reuse it from the per-process cache);
* **reset**: ``env.reset(seed)`` on a cached world (the question, the first observation,
  the candidate list, the state key), against Sokoban-Tiny's reset (level generation);
* **step**: the full ``env.step`` (parse, validate, BM25 search or article, candidate list,
  state key, info) replaying recorded oracle episodes (search, opens, answer; resets not
  counted), and the ``search`` and ``open`` calls alone, against Sokoban-Tiny's step with
  the four moves as tool calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gymnasium as gym
from agentgym.envs.search.searchqa import SearchQAEnv
from agentgym.simulators.search import Encyclopedia, build_world, get_encyclopedia

import agentgym  # noqa: F401  (registers the envs)
from agentgym.parsing import render_tool_call
from benchmarks.cli import exit_on_help
from benchmarks.timing import interleaved, min_median

SOKOBAN = "agentgym/Sokoban-Tiny-v0"
MOVES = [render_tool_call("move", {"direction": d}) for d in ("up", "down", "left", "right")]


def _oracle_episodes(env: SearchQAEnv, seeds: range) -> list[tuple[int, list[str]]]:
    out = []
    for seed in seeds:
        env.reset(seed=seed)
        actions: list[str] = []
        while True:
            action = env.oracle_action()
            actions.append(action)
            _, _, term, trunc, _ = env.step(action)
            if term or trunc:
                break
        out.append((seed, actions))
    return out


def _replay(
    env: gym.Env, episodes: list[tuple[int, list[str]]], steps: list[int]
) -> Callable[[], float]:
    """One unit: every recorded episode once; returns the reset time to leave out."""

    def unit() -> float:
        excluded = 0.0
        for seed, actions in episodes:
            start = time.perf_counter()
            env.reset(seed=seed)
            excluded += time.perf_counter() - start
            for action in actions:
                env.step(action)
        steps[0] = sum(len(a) for _, a in episodes)
        return excluded

    return unit


def _single_call(env: SearchQAEnv, calls: list[str], seed: int) -> Callable[[], float]:
    """One unit: each call as one step of a fresh episode (resets left out)."""

    def unit() -> float:
        excluded = 0.0
        for call in calls:
            start = time.perf_counter()
            env.reset(seed=seed)
            excluded += time.perf_counter() - start
            env.step(call)
        return excluded

    return unit


def _sokoban_steps(env: gym.Env, n: int) -> Callable[[], float]:
    state = {"i": 0, "episode": 0}
    env.reset(seed=0)

    def unit() -> float:
        excluded = 0.0
        for _ in range(n):
            i = state["i"]
            state["i"] += 1
            *_, term, trunc, _ = env.step(MOVES[(i * 7 + i // 3) % 4])
            if term or trunc:
                start = time.perf_counter()
                state["episode"] += 1
                env.reset(seed=state["episode"])
                excluded += time.perf_counter() - start
        return excluded

    return unit


def _resets(env: gym.Env, seeds: list[int]) -> Callable[[], None]:
    def unit() -> None:
        for seed in seeds:
            env.reset(seed=seed)

    return unit


def run(quick: bool = False) -> str:
    """Measure the rows (fewer rounds when ``quick``); a markdown section."""
    rounds = 3 if quick else 9
    n_eps = 10 if quick else 40
    search = SearchQAEnv()  # unwrapped: the env-side cost, as Sokoban below
    sokoban = gym.make(SOKOBAN).unwrapped
    get_encyclopedia(0, 0)  # warm world 0 and the bm25s import
    episodes = _oracle_episodes(search, range(n_eps))
    oracle_steps = [0]
    world = get_encyclopedia(0, 0).world
    names = [world[i].name for i in world.by_kind["person"][:20]]
    searches = [render_tool_call("search", {"query": f"{n} born"}) for n in names]
    opens = [render_tool_call("open", {"title": n}) for n in names]
    build_seeds = iter(range(10_000, 10_000 + rounds))
    reset_seeds = list(range(n_eps))

    def build() -> None:
        Encyclopedia(build_world(next(build_seeds)))

    units: dict[str, Callable[[], object]] = {
        "build": build,
        "search_reset": _resets(search, reset_seeds),
        "sokoban_reset": _resets(sokoban, reset_seeds),
        "search_step": _replay(search, episodes, oracle_steps),
        "search_call": _single_call(search, searches, 0),
        "open_call": _single_call(search, opens, 0),
        "sokoban_step": _sokoban_steps(sokoban, 200),
    }
    per_unit = {
        "build": 1,
        "search_reset": len(reset_seeds),
        "sokoban_reset": len(reset_seeds),
        "search_step": None,
        "search_call": len(searches),
        "open_call": len(opens),
        "sokoban_step": 200,
    }
    times = interleaved(units, rounds, rotate=True)
    per_unit["search_step"] = oracle_steps[0]

    def us(name: str) -> tuple[float, float]:
        lo, med = min_median(times[name])
        count = per_unit[name] or 1
        return lo / count * 1e6, med / count * 1e6

    def row(label: str, name: str, base: str | None = None) -> str:
        lo, med = us(name)
        ratio = f"{med / us(base)[1]:.1f}x" if base else "-"
        return f"| {label} | {lo:,.0f} | {med:,.0f} | {ratio} |"

    lines = [
        "## SearchQA-v0: env-side cost per reset and per step",
        "",
        f"Interleaved over {rounds} rounds; microseconds per operation (min and median over "
        f"rounds); ratio = median against Sokoban-Tiny's median in the same run. Step rows "
        f"replay {n_eps} recorded oracle episodes ({oracle_steps[0]} steps: a search, 1-4 "
        "opens, an answer) with resets left out; the single-call rows are one search or open "
        "of a person's name on a fresh episode. Both envs unwrapped (no gym.make wrappers).",
        "",
        "| operation | min µs | median µs | vs Sokoban-Tiny |",
        "|---|---|---|---|",
        row("SearchQA world build, cold (3,395 entities, articles, BM25 index)", "build"),
        row("SearchQA reset (world cached)", "search_reset", "sokoban_reset"),
        row("Sokoban-Tiny reset", "sokoban_reset"),
        row("SearchQA step, oracle episodes (mixed calls)", "search_step", "sokoban_step"),
        row("SearchQA step, one search call (BM25 top 3)", "search_call", "sokoban_step"),
        row("SearchQA step, one open call", "open_call", "sokoban_step"),
        row("Sokoban-Tiny step (a move)", "sokoban_step"),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    exit_on_help(__doc__, "python -m benchmarks.bench_search")
    print(run(quick=True))

"""One module plays episodes: no ``.step(`` in a loop outside the rollout core (issue 33).

``agentgym run``/``demo``/``demos`` (``episodes.play``), the trainer's group and tree
rollouts, held-out evaluation (``train`` and ``eval``), pass@k evaluation
(``evaluation.evaluate``) and the adapters that play episodes all call the rollout engine
(``agentgym/rollout/``). This test reads every installed module with ``ast`` and lists each
``x.step(...)`` call inside a ``for``/``while`` loop or a comprehension (in the same
function). Such calls may live only in the engine, in the env pools that step many envs at
once, and in the places :data:`ALLOWED` names, each with its reason. An allowed place that
no longer steps in a loop fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.test_layout_imports import MAPPED, ROOT, library_modules

CORE = ("agentgym/rollout/", "agentgym/pools/")
"""The engine, and the pools that step many envs at once (Gymnasium's vector/ role)."""

ALLOWED: dict[str, str] = {
    "agentgym/testing.py": "the conformance checks: the contract check steps envs itself, "
    "so a broken engine cannot hide a broken env",
    "agentgym/trajectory/replay.py": "replays a recording's actions to check determinism: "
    "no policy, and every step is compared with the recorded one",
    "agentgym/core.py": "restore() rebuilds a state by replaying the snapshot's actions "
    "inside one env",
    "agentgym/cli/cmd_play.py": "a human at the terminal, one env, input() between steps: "
    "the engine's worker threads and env timeouts would cut a person off mid-thought",
    "agentgym/integrations/trl.py": "forwards each finished completion's text answer as one "
    "last step of its session: TRL's trainer plays the episode",
    "agentgym/algos/trainer.py": "self.step() is one training iteration, not an env step",
}


LOOPS = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _is_loop(node: ast.AST) -> bool:
    return isinstance(node, LOOPS)


def steps_in_loops(source: str) -> Iterator[int]:
    """Line numbers of ``<expr>.step(...)`` calls inside a loop of the same function."""

    def walk(node: ast.AST, in_loop: bool) -> Iterator[int]:
        for child in ast.iter_child_nodes(node):
            inner = in_loop or _is_loop(node)
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                inner = False  # a function defined in a loop is not itself looping
            if (
                inner
                and isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == "step"
            ):
                yield child.lineno
            yield from walk(child, inner)

    yield from walk(ast.parse(source), False)


def library_step_loops() -> dict[str, list[int]]:
    """File (relative to the checkout) -> lines that step in a loop, outside the core."""
    found: dict[str, list[int]] = {}
    for path in library_modules(ROOT, MAPPED).values():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(CORE):
            continue
        lines = list(steps_in_loops(path.read_text(encoding="utf-8")))
        if lines:
            found[rel] = lines
    return found


def test_only_the_rollout_core_steps_envs_in_a_loop() -> None:
    found = library_step_loops()
    unexpected = {f: lines for f, lines in found.items() if f not in ALLOWED}
    assert not unexpected, (
        "these files step envs in a loop of their own; play episodes through the rollout "
        f"engine (agentgym.rollout) instead, or add the file to ALLOWED with its reason: "
        f"{unexpected}"
    )


def test_every_allowed_place_still_steps_in_a_loop() -> None:
    found = library_step_loops()
    stale = sorted(set(ALLOWED) - set(found))
    assert not stale, f"no longer step in a loop: remove from ALLOWED: {stale}"


def test_the_check_finds_loops_and_only_loops() -> None:
    source = (
        "def play(env, policy):\n"
        "    env.step('once')\n"  # line 2: not in a loop
        "    while True:\n"
        "        env.step(policy())\n"  # line 4
        "    for a in policy:\n"
        "        def later():\n"
        "            env.step(a)\n"  # line 7: defined in the loop, not run by it
        "    [env.step(a) for a in policy]\n"  # line 8
        "    async def run():\n"
        "        async for a in policy:\n"
        "            await pool.step({0: a})\n"  # line 11
    )
    assert list(steps_in_loops(source)) == [4, 8, 11]
    assert Path(ROOT / CORE[0]).is_dir()

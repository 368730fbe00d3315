"""Every registered id, hostile model output, recorded, viewed, exported and replayed (issue 23).

For each single-agent id, hypothesis writes a few turns full of what models really emit
when they go wrong (browser ids get only the fixed turns that hold every value once, as
Chromium makes more examples too slow; their ``*Text`` twins get the hypothesis examples): lone surrogates (raw and as JSON escapes), NULs, arrays nested thousands deep,
numbers too large for any type, unclosed tags, and calls to the env's own tools with such
values in every argument. Each turn goes through ``Record``; the file then goes through
``agentgym view``, ``export`` and ``replay``. Nothing may raise, replay must report every
episode identical, and every observation, the page and the export must be valid UTF-8.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from agentgym.wrappers import Record
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from trajectory_helpers import run_cli

import agentgym

BROWSER_ONLY = {"agentgym/WebForms-v0", "agentgym/WebShop-v0", "agentgym/WebTodo-v0"}
BROWSER_ONLY |= {"agentgym/WebWidgets-v0", "agentgym/WebWiki-v0"}
SANDBOX = ("agentgym/Code",)  # a jailed Python per cell: fewer examples


def _ids() -> list[str]:
    return [
        r.id
        for r in agentgym.list_envs()
        if not r.multi_agent and r.id not in BROWSER_ONLY and r.family != "tests"
    ]


def _deep(n: int) -> str:
    return "[" * n + "]" * n


JSON_VALUES = st.one_of(
    st.sampled_from(
        [
            '"\\ud800"',  # a lone surrogate as a JSON escape (pure ASCII text)
            '"x\\u0000y"',  # a NUL
            '"\\udfff\\ud83d half emoji"',
            '"\ud83d raw half emoji"',  # a raw lone surrogate inside the JSON string
            '"7\\ud800"',
            '"1"',
            '"3"',
            "2",
            "1e999",  # parses as inf
            "-1e999",
            "9" * 5000,  # more digits than Python converts
            str(2**200),
            "null",
            "true",
            '"' + "a\\u0000" * 300 + '"',
        ]
    ),
    st.integers(1, 3000).map(_deep),  # nesting from harmless to far past any limit
)
ANSWERS = st.sampled_from(["\ud800", "9" * 5000, "1e999", "", "\x00"])
JUNK_TEXT = st.sampled_from(
    ["", "\ud800 think", "\x00\x00", "\udc80", "<think>", "<tool_call>", "</answer>", "  "]
)


@st.composite
def hostile_turn(draw: st.DrawFn, tools: list[dict[str, Any]]) -> str:
    """One model turn: junk text around calls to the env's tools with hostile arguments."""
    parts = [draw(JUNK_TEXT)]
    for _ in range(draw(st.integers(0, 2))):
        fn = draw(st.sampled_from(tools))["function"] if tools else {"name": "x"}
        names = list((fn.get("parameters") or {}).get("properties", {})) or ["arg"]
        args = ", ".join(f'"{name}": {draw(JSON_VALUES)}' for name in names)
        parts.append(f'<tool_call>{{"name": "{fn["name"]}", "arguments": {{{args}}}}}</tool_call>')
    if draw(st.booleans()):
        parts.append("<answer>" + draw(ANSWERS))
        parts.append(draw(st.sampled_from(["</answer>", ""])))
    parts.append(draw(JUNK_TEXT))
    return "".join(parts)


def kitchen_sink(tools: list[dict[str, Any]]) -> list[str]:
    """A fixed list of turns holding every hostile value above at least once."""
    values = [
        '"\\ud800"',
        '"x\\u0000y"',
        '"\ud83d raw"',
        "1e999",
        "9" * 5000,
        _deep(985),
        '"7\\ud800"',
        '"1"',
    ]
    turns = ["\ud800 think", "\x00\x00", "<tool_call>" + _deep(985)]
    for i, tool in enumerate(tools):
        fn = tool["function"]
        names = list((fn.get("parameters") or {}).get("properties", {})) or ["arg"]
        args = ", ".join(f'"{n}": {values[(i + j) % len(values)]}' for j, n in enumerate(names))
        turns.append(f'<tool_call>{{"name": "{fn["name"]}", "arguments": {{{args}}}}}</tool_call>')
    turns.append("<answer>\ud800" + "9" * 5000 + "</answer>")
    return turns


_TOOLS: dict[str, list[dict[str, Any]]] = {}


def _tools(env_id: str) -> list[dict[str, Any]]:
    if env_id not in _TOOLS:
        env = gym.make(env_id)
        _TOOLS[env_id] = list(env.reset(seed=0)[1].get("tools") or [])
        env.close()
    return _TOOLS[env_id]


def _record(env_id: str, seed: int, turns: list[str], path: Path) -> None:
    env = Record(gym.make(env_id), path)
    env.reset(seed=seed)
    for turn in turns:
        obs, _, terminated, truncated, _ = env.step(turn)
        obs["text"].encode("utf-8")  # observations are valid UTF-8
        if terminated or truncated:
            env.reset(seed=seed + 1)
    env.close()


def _check_file(path: Path) -> None:
    code, out = run_cli("replay", str(path))
    assert code == 0 and "all episodes replayed identically" in out, out
    out.encode("utf-8")
    html, jsonl = path.with_suffix(".html"), path.with_suffix(".jsonl")
    assert run_cli("view", str(path), "-o", str(html))[0] == 0
    assert run_cli("export", str(path), "-o", str(jsonl))[0] == 0
    html.read_bytes().decode("utf-8")
    for line in jsonl.read_bytes().decode("utf-8").splitlines():
        for message in json.loads(line)["messages"]:
            json.dumps(message, ensure_ascii=False).encode("utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("env_id", _ids())
def test_hostile_turns_record_view_export_and_replay(env_id: str):
    tools = _tools(env_id)
    examples = 1 if env_id.startswith(SANDBOX) else 2

    @example(seed=7, turns=kitchen_sink(tools))
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(seed=st.integers(0, 50), turns=st.lists(hostile_turn(tools), min_size=1, max_size=3))
    def run(seed: int, turns: list[str]) -> None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "fuzz.agtr"
            _record(env_id, seed, turns, path)
            _check_file(path)

    run()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("env_id", sorted(BROWSER_ONLY))
def test_browser_ids_take_every_hostile_value_through_record_and_replay(env_id: str):
    """The browser twins get the fixed turns holding every hostile value once (Chromium makes
    hypothesis's extra examples too slow for CI); replay re-runs them in a real browser."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.agtr"
        _record(env_id, 7, kitchen_sink(_tools(env_id)), path)
        _check_file(path)

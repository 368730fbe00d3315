"""`agentgym play ID`: a person plays any text id at the terminal (issue 37).

Turns come from stdin, as a person types them (or a file pipes them in): menu numbers,
tool arguments asked one by one, typed turns, and the ``:h``/``:r``/``:q`` commands.
"""

from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

from agentgym.cli import main as cli_main
from agentgym.cli.cmd_play import _hint, _value
from tests.integrations.oracle_answers import oracle_answer

SOKOBAN = "agentgym/Sokoban-Tiny-v0"  # seed 0: "up" then "left" solves it
# the menu: 1-4 the admissible moves (up, down, left, right), 5 the move tool
UP, DOWN, LEFT, RIGHT, TOOL = "1", "2", "3", "4", "5"


def play(monkeypatch, capsys, args: list[str], lines: list[str]) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{ln}\n" for ln in lines)))
    code = cli_main(["play", *args])
    return code, capsys.readouterr().out


def test_menu_picks_play_an_episode_to_success(monkeypatch, capsys):
    code, out = play(monkeypatch, capsys, [SOKOBAN], [UP, LEFT])
    assert code == 0
    assert "--- system prompt ---" in out and "1) <tool_call>" in out
    assert out.count('-> <tool_call>{"name": "move"') == 2
    assert "episode over after 2 turn(s): success" in out
    assert out.rstrip().endswith("played 1 episode(s); 1 succeeded.")


def test_a_tool_entry_asks_for_each_argument_with_its_choices(monkeypatch, capsys):
    code, out = play(monkeypatch, capsys, [SOKOBAN], [TOOL, "up", TOOL, "left"])
    assert code == 0 and "episode over after 2 turn(s): success" in out
    assert "direction (string; one of: up, down, left, right; required):" in out
    assert '-> <tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>' in out


def test_typed_turns_are_judged_like_a_models(monkeypatch, capsys):
    typed = '<tool_call>{"name": "move", "arguments": {"direction": "up"}}</tool_call>'
    code, out = play(monkeypatch, capsys, [SOKOBAN], ["hello", typed, LEFT])
    assert code == 0 and "episode over after 3 turn(s): success" in out
    assert "invalid turn:" in out and "format -1.00" in out  # "hello" costs the format weight


def test_help_restart_and_quit(monkeypatch, capsys):
    code, out = play(monkeypatch, capsys, [SOKOBAN], [":h", DOWN, ":r", UP, ":q"])
    assert code == 0
    assert "Pick a number from the menu" in out and "restarting the episode." in out
    assert out.count("=== agentgym/Sokoban-Tiny-v0") == 2  # reset again after :r
    assert out.rstrip().endswith("played 0 episode(s); 0 succeeded.")


def test_the_end_of_stdin_quits_cleanly(monkeypatch, capsys):
    code, out = play(monkeypatch, capsys, [SOKOBAN, "--episodes", "3"], [UP])
    assert code == 0 and "quit." in out


def test_an_empty_line_is_no_turn(monkeypatch, capsys):
    code, out = play(monkeypatch, capsys, [SOKOBAN], ["", UP, LEFT])
    assert code == 0 and "an empty turn: pick 1-5" in out
    assert "episode over after 2 turn(s): success" in out


def test_answer_entry_and_images_saved_as_png(monkeypatch, capsys, tmp_path):
    env_id = "agentgym/VisualClock-v0"  # no admissible actions: the tools, then the answer
    probe = gym.make(env_id)
    _, info = probe.reset(seed=4)
    probe.close()
    entry = str(len(info["tools"]) + 1)
    answer = oracle_answer(env_id, 4)
    args = [env_id, "--seed", "4", "--images", str(tmp_path)]
    code, out = play(monkeypatch, capsys, args, [entry, answer])
    assert code == 0 and f"  {entry}) answer: give the final answer" in out
    assert f"-> <answer>{answer}</answer>" in out
    assert "episode over after 1 turn(s): success" in out
    (png,) = sorted(tmp_path.glob("seed4-turn0-*.png"))
    picture = np.asarray(Image.open(png))
    assert picture.ndim == 3 and picture.shape[2] == 3 and picture.dtype == np.uint8


def test_a_multi_agent_id_is_a_one_line_error(capsys):
    assert cli_main(["play", "agentgym/Negotiation-v0"]) == 2
    assert "multi-agent" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "spec", "value"),
    [
        ("3", {"type": "integer"}, 3),
        ("2.5", {"type": "number"}, 2.5),
        ("y", {"type": "boolean"}, True),
        ("no", {"type": "boolean"}, False),
        ("[1, 2]", {"type": "array"}, [1, 2]),
        ('{"a": 1}', {"type": "object"}, {"a": 1}),
        ("up", {"type": "string", "enum": ["up", "down"]}, "up"),
        ("7", {"type": "string"}, "7"),  # a string stays a string
        ("abc", {"type": "integer"}, "abc"),  # not an integer: the env explains
        ("[1,", {"type": "array"}, "[1,"),
    ],
)
def test_argument_text_becomes_the_schemas_type(text, spec, value):
    assert _value(text, spec) == value and type(_value(text, spec)) is type(value)


def test_a_required_argument_is_asked_again_and_an_optional_one_can_be_left_out(
    monkeypatch, capsys
):
    env_id = "agentgym/VisualClock-v0"
    probe = gym.make(env_id)
    _, info = probe.reset(seed=4)
    probe.close()
    names = [t["function"]["name"] for t in info["tools"]]
    zoom = str(names.index("zoom") + 1)  # zoom(box, scale): box required, scale optional
    code, out = play(monkeypatch, capsys, [env_id, "--seed", "4"], [zoom, "", "[0, 0, 64, 48]", ""])
    assert code == 0 and "  box is required." in out
    assert "scale (number; optional, Enter to leave out):" in out
    assert '-> <tool_call>{"name": "zoom", "arguments": {"box": [0, 0, 64, 48]}}</tool_call>' in out


@pytest.mark.parametrize(
    ("spec", "required", "hint"),
    [
        ({"type": "integer", "minimum": 1}, True, "integer; 1..; required"),
        ({"type": "integer", "maximum": 4}, False, "integer; ..4; optional, Enter to leave out"),
        ({"type": "integer", "minimum": 1, "maximum": 4}, True, "integer; 1..4; required"),
        ({"type": "string", "enum": ["a", "b"]}, True, "string; one of: a, b; required"),
        ({"type": ["string", "null"]}, False, "string/null; optional, Enter to leave out"),
        ({}, True, "any; required"),
    ],
)
def test_each_argument_prompt_says_its_type_choices_and_need(spec, required, hint):
    assert _hint(spec, required) == hint

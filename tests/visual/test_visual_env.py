"""VisualEnv: rewards, step credit, bad input, task sets and determinism."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from agentgym.envs.visual.env import VisualEnv
from agentgym.envs.visual.grading import is_correct
from agentgym.simulators.visual.tasks import generate

import agentgym  # noqa: F401  (registers the ids)
from agentgym.error import InvalidConfigError
from agentgym.parsing import render_answer, render_tool_call


def _env(task_type: str = "objects", **kw) -> VisualEnv:
    return VisualEnv(task_type=task_type, **kw)


def _reset_until(env: VisualEnv, *, needs_tools: bool, start: int = 0):
    for seed in range(start, start + 50):
        obs, info = env.reset(seed=seed)
        if env.scene.needs_tools == needs_tools:
            return obs, info
    raise AssertionError("no such task in 50 seeds")


def test_reset_shows_a_modest_view_and_the_question():
    env = _env("doc")
    obs, info = env.reset(seed=0)
    (view,) = obs["images"]
    assert view.shape == (480, 640, 3) and view.dtype == np.uint8
    assert env.scene.question in obs["text"] and info["instruction"].startswith(env.scene.question)
    assert {t["function"]["name"] for t in info["tools"]} >= {
        "zoom",
        "ocr",
        "ground",
        "measure",
        "calculate",
    }
    assert env.scene.answer not in obs["text"]


@pytest.mark.parametrize(
    "given, truth, kind, tol, expected",
    [
        ("XK4-92Q", "XK4-92Q", "text", 0, True),
        (" xk4 - 92q. ", "XK4-92Q", "text", 0, True),
        ("XK4-92O", "XK4-92Q", "text", 0, False),
        ("1,204", "1204", "int", 0, True),
        ("about 1204.5", "1204", "int", 0, False),
        ("no idea", "7", "int", 0, False),
        ("4.43 cm", "4.30", "number", 0.15, True),
        ("4.46", "4.30", "number", 0.15, False),
        ("nan", "4.30", "number", 0.15, False),
        ("12:05", "0:05", "clock", 0, True),
        ("4:50", "4:55", "clock", 0, False),
    ],
)
def test_answer_matching(given, truth, kind, tol, expected):
    assert is_correct(given, truth, kind, tol) is expected


def test_right_answer_after_a_tool_earns_outcome_and_tool_bonus():
    env = _env("objects")
    _reset_until(env, needs_tools=True)
    _, _, _, _, info = env.step(render_tool_call("draw", {"grid": 50}))
    assert info["action_valid"] and info["reward_components"]["outcome"] == 0.0
    _, reward, terminated, _, info = env.step(render_answer(env.scene.answer))
    comps = info["reward_components"]
    assert terminated and info["success"]
    assert comps["outcome"] == 1.0 and comps["tool"] == 1.0
    assert reward == pytest.approx(env.reward_weights["outcome"] + env.reward_weights["tool"])


def test_wrong_answer_gets_no_tool_bonus():
    env = _env("objects")
    _reset_until(env, needs_tools=True)
    env.step(render_tool_call("draw", {"grid": 50}))
    _, reward, terminated, _, info = env.step(render_answer("no idea"))
    assert terminated and not info["success"]
    assert info["reward_components"]["tool"] == 0.0 and reward == 0.0


def test_no_tool_bonus_on_tasks_legible_in_the_view():
    env = _env("objects")
    _reset_until(env, needs_tools=False)
    env.step(render_tool_call("draw", {"grid": 50}))
    _, _, _, _, info = env.step(render_answer(env.scene.answer))
    assert info["success"] and info["reward_components"]["tool"] == 0.0


def test_zoom_credit_needs_a_tight_box_around_the_target_and_is_paid_once():
    env = _env("maze")
    _reset_until(env, needs_tools=True)
    x0, y0, x1, y1 = env.scene.to_view(env.scene.target)
    width, height = env.scene.view_size
    _, _, _, _, info = env.step(render_tool_call("zoom", {"box": [0, 0, width, height]}))
    assert info["reward_components"]["zoom"] == 0.0  # contains it, but it is the whole image
    _, _, _, _, info = env.step(render_tool_call("zoom", {"box": [x0 + 5, y0 + 5, x1, y1]}))
    assert info["reward_components"]["zoom"] == 0.0  # misses part of the target
    _, _, _, _, info = env.step(render_tool_call("zoom", {"box": [x0 - 1, y0 - 1, x1 + 1, y1 + 1]}))
    assert info["reward_components"]["zoom"] == 1.0
    _, _, _, _, info = env.step(render_tool_call("zoom", {"box": [x0 - 2, y0 - 2, x1 + 2, y1 + 2]}))
    assert info["reward_components"]["zoom"] == 0.0


def test_repeating_a_call_is_penalised_and_not_rerun():
    env = _env("objects")
    env.reset(seed=0)
    call = render_tool_call("measure", {"points": [[1, 1], [4, 5]]})
    _, _, _, _, first = env.step(call)
    obs, reward, _, _, second = env.step(call)
    assert first["reward_components"]["redundant"] == 0.0
    assert second["reward_components"]["redundant"] == -1.0
    assert reward == pytest.approx(-env.reward_weights["redundant"])
    assert "already made this exact call" in obs["text"]


@pytest.mark.parametrize(
    "action, fragment",
    [
        ('<tool_call>{"name": "zoom", "arguments": {"box": [0, 0, </tool_call>', "invalid JSON"),
        (render_tool_call("zoom", {"box": [float("nan"), 0, 5, 5]}), "finite"),
        (render_tool_call("zoom", {"box": [10, 10, 10, 20]}), "zero or negative area"),
        (render_tool_call("zoom", {"box": [0, 0, 5, 5], "scale": 1e12}), "scale must be"),
        (render_tool_call("teleport", {}), "unknown tool"),
        ("I am thinking about it.", "no tool call and no answer"),
    ],
)
def test_bad_input_is_explained_and_penalised(action, fragment):
    env = _env("objects")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert not info["action_valid"] and fragment in obs["text"] and fragment in info["error"]
    assert info["reward_components"]["format"] == -1.0 and not terminated and not truncated
    assert reward == pytest.approx(-env.reward_weights["format"])


def test_too_many_calls_in_one_turn_are_cut_and_flagged():
    env = _env("objects", max_calls_per_turn=2)
    env.reset(seed=0)
    calls = "\n".join(render_tool_call("calculate", {"expression": f"{i}+1"}) for i in range(5))
    obs, _, _, _, info = env.step(calls)
    assert not info["action_valid"] and "only the first 2" in obs["text"]
    assert "0+1 = 1" in obs["text"] and "1+1 = 2" in obs["text"] and "2+1" not in obs["text"]


def test_answer_in_the_same_turn_as_calls_ends_without_running_them():
    env = _env("objects")
    env.reset(seed=0)
    obs, _, terminated, _, _ = env.step(render_tool_call("draw", {"grid": 40}) + render_answer("3"))
    assert terminated and obs["images"] == () and "were not run" in obs["text"]


def test_turn_budget_truncates():
    env = _env("objects", max_turns=2)
    env.reset(seed=0)
    env.step(render_tool_call("calculate", {"expression": "1+1"}))
    _, _, terminated, truncated, info = env.step(
        render_tool_call("calculate", {"expression": "2+2"})
    )
    assert truncated and not terminated and info["success"] is False


def test_splits_are_disjoint_seed_ranges_and_difficulty_is_in_the_id():
    env = _env("chart", difficulty="hard")
    train, test = env.task_ids("train"), env.task_ids("test")
    assert train[0] == "visual-chart-hard-0" and test[0] == "visual-chart-hard-100000"
    assert test[0] not in train and train[-1] not in test


def test_same_seed_same_image_and_different_seeds_differ():
    a, b = generate("table", 11), generate("table", 11)
    assert a.digest() == b.digest() and a.question == b.question and a.answer == b.answer
    assert generate("table", 12).digest() != a.digest()
    assert generate("table", 11, "hard").scale == 4


def test_about_a_quarter_of_tasks_need_no_tool():
    legible = [not generate("objects", seed).needs_tools for seed in range(200)]
    assert 0.18 <= np.mean(legible) <= 0.32


def test_bad_config_is_a_typed_error():
    with pytest.raises(InvalidConfigError, match="task_type"):
        VisualEnv(task_type="sudoku")
    with pytest.raises(InvalidConfigError, match="difficulty"):
        VisualEnv(difficulty="insane")
    with pytest.raises(InvalidConfigError, match="grounding_noise"):
        VisualEnv(grounding_noise=3.0)


def test_snapshot_restore_brings_back_credit_and_call_history():
    env = _env("maze")
    _reset_until(env, needs_tools=True)
    x0, y0, x1, y1 = env.scene.to_view(env.scene.target)
    zoom = render_tool_call("zoom", {"box": [x0 - 1, y0 - 1, x1 + 1, y1 + 1]})
    snap = env.snapshot()
    _, _, _, _, info = env.step(zoom)
    assert info["reward_components"]["zoom"] == 1.0
    env.restore(snap)
    _, _, _, _, again = env.step(zoom)
    assert (
        again["reward_components"]["zoom"] == 1.0 and again["reward_components"]["redundant"] == 0.0
    )


def test_chat_history_puts_the_view_and_tool_images_in_content_parts():
    from agentgym.wrappers.chat import ChatHistory

    env = ChatHistory(gym.make("agentgym/VisualObjects-v0"), image_format="array")
    _, info = env.reset(seed=0)
    parts = info["messages"][-1]["content"]
    assert parts[0]["type"] == "image" and parts[0]["image"].shape == (480, 640, 3)
    _, _, _, _, info = env.step(render_tool_call("zoom", {"box": [0, 0, 100, 80]}))
    parts = info["messages"][-1]["content"]
    assert parts[0]["type"] == "image" and parts[-1]["type"] == "text"

"""The oracle reaches success through its tools; the no-tool baseline cannot read the detail.

These use real tesseract, a few calls each, so they cover one or two seeds per task type.
"""

from __future__ import annotations

import pytest
from agentgym.envs.visual.baseline import no_tool_answer, view_ocr
from agentgym.envs.visual.env import VisualEnv
from agentgym.envs.visual.grading import is_correct
from agentgym.simulators.visual.tasks import TASK_TYPES, generate
from agentgym.simulators.visual.tools import run_tool


def _first_seed(task_type: str, needs_tools: bool, start: int = 100_000) -> int:
    for seed in range(start, start + 60):
        if generate(task_type, seed).needs_tools == needs_tools:
            return seed
    raise AssertionError("no such seed")


def _oracle_episode(env: VisualEnv, seed: int) -> tuple[dict, list[str]]:
    env.reset(options={"task_id": f"visual-{env.task_type}-{env.difficulty}-{seed}"})
    tools_called: list[str] = []
    for _ in range(env.max_turns or 8):
        action = env.oracle_action()
        _, _, terminated, truncated, info = env.step(action)
        tools_called += [c["name"] for c in info["tool_calls"]]
        if terminated or truncated:
            return info, tools_called
    raise AssertionError("oracle did not finish")


@pytest.mark.parametrize("task_type", sorted(TASK_TYPES))
def test_oracle_uses_tools_and_succeeds_where_tools_are_needed(task_type):
    env = VisualEnv(task_type=task_type, split="test")
    info, tools_called = _oracle_episode(env, _first_seed(task_type, needs_tools=True))
    assert info["success"] and tools_called
    assert info["reward_components"]["tool"] == 1.0
    if env.scene.readouts:
        assert "ocr" in tools_called


def test_oracle_answers_legible_tasks_without_tools():
    env = VisualEnv(task_type="chart", split="test")
    info, tools_called = _oracle_episode(env, _first_seed("chart", needs_tools=False))
    assert info["success"] and tools_called == []


@pytest.mark.parametrize("task_type", ["doc", "chart", "signs"])
def test_tiny_text_is_legible_in_the_source_and_not_in_the_view(task_type):
    scene = generate(task_type, _first_seed(task_type, needs_tools=True))
    readout = scene.readouts[0]
    vb = scene.to_view(readout.box)
    box = [vb[0] - 2, vb[1] - 2, vb[2] + 2, vb[3] + 2]
    source = run_tool(
        scene, "ocr", {"box": box, "angle": readout.angle, "enhance": readout.enhance}
    )
    view = view_ocr(scene, readout.box, readout.angle, readout.enhance)
    truth = scene.answer.lower().replace(" ", "")
    assert (readout.parse(source.text.split("\n", 1)[1]) or "").lower() == truth
    assert (readout.parse(view.split("\n", 1)[1]) or "").lower() != truth


def test_no_tool_baseline_fails_where_tools_are_needed_and_reads_legible_tasks():
    hard = generate("doc", _first_seed("doc", needs_tools=True))
    easy = generate("doc", _first_seed("doc", needs_tools=False))
    assert not is_correct(no_tool_answer(hard), hard.answer, hard.answer_type)
    assert is_correct(no_tool_answer(easy), easy.answer, easy.answer_type)

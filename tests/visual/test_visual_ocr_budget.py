"""The OCR budget (issue 23): OCR is metered in pixels read, per turn and per episode.

Four whole-page ``ocr`` calls with an angle and ``enhance`` cost about 6 s of CPU in one turn
before there was a budget. The rule is counted, not timed: a call whose pixel cost exceeds
what is left is not run, the observation says so, and nothing is penalised.
"""

from __future__ import annotations

import gymnasium as gym
import pytest
from agentgym.simulators.visual.ocr import fit_for_tesseract, ocr_cost
from agentgym.simulators.visual.tools import _source_crop, prepare_for_ocr, view_box

import agentgym  # noqa: F401
from agentgym.error import InvalidConfigError
from agentgym.parsing import render_tool_call

# Two different tight boxes on a VisualDoc page (each reads a few hundredths of a MP).
BOX_A = [10, 10, 110, 40]
BOX_B = [10, 50, 110, 80]


def ocr(box: list[float], **extra) -> str:
    return render_tool_call("ocr", {"box": box, **extra})


def cost(env, box: list[float], angle: float = 0.0, enhance: bool = False) -> int:
    scene = env.unwrapped.scene
    crop = _source_crop(scene, view_box(scene, box)[0])
    return ocr_cost(fit_for_tesseract(prepare_for_ocr(crop, angle, enhance)))


def lines(obs) -> list[str]:
    return obs["text"].splitlines()


def test_a_zero_budget_refuses_every_ocr_call_without_penalty():
    env = gym.make("agentgym/VisualDoc-v0", ocr_episode_mpx=0)
    env.reset(seed=0)
    for _ in range(2):  # refused calls are not "already made": the same call is refused again
        obs, _r, _term, _trunc, info = env.step(ocr(BOX_A))
        assert obs["text"].startswith(f"ocr of {BOX_A} was not run: it would read ")
        assert "0.00 MP left in the OCR budget (spent)" in obs["text"]
        assert info["action_valid"] is True and info["error"] is None
        assert info["reward_components"]["redundant"] == 0.0
        assert info["reward_components"]["ocr"] == 0.0
    # the other tools are not metered
    obs, *_ = env.step(render_tool_call("zoom", {"box": BOX_A}))
    assert obs["text"].startswith("Zoomed into")


def test_the_episode_budget_allows_exactly_what_it_holds():
    probe = gym.make("agentgym/VisualDoc-v0")
    probe.reset(seed=0)
    a, b = cost(probe, BOX_A), cost(probe, BOX_B)
    # room for A and B exactly: both run; a third call finds nothing left
    env = gym.make("agentgym/VisualDoc-v0", ocr_episode_mpx=(a + b) / 1e6)
    env.reset(seed=0)
    obs, *_ = env.step(ocr(BOX_A))
    assert obs["text"].startswith(f"OCR of {BOX_A}")
    obs, *_ = env.step(ocr(BOX_B))
    assert obs["text"].startswith(f"OCR of {BOX_B}")
    obs, *_ = env.step(ocr([10, 90, 110, 120]))
    assert "was not run" in obs["text"] and "(spent)" in obs["text"]
    # one pixel less: B no longer fits after A
    env = gym.make("agentgym/VisualDoc-v0", ocr_episode_mpx=(a + b - 1) / 1e6)
    env.reset(seed=0)
    env.step(ocr(BOX_A))
    obs, *_ = env.step(ocr(BOX_B))
    assert obs["text"].startswith(f"ocr of {BOX_B} was not run: it would read {b / 1e6:.2f} MP")
    # a new episode has the whole budget again
    env.reset(seed=0)
    obs, *_ = env.step(ocr(BOX_B))
    assert obs["text"].startswith(f"OCR of {BOX_B}")


def test_the_turn_budget_renews_each_turn_and_survives_snapshot_restore():
    probe = gym.make("agentgym/VisualDoc-v0")
    probe.reset(seed=0)
    a = cost(probe, BOX_A)
    env = gym.make("agentgym/VisualDoc-v0", ocr_turn_mpx=a / 1e6, ocr_episode_mpx=None)
    env.reset(seed=0)
    obs, *_ = env.step(ocr(BOX_A) + "\n" + ocr(BOX_A, enhance=True))
    first, second = lines(obs)[0], next(x for x in lines(obs) if x.startswith("[2]"))
    assert first.startswith(f"[1] ocr: OCR of {BOX_A}")
    assert second.startswith(f"[2] ocr: ocr of {BOX_A} was not run")
    # next turn: the turn budget is whole again, so the refused call now runs
    obs, *_ = env.step(ocr(BOX_A, enhance=True))
    assert obs["text"].startswith(f"OCR of {BOX_A}")
    # the episode's spending is part of the native snapshot
    budget = gym.make("agentgym/VisualDoc-v0", ocr_episode_mpx=a / 1e6)
    budget.reset(seed=0)
    snap = budget.unwrapped.snapshot()
    budget.step(ocr(BOX_A))
    spent = budget.unwrapped.snapshot()
    budget.unwrapped.restore(snap)
    assert budget.step(ocr(BOX_B))[0]["text"].startswith(f"OCR of {BOX_B}")
    budget.unwrapped.restore(spent)
    assert "was not run" in budget.step(ocr(BOX_B))[0]["text"]


def test_whole_page_reads_with_angle_and_enhance_are_bounded_by_default():
    env = gym.make("agentgym/VisualDoc-v0")
    env.reset(seed=0)
    page = [0, 0, *env.unwrapped.scene.view_size]
    calls = [ocr(page, angle=a, enhance=True) for a in (10, 20, 30, 45)]
    obs, _r, _term, _trunc, info = env.step("\n".join(calls))
    results = [x for x in lines(obs) if x.startswith("[")]
    assert results[0].startswith(f"[1] ocr: OCR of {page}")
    assert all("was not run" in x for x in results[1:]) and len(results) == 4
    assert info["action_valid"] is True


@pytest.mark.parametrize("bad", [-1, float("nan"), "3", 1e9])
def test_bad_budgets_are_refused_at_construction(bad):
    with pytest.raises(InvalidConfigError, match="ocr_turn_mpx"):
        gym.make("agentgym/VisualDoc-v0", ocr_turn_mpx=bad)

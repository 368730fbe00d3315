"""Refused browser actions in a real Chromium (issue 15, W1).

An action the env refuses (a click on an element id the page does not have) is the model's
mistake, not a browser fault: it must not claim a crash, must not touch the page, must read
exactly as in text mode, and must read the same after snapshot/restore.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

pytestmark = pytest.mark.browser

MISSING = render_tool_call("click", {"bid": "9999"})


def test_refused_click_after_reset_reports_no_crash_and_keeps_the_page(runtime):
    env = gym.make("agentgym/WebShop-v0")
    env.reset(seed=3)
    slot = env.unwrapped.driver.slot
    page, loads = slot.page, slot.loads
    for _ in range(3):
        _obs, _r, _term, _trunc, info = env.step(MISSING)
        assert info["error"] == "there is no element [9999] on this page"
        assert "reopened" not in info["error"] and "reloaded" not in info["error"]
        assert info["action_valid"] is False
    assert slot.page is page, "a refused action must not open a new tab"
    assert slot.loads == loads, "a refused action must not reload the page"
    env.close()


def test_refused_click_reads_the_same_in_browser_and_text_mode(runtime):
    browser = gym.make("agentgym/WebShop-v0")
    text = gym.make("agentgym/WebShopText-v0")
    for seed in (1, 2):
        browser.reset(seed=seed)
        text.reset(seed=seed)
        for action in (MISSING, browser.unwrapped.oracle_action(), MISSING):
            rb, rt = browser.step(action), text.step(action)
            assert rb[0]["text"] == rt[0]["text"], action
            assert rb[4]["error"] == rt[4]["error"]
            assert rb[4]["action_valid"] == rt[4]["action_valid"]
    browser.close()
    text.close()


def test_snapshot_restore_replays_the_same_future_in_browser_mode(runtime):
    env = gym.make("agentgym/WebShop-v0")
    env.reset(seed=4)
    snap = env.unwrapped.snapshot()
    future = [MISSING, env.unwrapped.oracle_action(), MISSING]

    def play() -> list[tuple[str, str | None]]:
        out = []
        for action in future:
            obs, _r, _term, _trunc, info = env.step(action)
            out.append((obs["text"], info["error"]))
        return out

    first = play()
    env.unwrapped.restore(snap)
    second = play()
    assert first == second
    assert all("reopened" not in (err or "") for _text, err in first)
    env.close()

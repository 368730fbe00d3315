"""The web envs in a real Chromium: conformance, oracles, text/browser parity, faults.

All tests share one browser (the ``runtime`` fixture) to stay fast.
"""

from __future__ import annotations

import contextlib
import threading

import gymnasium as gym
import numpy as np
import pytest
from agentgym.simulators.browser.sites.widgets import KINDS

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

pytestmark = pytest.mark.browser

# Widgets run JavaScript on every page, so they always get the full check here; the
# server-rendered families navigate on most actions (slower) and are marked slow.
BROWSER_IDS = [
    "agentgym/WebWidgets-v0",
    pytest.param("agentgym/WebShop-v0", marks=pytest.mark.slow),
    pytest.param("agentgym/WebForms-v0", marks=pytest.mark.slow),
    pytest.param("agentgym/WebWiki-v0", marks=pytest.mark.slow),
    pytest.param("agentgym/WebTodo-v0", marks=pytest.mark.slow),
]


def call(name: str, **args: object) -> str:
    return render_tool_call(name, args)


def run_oracle(env, limit: int = 40):
    info = {}
    for _ in range(limit):
        _obs, _reward, term, trunc, info = env.step(env.unwrapped.oracle_action())
        assert info["error"] is None, info["error"]
        if term or trunc:
            break
    return info


def test_every_widget_kind_is_solved_by_its_oracle(runtime):
    env = gym.make("agentgym/WebWidgets-v0")
    failures = []
    for kind in KINDS:
        env.reset(options={"task_id": f"widget-{kind}-5"})
        info = run_oracle(env, 15)
        if not info.get("success"):
            failures.append(kind)
    env.close()
    assert failures == []


def test_wrong_widget_submission_fails(runtime):
    env = gym.make("agentgym/WebWidgets-v0")
    env.reset(options={"task_id": "widget-click-button-3"})
    target = env.unwrapped.widget.task.expected["clicked"]
    wrong = next(e for e in env.unwrapped.page_elements() if e["name"] != target)
    _obs, reward, term, _trunc, info = env.step(call("click", bid=wrong["bid"]))
    assert term and not info["success"] and reward == 0.0
    env.close()


@pytest.mark.parametrize("family", ["Shop", "Forms", "Wiki", "Todo"])
def test_text_mode_matches_browser(runtime, family):
    browser = gym.make(f"agentgym/Web{family}-v0")
    text = gym.make(f"agentgym/Web{family}Text-v0")
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        ob, _ = browser.reset(seed=seed)
        ot, _ = text.reset(seed=seed)
        assert ob["text"] == ot["text"]
        for t in range(25):
            # mostly oracle moves, sometimes a random click on the page
            action = text.unwrapped.oracle_action()
            admissible = text.unwrapped.admissible_actions() or []
            if admissible and rng.random() < 0.25 and t < 6:
                action = admissible[int(rng.integers(len(admissible)))]
            rb, rt_ = browser.step(action), text.step(action)
            assert rb[0]["text"] == rt_[0]["text"], (family, seed, t, action)
            assert rb[1:4] == rt_[1:4]
            assert rb[4]["reward_components"] == rt_[4]["reward_components"]
            assert browser.unwrapped.state_key() == text.unwrapped.state_key()
            if rb[2] or rb[3]:
                break
    browser.close()
    text.close()


def test_screenshot_observation(runtime):
    env = gym.make("agentgym/WebWidgets-v0", screenshot="jpeg")
    obs, _ = env.reset(options={"task_id": "widget-click-color-1"})
    (img,) = obs["images"]
    assert img.dtype == np.uint8 and img.shape == (768, 1024, 3)
    assert img.std() > 5, "the page is rendered, not blank"
    env.close()


def test_bad_input_is_reported_and_env_keeps_working(runtime):
    env = gym.make("agentgym/WebShop-v0")
    env.reset(seed=2)
    for action, needle in [
        (call("click", bid="12345"), "no element"),
        (call("fill", bid="1", text="x" * 100_000), "too long"),
        (call("goto", path="https://example.com/"), "only paths"),
        (call("goto", path="file:///etc/passwd"), "only paths"),
        (call("goto", path="javascript:alert(1)"), "only paths"),
        (call("press", key="Nope!!"), "unknown key"),
    ]:
        obs, _reward, _term, _trunc, info = env.step(action)
        assert needle in (info["error"] or ""), (action, info["error"])
        assert not info["action_valid"]
    # a long but allowed text goes in through the real keyboard
    obs, *_, info = env.step(call("fill", bid="1", text="y" * 9000))
    assert info["error"] is None and 'value="yyyy' in obs["text"]
    info = run_oracle(env)
    assert info["success"]
    env.close()


def test_nothing_leaves_localhost(runtime):
    env = gym.make("agentgym/WebTodo-v0")
    env.reset(seed=0)
    page = env.unwrapped.driver.slot.page

    async def probe():
        return await page.evaluate(
            """async () => {
                const out = [];
                for (const url of ['http://example.com/', 'http://127.0.0.1:9/', 'http://10.0.0.1/']) {
                    try { await fetch(url, {mode: 'no-cors'}); out.push('reached'); }
                    catch (e) { out.push('blocked'); }
                }
                return out;
            }"""
        )

    assert runtime.call(probe(), 20) == ["blocked", "blocked", "blocked"]

    async def external_nav():
        await page.evaluate("() => { location.href = 'http://example.com/'; }")

    runtime.call(external_nav(), 10)
    obs, *_, _info = env.step(call("scroll", direction="down"))
    assert "URL: /" in obs["text"]
    env.close()


def test_hanging_page_times_out_and_recovers(runtime):
    env = gym.make("agentgym/WebWidgets-v0", action_timeout=2.0)
    env.reset(options={"task_id": "widget-enter-text-2"})
    page = env.unwrapped.driver.slot.page
    runtime.call(page.evaluate("() => { setTimeout(() => { for (;;) {} }, 0); }"), 5)
    _obs, _reward, _term, _trunc, info = env.step(call("fill", bid="0", text="abc"))
    assert info["error"] and "reloaded" in info["error"]
    assert info["action_valid"], "a browser fault is not the model's fault"
    info = run_oracle(env, 10)
    assert info["success"]
    env.close()


def test_renderer_crash_is_recovered(runtime):
    env = gym.make("agentgym/WebForms-v0")
    env.reset(seed=3)
    env.step(env.unwrapped.oracle_action())
    page = env.unwrapped.driver.slot.page

    async def crash():
        with contextlib.suppress(Exception):
            await page.goto("chrome://crash", timeout=5000)

    runtime.call(crash(), 10)
    _obs, _reward, _term, _trunc, info = env.step(env.unwrapped.oracle_action())
    assert "reopened" in (info["error"] or "") or "reloaded" in (info["error"] or "")
    info = run_oracle(env)
    assert info["success"]
    env.close()


def test_browser_killed_mid_episode_is_relaunched(runtime):
    env = gym.make("agentgym/WebShop-v0")
    env.reset(seed=5)
    env.step(env.unwrapped.oracle_action())
    before = runtime.restarts
    runtime.kill_browser()
    _obs, _reward, _term, _trunc, info = env.step(env.unwrapped.oracle_action())
    assert runtime.restarts == before + 1
    assert info["error"] is not None  # says what happened
    info = run_oracle(env)
    assert info["success"]
    env.reset(seed=6)
    assert run_oracle(env)["success"]
    env.close()


def test_short_soak_on_threads_has_no_errors(runtime):
    """4 envs on threads, oracle episodes back to back; every action must succeed."""
    ids = [
        "agentgym/WebWidgets-v0",
        "agentgym/WebShop-v0",
        "agentgym/WebTodo-v0",
        "agentgym/WebWiki-v0",
    ]
    errors: list[str] = []
    successes = [0] * len(ids)

    def worker(i: int) -> None:
        env = gym.make(ids[i])
        try:
            for seed in range(4):
                env.reset(seed=seed)
                for _ in range(30):
                    _obs, _r, term, trunc, info = env.step(env.unwrapped.oracle_action())
                    if info["error"]:
                        errors.append(f"{ids[i]}: {info['error']}")
                    if term or trunc:
                        break
                successes[i] += bool(info.get("success"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))
        finally:
            env.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(ids))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert errors == []
    assert successes == [4, 4, 4, 4]


def test_slots_have_separate_origins(runtime):
    a = gym.make("agentgym/WebTodo-v0")
    b = gym.make("agentgym/WebTodo-v0")
    a.reset(seed=1)
    b.reset(seed=1)
    sa, sb = a.unwrapped.driver.slot, b.unwrapped.driver.slot
    assert sa.origin != sb.origin
    runtime.call(sa.page.evaluate("() => localStorage.setItem('k', 'a')"), 5)
    assert runtime.call(sb.page.evaluate("() => localStorage.getItem('k')"), 5) is None
    a.close()
    b.close()


def test_aria_snapshot_option(runtime):
    env = gym.make("agentgym/WebWidgets-v0", aria=True)
    obs, _ = env.reset(options={"task_id": "widget-click-button-1"})
    assert "Accessibility tree:" in obs["text"]
    assert "- button" in obs["text"].split("Accessibility tree:")[1]
    env.close()


def test_tabs_are_recycled_and_env_keeps_working(runtime):
    env = gym.make("agentgym/WebTodo-v0")
    old = runtime.recycle_after
    runtime.recycle_after = 2
    try:
        env.reset(seed=0)
        pages = set()
        for seed in range(1, 5):
            env.reset(seed=seed)
            pages.add(id(env.unwrapped.driver.slot.page))
            info = run_oracle(env, 10)
            assert info["success"]
        assert len(pages) >= 2
    finally:
        runtime.recycle_after = old
        env.close()

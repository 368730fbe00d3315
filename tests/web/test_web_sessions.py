"""Issue 22, browsers: a context per session, new windows folded into the tab, fork safety.

Every page a session opens belongs to its own browser context and is closed with it; a
request for a new window (Shift+Enter in a form, a target=_blank link) runs in the session's
tab instead of stalling the step; a forked child never uses its parent's half-copied runtime.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import gymnasium as gym
import pytest
from agentgym.simulators.browser.sandbox import WRAPPER_PREFIX

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

pytestmark = pytest.mark.browser


def call(name: str, **args: object) -> str:
    return render_tool_call(name, args)


def bid_of(env, name: str) -> str:
    return next(e["bid"] for e in env.unwrapped.page_elements() if e["name"] == name)


def wait_until(condition, what: str, limit_s: float = 20.0) -> None:
    """Poll ``condition`` until it holds (the limit only stops a broken run)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_shift_enter_submits_in_the_tab_and_close_leaves_no_page(runtime):
    before = runtime.open_pages()
    env = gym.make("agentgym/WebTodo-v0")
    env.reset(seed=0)
    assert runtime.open_pages() == (before[0] + 1, before[1] + 1), "one context, one tab"
    env.step(call("fill", bid=bid_of(env, "New item"), text="buy milk"))
    obs, _reward, _term, _trunc, info = env.step(call("press", key="Shift+Enter"))
    # folded into the tab: the form was submitted here, not in a window the step waits for
    assert info["error"] == (
        "Shift+Enter would submit the form into a new window; it was submitted in this tab"
    )
    assert info["action_valid"]
    assert "buy milk" in obs["text"].split("Page:")[1]
    assert env.unwrapped.site.items()[-1] == {"title": "buy milk", "done": False}
    assert runtime.open_pages() == (before[0] + 1, before[1] + 1), "no popup left behind"
    env.close()
    assert runtime.open_pages() == before
    # the text mode folds Shift+Enter the same way, so both modes show the same page
    text = gym.make("agentgym/WebTodoText-v0")
    text.reset(seed=0)
    text.step(call("fill", bid=bid_of(text, "New item"), text="buy milk"))
    obs_text, *_ = text.step(call("press", key="Shift+Enter"))
    assert obs_text["text"] == obs["text"]


def test_blank_link_opens_in_the_tab(runtime):
    env = gym.make("agentgym/WebTodo-v0")
    env.reset(seed=1)
    page = env.unwrapped.driver.slot.page
    runtime.call(
        page.evaluate(
            "() => { const a = document.createElement('a'); a.href = '/?from=blank';"
            " a.target = '_blank'; a.textContent = 'Elsewhere'; document.body.prepend(a); }"
        ),
        5,
    )
    env.step(call("scroll", direction="down"))  # observe the new link
    _obs, _r, _t, _tr, info = env.step(call("click", bid=bid_of(env, "Elsewhere")))
    assert info["error"] == "the link would open in a new window; it was opened in this tab"
    assert info["url"] == "/?from=blank"
    assert env.unwrapped.driver.slot.popups == 0
    env.close()


def test_a_window_opened_past_the_helper_is_closed_and_reported(runtime):
    """form.submit() fires no submit event, so the helper cannot fold it: the runtime closes
    the window it opens, and the next step says so."""
    before = runtime.open_pages()
    env = gym.make("agentgym/WebTodo-v0")
    env.reset(seed=2)
    page = env.unwrapped.driver.slot.page
    runtime.call(
        page.evaluate(
            """() => { const b = document.createElement('button'); b.textContent = 'Pop';
            b.onclick = () => { const f = document.createElement('form'); f.action = '/';
              f.target = '_blank'; document.body.appendChild(f); f.submit(); };
            document.body.prepend(b); }"""
        ),
        5,
    )
    env.step(call("scroll", direction="down"))
    _obs, _r, _t, _tr, info = env.step(call("click", bid=bid_of(env, "Pop")))
    assert "did not finish" not in (info["error"] or "")
    slot = env.unwrapped.driver.slot
    wait_until(lambda: slot.popups == 1, "the popup was seen")
    wait_until(lambda: runtime.open_pages()[1] == before[1] + 1, "the popup was closed")
    _obs, _r, _t, _tr, info = env.step(call("scroll", direction="up"))
    assert info["error"] in (
        None,
        "the page opened a new window; it was closed (a session is one tab)",
    )
    env.close()
    assert runtime.open_pages() == before


def test_closing_a_session_closes_its_context_and_pages(runtime):
    before = runtime.open_pages()
    envs = [gym.make("agentgym/WebTodo-v0") for _ in range(3)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    assert runtime.open_pages() == (before[0] + 3, before[1] + 3)
    slots = [env.unwrapped.driver.slot for env in envs]
    assert len({id(s.context) for s in slots}) == 3, "a context per session"
    envs[1].close()
    assert runtime.open_pages() == (before[0] + 2, before[1] + 2)
    for env in (envs[0], envs[2]):
        env.close()
    assert runtime.open_pages() == before


@pytest.mark.slow
def test_eight_concurrent_sessions_have_no_errors_and_leave_no_page(runtime):
    """The CI-sized version of the 64-session benchmark: 8 browser-mode sessions stepped
    concurrently in one pool, every oracle step without error, nothing left after close."""
    from agentgym.pools import EnvPool

    before = runtime.open_pages()
    # a generous action timeout: on a loaded CI machine 8 sessions queue for the CPU
    pool = EnvPool(
        [lambda: gym.make("agentgym/WebTodo-v0", action_timeout=30.0)] * 8, backend="thread"
    )
    try:
        pool.reset(seeds=list(range(8)))
        assert runtime.open_pages() == (before[0] + 8, before[1] + 8)
        active = set(range(8))
        errors, successes = [], 0
        for _ in range(20):
            if not active:
                break
            actions = dict(zip(sorted(active), pool.call("oracle_action", indices=sorted(active))))
            for i, result in pool.step(actions).items():
                if result.info["error"] or result.info.get("env_error"):
                    errors.append((i, result.info["error"], result.info.get("env_error")))
                if result.terminated or result.truncated:
                    successes += bool(result.info.get("success"))
                    active.discard(i)
        assert errors == []
        assert successes == 8 and not active
    finally:
        pool.close()
    assert runtime.open_pages() == before


FORK_SCRIPT = textwrap.dedent(
    """
    import gymnasium as gym
    import agentgym
    from agentgym.parsing import render_tool_call

    env = gym.make("agentgym/WebTodo-v0")
    env.reset(seed=0)  # the parent has a started browser runtime
    env.close()
    vec = gym.make_vec("agentgym/WebTodo-v0", num_envs=2, vectorization_mode="async")
    obs, _ = vec.reset(seed=0)
    step = render_tool_call("scroll", {"direction": "down"})
    obs, reward, term, trunc, info = vec.step([step, step])
    assert list(info["error"]) == [None, None], info["error"]
    assert all(t.startswith("Task: ") for t in obs["text"]), obs["text"]
    vec.close()
    print("VECTOR OK")
    """
)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_async_vector_after_the_parent_used_a_browser_does_not_hang(runtime):
    """gym.make_vec(..., "async") forks its workers: each must start its own Chromium
    instead of waiting forever on the parent's runtime, whose loop thread did not fork.
    Each worker's browser is closed when the worker ends (multiprocessing runs no atexit
    handlers there), so no worker leaves its Chromium wrapper directory behind."""
    tmp = tempfile.mkdtemp(prefix="agentgym-test-tmp-")  # under /tmp: uid nobody reaches it
    os.chmod(tmp, 0o755)
    try:
        try:
            out = subprocess.run(
                [sys.executable, "-c", FORK_SCRIPT],
                capture_output=True,
                text=True,
                timeout=180,
                env={**os.environ, "TMPDIR": tmp},
            )
        except subprocess.TimeoutExpired:
            pytest.fail("the async vector env hung (forked workers used the parent's runtime)")
        assert out.returncode == 0, out.stderr[-2000:]
        assert "VECTOR OK" in out.stdout
        assert [n for n in os.listdir(tmp) if n.startswith(WRAPPER_PREFIX)] == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

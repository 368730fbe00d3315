"""WebTodo's forms submit with fetch and swap the body in (static/swap.js), and a reset swaps
the start page in: the episode an agent sees is the same as with full page loads, step for
step, and no page load happens."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import pytest
from agentgym.simulators.browser.session import BrowserSession
from agentgym.simulators.browser.site import SWAP_FORMS_SCRIPT, Request, Response, Site, page

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

pytestmark = pytest.mark.browser

# one seed of each task kind: rename, complete+delete, delete, complete, add
SEEDS = (0, 1, 2, 3, 9)
_RESTORED = re.compile(r'(textbox "[^"\n]*") value="[^"\n]*"')


def call(name: str, **args: object) -> str:
    return render_tool_call(name, args)


def _todo(swap: bool) -> gym.Env:
    env = gym.make("agentgym/WebTodo-v0")
    env.unwrapped.todo.swap_forms = swap
    return env


def _record(env: gym.Env, seed: int, actions: list[str] | None = None) -> list[tuple]:
    """Everything the agent and the trainer get, reset and every step: the observation text,
    reward, end flags, error, reward components and state key; plus the page loads."""
    slot = env.unwrapped.driver.slot
    loads = slot.loads
    obs, _ = env.reset(seed=seed)
    seen: list[tuple] = [(obs["text"], env.unwrapped.state_key())]
    for t in range(20):
        action = actions[t] if actions is not None else env.unwrapped.oracle_action()
        obs, reward, term, trunc, info = env.step(action)
        seen.append(
            (
                obs["text"],
                reward,
                term,
                trunc,
                info["error"],
                info["reward_components"],
                env.unwrapped.state_key(),
            )
        )
        if term or trunc or (actions is not None and t + 1 == len(actions)):
            break
    seen.append(("page loads", slot.loads - loads))
    return seen


def test_oracle_episodes_are_the_same_with_and_without_the_swap(runtime):
    swapped, loaded = _todo(True), _todo(False)
    try:
        for n, seed in enumerate(SEEDS):
            a, b = _record(swapped, seed), _record(loaded, seed)
            assert a[:-1] == b[:-1], seed
            assert a[-2][2] and a[-2][1] == 1.0, "the oracle solves the task"
            # full loads: the reset's page and one per submitted form; swapped: only the
            # tab's first page (the first reset), later resets are swapped in too
            assert a[-1] == ("page loads", 1 if n == 0 else 0), seed
            assert b[-1][1] >= 2, seed
    finally:
        swapped.close()
        loaded.close()


def test_enter_folded_shift_enter_and_back_are_the_same_with_and_without_the_swap(runtime):
    swapped, loaded = _todo(True), _todo(False)
    text = gym.make("agentgym/WebTodoText-v0")
    try:
        swapped.reset(seed=9)
        box = next(e["bid"] for e in swapped.unwrapped.page_elements() if e["name"] == "New item")
        actions = [
            call("fill", bid=box, text="first"),
            call("press", key="Enter"),  # implicit submission
            # the new item's four elements come before the box on the next page
            call("fill", bid=str(int(box) + 4), text="second \ud800 half"),  # lone surrogate
            call("press", key="Shift+Enter"),  # folded into this tab, with a notice
            call("back"),  # to the page after the first submission
            call("back"),  # to the reset's page
            call("back"),  # off the site: blocked, back at /
        ]
        a, b = _record(swapped, 9, actions), _record(loaded, 9, actions)
        assert a[:5] == b[:5]
        texts = [step[0] for step in a[1:-1]]
        assert 'button "Delete: first"' in texts[1]
        assert 'button "Delete: second \ufffd half"' in texts[3]
        assert "it was submitted in this tab" in texts[3]
        blocked = "navigation outside the site was blocked; back at /"
        assert (
            [step[4] for step in a[5:-1]] == [step[4] for step in b[5:-1]] == [None, None, blocked]
        )
        # Back: after a full load Chromium restores what was typed into the page's text boxes
        # (its form restoration); the swapped page is fetched afresh, as the text mirror
        # shows it. Everything else is the same.
        for x, y in zip(a[5:-1], b[5:-1], strict=True):
            assert " value=" not in x[0]
            assert x[0] == _RESTORED.sub(r"\1", y[0])
            assert x[1:6] == y[1:6]
        text.reset(seed=9)
        for action in actions[:5]:
            mirror = text.step(action)[0]["text"]
        assert a[5][0] == mirror
        # swapped: the reset, the submissions and the first two Backs stay in one document;
        # the only loads are the blocked Back's (away and back). Full loads: five more.
        assert (a[-1], b[-1]) == (("page loads", 2), ("page loads", 7))
    finally:
        swapped.close()
        loaded.close()
        text.close()


def test_back_to_a_swapped_in_entry_fetches_the_page_again_without_a_load(runtime):
    from agentgym.simulators.browser.runtime import get_runtime
    from agentgym.simulators.browser.sites.todo import TodoSite

    site = TodoSite()
    site.reset(3, {})
    session = BrowserSession(get_runtime(), site)
    try:
        assert session.open("/") is None
        first = session.observe()
        done = next(e for e in first.elements if e["role"] == "button")
        loads = session.slot.loads
        assert session.click(done["bid"]) is None
        after = session.observe()
        assert session.slot.loads == loads and after.url == "/"
        # the toggled item's button now says Undo (or Done), under the same id: ids start
        # again from 0 on a swapped-in body, as in a new document
        flipped = after.elements[int(done["bid"])]
        assert flipped["bid"] == done["bid"] and flipped["name"] != done["name"]
        with site.lock:  # the server's state changes behind the page's back
            site.db.execute("UPDATE todo SET title = 'changed' WHERE id = 1")
        assert session.back() is None and session.slot.loads == loads
        # Back shows the site's state now (the page is fetched again, as a no-store page is
        # loaded again), not the page as it was
        back = session.observe()
        assert "changed" in back.lines and "changed" not in after.lines
        assert len(back.lines) == len(after.lines)
        assert session.url == "/"
    finally:
        session.close()


class _JsonAnswerSite(Site):
    """A page whose form (swap script included) is answered with JSON, not a page."""

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0

    def reset(self, seed: int, task: Any) -> None:
        self.posts = 0

    def handle(self, request: Request) -> Response:
        if request.path == "/data":
            self.posts += request.method == "POST"
            return Response(json={"posts": self.posts})
        form = "<form method='post' action='/data'><button type='submit'>Send</button></form>"
        return Response(page("Send", form, scripts=SWAP_FORMS_SCRIPT))

    def dump(self) -> Any:
        return {"posts": self.posts}

    def load(self, state: Any) -> None:
        self.posts = state["posts"]


def test_an_answer_that_is_no_page_is_opened_and_the_post_not_sent_twice(runtime):
    site = _JsonAnswerSite()
    session = BrowserSession(runtime, site)
    try:
        assert session.open("/") is None
        (send,) = session.observe().elements
        loads = session.slot.loads
        assert session.click(send["bid"]) is None
        # the JSON is opened by a navigation to the answer's address (a GET, as a browser
        # shows a POST's non-HTML answer only by loading it), and the POST was made once
        assert session.slot.loads == loads + 1
        assert session.url == "/data" and site.posts == 1
        assert '{"posts":1}' in " ".join(session.observe().lines)
    finally:
        session.close()

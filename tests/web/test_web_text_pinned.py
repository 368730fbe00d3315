"""Text-mode web observations are pinned: the text browser's caches (parsed pages shared by
source, observations kept while the form state is unchanged) must not change one byte of
what an agent sees.

The digests were computed before those caches existed. Each episode mixes the env's oracle
(fills, clicks, form submits), the first admissible click (the serving benchmark's policy,
which revisits pages), refused actions (an unknown element, a fill of a button), Enter in a
field, ``back`` and ``goto``, and a snapshot taken mid-episode then restored and replayed, so
a cached page or observation that leaked form state between documents, sessions or restores
changes the digest.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from agentgym.simulators.browser.dom import PAGES

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

#: env id -> sha256 of every observation, reward, flag, error and state key of its episodes
PINNED = {
    "agentgym/WebTodoText-v0": "7e0aa0486bddbfb827692daff9f9248452d561a8c7671a78b720f73e98ede788",
    "agentgym/WebFormsText-v0": "f458491e8e783d8d9191dd47ab541508dcea9c21bec1200243f362474afcea42",
    "agentgym/WebShopText-v0": "9c7bb6be20c32af0baa2156a1db775df47e3b486a207cc1d7b080bf8f034423a",
    "agentgym/WebWikiText-v0": "bd96477b46660213c52395ec46a73bc6c58de4df351990fcd28ac8ecf4006461",
}
SEEDS = range(6)
TURNS = 14


def _action(env: gym.Env, turn: int, info: dict) -> str:
    """Explore first (admissible clicks, refused and odd actions), then the oracle."""
    base = env.unwrapped
    admissible = info.get("admissible_actions") or []
    if turn in (0, 1, 3) and admissible:
        return admissible[(5 * turn) % len(admissible)]
    if turn == 2:
        return render_tool_call("click", {"bid": "9999"})
    if turn == 4:
        elements = base.page_elements()
        box = next((e for e in elements if e["role"] == "textbox"), None)
        button = next((e for e in elements if e["role"] == "button"), None)
        if box is not None:
            return render_tool_call("fill", {"bid": box["bid"], "text": "x\ud800y\nz"})
        if button is not None:
            return render_tool_call("fill", {"bid": button["bid"], "text": "nope"})
    if turn == 5:
        return render_tool_call("press", {"key": "Enter"})
    if turn == 6:
        return render_tool_call("back", {})
    if turn == 7:
        return render_tool_call("goto", {"path": "/"})
    return base.oracle_action()


def _episodes_digest(env_id: str) -> str:
    digest = hashlib.sha256()
    env = gym.make(env_id, max_turns=None, disable_env_checker=True)

    def record(*parts: object) -> None:
        digest.update(json.dumps(parts, sort_keys=True, default=repr).encode("utf-8", "replace"))

    for seed in SEEDS:
        obs, info = env.reset(seed=seed)
        record(obs["text"], info.get("admissible_actions"), env.unwrapped.state_key())
        snap = None
        for turn in range(TURNS):
            if turn == 3:
                snap = env.unwrapped.snapshot()
                replay = _action(env, turn, info)
            obs, reward, term, trunc, info = env.step(_action(env, turn, info))
            record(obs["text"], reward, term, trunc, info.get("error"))
            record(info.get("admissible_actions"), info.get("state_key"))
            if term or trunc:
                break
        if snap is not None:
            env.unwrapped.restore(snap)
            obs, reward, term, trunc, info = env.step(replay)
            record("restored", obs["text"], reward, info.get("admissible_actions"))
            record(info.get("state_key"))
    env.close()
    return digest.hexdigest()


@pytest.mark.parametrize("env_id", sorted(PINNED))
def test_text_mode_observations_are_pinned(env_id: str) -> None:
    assert _episodes_digest(env_id) == PINNED[env_id], env_id


def test_envs_on_threads_sharing_the_page_cache_see_what_one_alone_sees() -> None:
    """Four threads play the same episodes at once over one page cache (same seeds, so the
    same pages, shared): each gets the pinned digest."""
    PAGES.clear()
    env_id = "agentgym/WebTodoText-v0"
    with ThreadPoolExecutor(4) as pool:
        digests = list(pool.map(_episodes_digest, [env_id] * 4))
    assert digests == [PINNED[env_id]] * 4

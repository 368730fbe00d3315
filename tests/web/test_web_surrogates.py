"""Lone surrogates in web actions (issue 23): no raise, same in both modes, valid UTF-8.

A model can emit half an emoji (``\\ud83d``) raw or as a JSON escape in a tool call. Filling a
text field with it, or naming it as an element id, must give an observation that encodes as
UTF-8 (the surrogate becomes U+FFFD), and text mode must read exactly like the browser.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import agentgym  # noqa: F401
from agentgym.text import has_lone_surrogate, safe_text

TEXT_IDS = ["WebShopText", "WebFormsText", "WebWikiText", "WebTodoText"]
BROWSER_IDS = ["WebShop", "WebForms", "WebWiki", "WebTodo", "WebWidgets"]
# The JSON escape reaches the env as a real lone surrogate after parsing.
UNKNOWN_BID = '<tool_call>{"name": "click", "arguments": {"bid": "7\\ud800"}}</tool_call>'


def fill(bid: str, text: str) -> str:
    return (
        "<tool_call>"
        + json.dumps({"name": "fill", "arguments": {"bid": bid, "text": text}})
        + "</tool_call>"
    )


def first_textbox(env: gym.Env) -> str:
    return next(e["bid"] for e in env.unwrapped.page_elements() if e["role"] == "textbox")


def test_safe_text_replaces_only_lone_surrogates():
    assert safe_text("x\ud800y\udfff") == "x\ufffdy\ufffd"
    assert safe_text("caf\u00e9 \U0001f600") == "caf\u00e9 \U0001f600"
    assert has_lone_surrogate("a\udbff") and not has_lone_surrogate("a\U0010ffff")
    assert safe_text("\ud83d").encode("utf-8") == "\ufffd".encode()


@pytest.mark.parametrize("name", TEXT_IDS)
def test_text_mode_fill_with_a_surrogate_keeps_the_rest_and_encodes(name):
    env = gym.make(f"agentgym/{name}-v0")
    env.reset(seed=0)
    obs, _r, _term, _trunc, info = env.step(fill(first_textbox(env), "x\ud800y"))
    assert info["action_valid"] is True and info["error"] is None
    assert 'value="x\ufffdy"' in obs["text"]
    obs["text"].encode("utf-8")
    assert len(info["state_key"]) == 32
    obs, _r, _term, _trunc, info = env.step(UNKNOWN_BID)
    assert info["error"] == "there is no element [7\ufffd] on this page"
    assert "Error: there is no element [7\ufffd] on this page" in obs["text"]
    obs["text"].encode("utf-8")
    env.close()


@pytest.mark.browser
def test_browser_mode_reads_like_text_mode_and_echoes_valid_utf8(runtime):
    browser = gym.make("agentgym/WebShop-v0")
    text = gym.make("agentgym/WebShopText-v0")
    browser.reset(seed=0)
    text.reset(seed=0)
    action = fill(first_textbox(text), "x\ud800y")
    for act in (action, UNKNOWN_BID):
        rb, rt = browser.step(act), text.step(act)
        assert rb[0]["text"] == rt[0]["text"]
        assert rb[4]["error"] == rt[4]["error"]
        rb[0]["text"].encode("utf-8")
    browser.close()
    text.close()
    for name in BROWSER_IDS:
        env = gym.make(f"agentgym/{name}-v0")
        env.reset(seed=0)
        obs, _r, _term, _trunc, info = env.step(UNKNOWN_BID)
        assert info["error"] == "there is no element [7\ufffd] on this page", name
        obs["text"].encode("utf-8")
        env.close()

"""The fast markup reader builds exactly the tree html.parser builds, or steps aside."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from agentgym.simulators.browser.dom import Node, _Builder
from agentgym.simulators.browser.markup import feed_fast

import agentgym  # noqa: F401

TEXT_IDS = [
    "agentgym/WebShopText-v0",
    "agentgym/WebFormsText-v0",
    "agentgym/WebWikiText-v0",
    "agentgym/WebTodoText-v0",
]


def _shape(node: Node) -> Any:
    if node.text is not None:
        return node.text
    return (node.tag, list(node.attrs.items()), [_shape(c) for c in node.children])


def _both(source: str) -> tuple[Any, Any]:
    """(the fast reader's tree or None where it stepped aside, html.parser's tree)."""
    fast = _Builder()
    accepted = feed_fast(source, fast)
    slow = _Builder()
    slow.feed(source)
    slow.close()
    return (_shape(fast.root) if accepted else None), _shape(slow.root)


def _site_pages(env_id: str, seeds: range, turns: int) -> list[str]:
    env = gym.make(env_id, disable_env_checker=True)
    pages = []
    for seed in seeds:
        _, info = env.reset(seed=seed)
        pages.append(env.unwrapped.driver.doc.source)
        for turn in range(turns):
            actions = info.get("admissible_actions")
            if turn % 2 or not actions:  # the oracle makes progress, clicks wander
                actions = [env.unwrapped.oracle_action()]
            _, _, term, trunc, info = env.step(actions[(7 * turn + seed) % len(actions)])
            pages.append(env.unwrapped.driver.doc.source)
            if term or trunc:
                break
    env.close()
    return pages


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_every_site_page_is_read_fast_into_the_same_tree(env_id: str) -> None:
    pages = _site_pages(env_id, range(12), 8)
    assert len(set(pages)) > 12
    for source in pages:
        fast, slow = _both(source)
        assert fast is not None, source[:300]  # the sites' own markup stays in the subset
        assert fast == slow


# (markup, whether the fast reader takes it)
CASES = [
    ("<!DOCTYPE html><HTML><Body CLASS=x>Hi &amp; bye&#33; &lt;b&gt;</body></html>", True),
    ("<p title='a &quot;q&quot; &amp; b' data-x=\"1>2\" hidden>t</p>", True),
    ("<input value=plain disabled><br/><div/>after<img src=x>", True),
    ("<a href='/x' href='/y'>dup</a><input value='' name=n >", True),
    ("<p\n  class='c'\n>multi\nline</P  >", True),
    ("<script>if (a < b && c > d) { x = '</p>'; }</script><p>z</p>", True),
    ("<style>p > a { color: red }</STYLE >t<script src='s.js'/>u", True),
    ("<textarea name=t>a &gt; b <b>bold</b></textarea>", True),
    ("<a x=1/>slash in a plain value</a>", False),
    ("<a x='1'y='2'>no space between</a>", False),
    ("text <3 and more", False),
    ("<p>a <!-- note --> b</p>", False),
    ("<a\x0bhref='/'>vertical tab</a>", False),
    ("<a x=>empty</a>", False),
    ("<a / >spaced slash</a>", False),
    ("<p>unclosed <script>var a = 1;", False),
    ("</ p>end tag with a space</p>", True),
    ("<p>trailing &amp", True),
    ("<p>ends in a tag <b", False),
]


@pytest.mark.parametrize(("source", "fast"), CASES)
def test_tricky_markup_reads_the_same_or_falls_back(source: str, fast: bool) -> None:
    fast_tree, slow_tree = _both(source)
    assert (fast_tree is not None) == fast
    if fast_tree is not None:
        assert fast_tree == slow_tree

"""The web shop counts success only at a purchase score of exactly 1 (issue 38).

The card (envs/web/shop.py) says ``success`` means a score of exactly 1, and that the
episode ends at the purchase whatever its score. A real purchase with one wrong option
scores 5/6 and is not a success; scores closer to 1 (0.99, 0.999999) cannot come out of the
catalog, so the grading rule is also held to them with the real shop and a real purchase,
only the score of the bought product replaced. WebShop-v0 (Chromium) grades with the same
class; the text mode needs no browser.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from agentgym.envs.web import shop as shop_env
from agentgym.simulators.browser.sites.shop import shop_reward

import agentgym  # noqa: F401
from agentgym.parsing import render_tool_call

ENV = "agentgym/WebShopText-v0"
SEED = 0  # goal: 3 attributes, colour and size options; 6 parts in the score


def _open_the_target(env: gym.Env) -> None:
    """Follow the oracle until the target product's page is open, options not chosen."""
    goal = env.unwrapped.shop.goal
    for _ in range(10):
        if env.unwrapped._page.url.startswith(f"/item/{goal.asin}"):
            return
        *_, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
        assert not (terminated or truncated)
    raise AssertionError("the oracle did not reach the target product")


def _buy(env: gym.Env, options: dict[str, str]) -> tuple[float, bool, bool, dict[str, Any]]:
    elements = {e["name"]: e for e in env.unwrapped.page_elements()}
    for dim, value in options.items():
        env.step(render_tool_call("check", {"bid": elements[f"{dim}: {value}"]["bid"]}))
    _, reward, terminated, truncated, info = env.step(
        render_tool_call("click", {"bid": elements["Buy Now"]["bid"]})
    )
    return reward, terminated, truncated, info


def test_a_purchase_with_one_wrong_option_scores_below_1_and_is_no_success():
    env = gym.make(ENV)
    env.reset(seed=SEED)
    goal = env.unwrapped.shop.goal
    assert len(goal.attributes) + len(goal.options) + 1 == 6
    _open_the_target(env)
    names = [e["name"] for e in env.unwrapped.page_elements()]
    wrong = next(
        n for n in names if n.startswith("color: ") and n != f"color: {goal.options['color']}"
    )
    _, terminated, truncated, info = _buy(
        env, {"color": wrong.split(": ", 1)[1], "size": goal.options["size"]}
    )
    assert terminated and not truncated  # the purchase ends the episode
    assert info["reward_components"]["outcome"] == pytest.approx(5 / 6)
    assert info["success"] is False

    env.reset(seed=SEED)  # the same product with the goal's options: exactly 1, a success
    _open_the_target(env)
    _, terminated, _, info = _buy(env, dict(goal.options))
    assert terminated and info["reward_components"]["outcome"] == 1.0
    assert info["success"] is True
    env.close()


@pytest.mark.parametrize(
    ("score", "success"),
    [(1.0, True), (0.999999, False), (0.99, False), (0.5, False), (0.0, False)],
)
def test_success_is_a_score_of_exactly_1(monkeypatch: pytest.MonkeyPatch, score, success):
    def scored(goal, product, chosen):
        parts = shop_reward(goal, product, chosen)
        return {**parts, "reward": score} if chosen else parts  # only the purchase's score

    monkeypatch.setattr(shop_env, "shop_reward", scored)
    env = gym.make(ENV)
    env.reset(seed=SEED)
    _open_the_target(env)
    _, terminated, truncated, info = _buy(env, dict(env.unwrapped.shop.goal.options))
    assert terminated and not truncated
    assert info["reward_components"]["outcome"] == score
    assert info["success"] is success
    env.close()


def _goto(env: gym.Env, path: str) -> float:
    """Open ``path``; the ``progress`` component that step earned."""
    _, _, terminated, _, info = env.step(render_tool_call("goto", {"path": path}))
    assert info["action_valid"] and not terminated, info["error"]
    return info["reward_components"]["progress"]


def test_progress_is_paid_once_for_the_first_page_of_a_matching_product():
    """The card's ``progress``: 1 the first time the agent opens a product page of the right
    type with every requested attribute (seed 11 asks for one attribute, "usb charging")."""
    env = gym.make(ENV)
    env.reset(seed=11)
    goal = env.unwrapped.shop.goal
    catalog = env.unwrapped.shop.catalog
    parts = {asin: shop_reward(goal, catalog.by_asin[asin], {}) for asin in ("B10013", "B10000")}
    assert parts["B10013"]["r_type"] == 1.0 and parts["B10013"]["attributes"] < 1.0
    assert parts["B10000"]["r_type"] < 1.0 and parts["B10000"]["attributes"] == 1.0
    assert _goto(env, "/item/B10013") == 0.0  # the right type, an attribute missing
    assert _goto(env, "/item/B10000") == 0.0  # every attribute, the wrong type
    assert _goto(env, "/search?q=usb+charging") == 0.0  # not a product page
    assert _goto(env, f"/item/{goal.asin}?q=usb") == 1.0  # the first matching page
    assert _goto(env, "/") == 0.0
    assert _goto(env, f"/item/{goal.asin}") == 0.0  # paid once per episode
    env.reset(seed=11)
    assert _goto(env, f"/item/{goal.asin}") == 1.0  # a new episode pays again
    env.close()

"""WebShop-like shopping: search a synthetic catalog, pick options, buy the right thing.

=================  ===========================================================
ids                ``agentgym/WebShop-v0`` (real Chromium), ``agentgym/WebShopText-v0``
                   (no browser: the same pages parsed in Python, same observations)
catalog            3,000 synthetic products (14 types) from seed 0; BM25 search (bm25s)
action             one browser tool call per turn (click, fill, select, check, uncheck,
                   press, scroll, goto, back)
observation        text (task, URL, title, steps left, last error, page lines)
turn budget        15 turns, then truncated
=================  ===========================================================

Admissible actions
    ``info["admissible_actions"]``: clicks on the page's enabled elements and, where the
    search box is, filling it with the task's instruction verbatim.

Observations
    As every web env (see ``docs/web.md``): header lines, then ``Page:`` and the page in
    document order with ``[bid] role "name"`` lines for interactive elements.

Actions
    Search by filling the search box and clicking *Search* (or pressing Enter), open a
    result, choose options with ``check`` on their radio buttons, then click *Buy Now*.

Rewards (component: default weight)
    * ``format`` (0.1): -1 for an invalid or failed action, else 0.
    * ``progress`` (0.2): 1 the first time the agent opens a product page of the right type
      that has every requested attribute.
    * ``outcome`` (1.0): WebShop's score of the purchase, in [0, 1]:
      ``r_type * (attributes hit + options hit + [price <= bound]) / (n_attr + n_opt + 1)``.
      ``success`` means a score of exactly 1. The episode ends at the purchase.

Tasks
    ``shop-<seed>``; train seeds 0..99,999, test 100,000..100,999. The goal (a target
    product's type, 1-3 of its attributes, its option values, a price bound) is drawn from
    the seed; any product meeting it scores 1.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.web.base import Grade, WebEnv, WebOptions
from agentgym.simulators.browser.site import Site
from agentgym.simulators.browser.sites.shop import ShopSite, shop_reward

from agentgym.parsing import render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits


class WebShopEnv(WebEnv):
    """WebShop-like store; see the module docstring for the card."""

    default_reward_weights: ClassVar[dict[str, float]] = {
        "format": 0.1,
        "progress": 0.2,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 15
    text_mode_ok: ClassVar[bool] = True

    def __init__(self, *, catalog_size: int = 3000, **options: Unpack[WebOptions]):
        self.catalog_size = int(catalog_size)
        self._splits = seeded_splits("shop")
        self._progress_given = False
        super().__init__(**options)

    def env_state(self) -> Any:
        return self._progress_given

    def load_env_state(self, state: Any) -> None:
        self._progress_given = state

    def make_site(self) -> Site:
        return ShopSite(catalog_size=self.catalog_size)

    @property
    def shop(self) -> ShopSite:
        assert isinstance(self.site, ShopSite)
        return self.site

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    def site_task(self, task_id: str) -> tuple[int, dict[str, Any]]:
        self._progress_given = False
        return SeededTaskSet.seed_of(task_id), {}

    def instruction(self) -> str:
        assert self.shop.goal is not None
        return self.shop.goal.instruction()

    def grade(self, answer: str | None) -> Grade:
        shop, goal = self.shop, self.shop.goal
        assert goal is not None
        components: dict[str, float] = {}
        url = self._page.url if self._page else ""
        if not self._progress_given and url.startswith("/item/"):
            product = shop.catalog.by_asin.get(url[6:].split("?")[0])
            if product is not None:
                parts = shop_reward(goal, product, {})
                if parts["r_type"] == 1.0 and parts["attributes"] == 1.0:
                    self._progress_given = True
                    components["progress"] = 1.0
        with shop.lock:
            purchase = shop.purchase
        if purchase is None:
            return Grade(components)
        product = shop.catalog.by_asin[purchase["asin"]]
        parts = shop_reward(goal, product, purchase["options"])
        components["outcome"] = parts["reward"]
        return Grade(
            components,
            done=True,
            success=parts["reward"] >= 1.0 - 1e-9,
            message="Purchase complete.",
        )

    def admissible_actions(self) -> list[str] | None:
        """The page's clicks, plus searching for the instruction verbatim where there is a
        search box: a query a policy without free text can issue, and one BM25 answers well
        (most first result pages hold products that satisfy the goal)."""
        out = list(super().admissible_actions() or [])
        box = next(
            (e for e in self.page_elements() if e["role"] == "textbox" and e["name"] == "Search"),
            None,
        )
        if box is not None and box.get("value") != self.instruction():
            out.append(render_tool_call("fill", {"bid": box["bid"], "text": self.instruction()}))
        return out or None

    def oracle_action(self) -> str:
        """Search for the target product, open it, choose the goal's options, buy."""
        goal, page = self.shop.goal, self._page
        assert goal is not None and page is not None
        target = self.shop.catalog.by_asin[goal.asin]
        els = page.elements
        if page.url.startswith(f"/item/{goal.asin}"):
            for dim, value in goal.options.items():
                radio = next((e for e in els if e["name"] == f"{dim}: {value}"), None)
                if radio is not None and not radio.get("checked"):
                    return render_tool_call("check", {"bid": radio["bid"]})
            buy = next((e for e in els if e["name"] == "Buy Now"), None)
            if buy is not None:
                return render_tool_call("click", {"bid": buy["bid"]})
        if page.url.startswith("/search"):
            link = next((e for e in els if e["role"] == "link" and e["name"] == target.title), None)
            if link is not None:
                return render_tool_call("click", {"bid": link["bid"]})
        if page.url.startswith("/item/"):
            return render_tool_call("goto", {"path": f"/item/{goal.asin}"})
        box = next((e for e in els if e["role"] == "textbox" and e["name"] == "Search"), None)
        if box is None:
            return render_tool_call("goto", {"path": "/"})
        if box.get("value") != target.title:
            return render_tool_call("fill", {"bid": box["bid"], "text": target.title})
        button = next((e for e in els if e["role"] == "button" and e["name"] == "Search"), None)
        if button is not None:
            return render_tool_call("click", {"bid": button["bid"]})
        return render_tool_call("press", {"key": "Enter"})

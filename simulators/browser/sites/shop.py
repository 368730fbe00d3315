"""A WebShop-like store: search, result pages, product pages with options, checkout.

Pages (server-rendered, no JavaScript, so the text mode works): ``/`` (search form),
``/search?q=..&page=N`` (10 BM25 hits per page), ``/item/<asin>?q=..`` (title, price,
rating, features, option radio groups, *Buy Now*), ``POST /buy/<asin>`` (records the
purchase) and ``/done``. The goal is drawn from the task seed: a target product's type,
1-3 of its attributes, one value per option dimension and a price bound.

:func:`shop_reward` is WebShop's: ``r_type * (attributes hit + options hit + price ok) /
(attributes + options + 1)``, with fuzzy matching (``rapidfuzz``) for attributes and options
and ``r_type`` in {1, 0.5, 0.1, 0} from how well the product type matches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote_plus

import numpy as np
from agentgym.simulators.browser.site import Request, Response, Site, esc, not_found, page
from agentgym.simulators.browser.sites.catalog import Catalog, Product, get_catalog, tokenize

PER_PAGE = 10


@dataclass
class ShopGoal:
    asin: str
    type: str
    attributes: list[str]
    options: dict[str, str]
    max_price: float

    def instruction(self) -> str:
        attrs = " and ".join(self.attributes)
        opts = ", ".join(f"{k} {v}" for k, v in self.options.items())
        text = f"I am looking for {attrs} {self.type}"
        if opts:
            text += f" with {opts}"
        return text + f", and price lower than {self.max_price:.2f} dollars."


def make_goal(catalog: Catalog, seed: int) -> ShopGoal:
    rng = np.random.default_rng([seed, 4_242])
    product = catalog.products[int(rng.integers(len(catalog.products)))]
    k = int(rng.integers(1, min(3, len(product.attributes)) + 1))
    attrs = [
        product.attributes[int(i)]
        for i in sorted(rng.choice(len(product.attributes), k, replace=False))
    ]
    options = {d: vals[int(rng.integers(len(vals)))] for d, vals in product.options.items()}
    bound = float(np.ceil(product.price * float(rng.uniform(1.1, 1.6))))
    return ShopGoal(product.asin, product.type, attrs, options, bound)


def _fuzzy_hit(want: str, have: list[str], title: str = "") -> bool:
    from rapidfuzz import fuzz

    want_l = want.lower()
    if want_l in title.lower():
        return True
    return any(want_l in h.lower() or fuzz.token_set_ratio(want_l, h.lower()) > 85 for h in have)


def type_reward(goal: ShopGoal, product: Product) -> float:
    if product.type == goal.type:
        return 1.0
    if product.group == Catalog_group(goal.type):
        return 0.5
    if set(tokenize(goal.type)) & set(tokenize(product.title)):
        return 0.1
    return 0.0


def Catalog_group(ptype: str) -> str:
    from agentgym.simulators.browser.sites.catalog import PRODUCT_TYPES

    return PRODUCT_TYPES[ptype][0]


def shop_reward(goal: ShopGoal, product: Product, chosen: Mapping[str, str]) -> dict[str, float]:
    """WebShop's reward and its parts for buying ``product`` with options ``chosen``."""
    r_type = type_reward(goal, product)
    attr_hits = sum(_fuzzy_hit(a, product.attributes, product.title) for a in goal.attributes)
    opt_hits = sum(
        _fuzzy_hit(v, [chosen.get(d, "")]) if chosen.get(d) else 0 for d, v in goal.options.items()
    )
    price_ok = 1.0 if product.price <= goal.max_price else 0.0
    total = len(goal.attributes) + len(goal.options) + 1
    score = r_type * (attr_hits + opt_hits + price_ok) / total
    return {
        "r_type": r_type,
        "attributes": attr_hits / max(1, len(goal.attributes)),
        "options": opt_hits / max(1, len(goal.options)),
        "price": price_ok,
        "reward": score,
    }


HEADER = "<header class='ag'><b>Shop</b> <a href='/'>Home</a></header>"


class ShopSite(Site):
    """The store; state = the goal (from the seed) and the purchase, if any."""

    def __init__(self, catalog_seed: int = 0, catalog_size: int = 3000):
        super().__init__()
        self.catalog = get_catalog(catalog_seed, catalog_size)
        self.seed = 0
        self.goal: ShopGoal | None = None
        self.purchase: dict[str, Any] | None = None

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        self.seed = int(seed)
        self.goal = make_goal(self.catalog, self.seed)
        self.purchase = None

    def dump(self) -> Any:
        return {"seed": self.seed, "purchase": self.purchase}

    def load(self, state: Any) -> None:
        self.reset(state["seed"], {})
        self.purchase = state["purchase"]

    def handle(self, request: Request) -> Response:
        path = request.path
        if path == "/" and request.method == "GET":
            return Response(self._home())
        if path == "/search" and request.method == "GET":
            return Response(self._results(request.arg("q"), request.arg("page", "1")))
        if path.startswith("/item/") and request.method == "GET":
            product = self.catalog.by_asin.get(path[6:])
            if product is None:
                return not_found(path)
            return Response(self._item(product, request.arg("q")))
        if path.startswith("/buy/") and request.method == "POST":
            product = self.catalog.by_asin.get(path[5:])
            if product is None:
                return not_found(path)
            if self.purchase is None:
                chosen = {
                    d: request.arg(f"opt_{d}") for d in product.options if request.arg(f"opt_{d}")
                }
                self.purchase = {"asin": product.asin, "options": chosen}
            return Response(redirect="/done")
        if path == "/done" and request.method == "GET":
            return Response(self._done())
        return not_found(path)

    # -- pages ---------------------------------------------------------------------------

    def _search_form(self, q: str = "") -> str:
        return (
            "<form action='/search' method='get'>"
            f"<input name='q' aria-label='Search' value='{esc(q)}'>"
            "<button type='submit'>Search</button></form>"
        )

    def _home(self) -> str:
        assert self.goal is not None
        body = (
            f"<div class='card'>Instruction: {esc(self.goal.instruction())}</div>"
            + self._search_form()
        )
        return page("Shop", HEADER + body)

    def _results(self, q: str, page_arg: str) -> str:
        hits = self.catalog.search(q, limit=50) if q.strip() else []
        try:
            n = max(1, min(5, int(page_arg)))
        except ValueError:
            n = 1
        shown = hits[(n - 1) * PER_PAGE : n * PER_PAGE]
        qq = quote_plus(q)
        rows = "".join(
            f"<div class='card'><a href='/item/{p.asin}?q={qq}'>{esc(p.title)}</a>"
            f"<div>{p.asin} · ${p.price:.2f}</div></div>"
            for p in shown
        )
        nav = ""
        if n > 1:
            nav += f"<a href='/search?q={qq}&page={n - 1}'>Previous page</a> "
        if n * PER_PAGE < len(hits):
            nav += f"<a href='/search?q={qq}&page={n + 1}'>Next page</a>"
        body = (
            self._search_form(q)
            + f"<p>Page {n} of {max(1, -(-len(hits) // PER_PAGE))}: {len(hits)} results for {esc(q)}</p>"
            + (rows or "<p>No products match.</p>")
            + f"<p>{nav}</p>"
        )
        return page(f"Results: {q}", HEADER + body)

    def _item(self, p: Product, q: str) -> str:
        back = (
            f"<a href='/search?q={quote_plus(q)}'>Back to results</a>"
            if q
            else "<a href='/'>Back to search</a>"
        )
        groups = ""
        for dim, values in p.options.items():
            radios = "".join(
                f"<label><input type='radio' name='opt_{esc(dim)}' value='{esc(v)}' aria-label='{esc(dim)}: {esc(v)}'> {esc(v)}</label> "
                for v in values
            )
            groups += f"<p>{esc(dim)}: {radios}</p>"
        body = (
            f"{back}<h2>{esc(p.title)}</h2><p>Price: ${p.price:.2f}</p><p>Rating: {p.rating} / 5</p>"
            f"<p>Features: {esc(', '.join(p.attributes))}</p><p>{esc(p.description)}</p>"
            f"<form action='/buy/{p.asin}' method='post'>{groups}<button type='submit'>Buy Now</button></form>"
        )
        return page(p.title, HEADER + body)

    def _done(self) -> str:
        if self.purchase is None:
            return page("Checkout", HEADER + "<p>Nothing bought yet.</p>")
        p = self.catalog.by_asin[self.purchase["asin"]]
        opts = ", ".join(f"{k}: {v}" for k, v in self.purchase["options"].items()) or "no options"
        return page(
            "Thank you",
            HEADER + f"<h2>Thank you for your purchase</h2><p>{esc(p.title)} ({esc(opts)})</p>",
        )

    def goal_dict(self) -> dict[str, Any]:
        assert self.goal is not None
        return asdict(self.goal)

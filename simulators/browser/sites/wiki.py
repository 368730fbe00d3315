"""A small encyclopedia of invented cities and people, for information seeking.

Pages: ``/`` (index of articles and a search form), ``/search?q=..``, ``/wiki/<slug>``
(an article with an info table; people link to their home city). Questions come from the
task seed: a fact of a city (one hop) or a fact of a person's home city (two hops). The
wiki content itself is fixed (seed 0), so it can be learned; questions vary.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

import numpy as np
from agentgym.simulators.browser.site import Request, Response, Site, esc, not_found, page
from agentgym.simulators.browser.sites.words import FIRST_NAMES, LAST_NAMES, WORDS

HEADER = "<header class='ag'><b>Wiki</b> <a href='/'>Index</a></header>"
CITY_FACTS = {
    "population": "population",
    "founded": "year of founding",
    "mayor": "mayor",
    "elevation": "elevation in metres",
    "river": "river",
}


@dataclass(frozen=True)
class Article:
    slug: str
    title: str
    kind: str
    facts: tuple[tuple[str, str], ...]
    text: str

    def fact(self, key: str) -> str:
        return dict(self.facts)[key]


@functools.lru_cache(maxsize=2)
def build_wiki(seed: int = 0, cities: int = 40, people: int = 60) -> dict[str, Article]:
    rng = np.random.default_rng([seed, 9_090])
    names = sorted({w.title() + suffix for w in WORDS for suffix in ("ton", "burg", "vale")})
    picked = [names[int(i)] for i in rng.choice(len(names), cities, replace=False)]
    out: dict[str, Article] = {}
    for name in picked:
        facts: tuple[tuple[str, str], ...] = (
            ("population", str(int(rng.integers(2_000, 900_000)))),
            ("founded", str(int(rng.integers(1100, 1950)))),
            (
                "mayor",
                f"{FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]} {LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]}",
            ),
            ("elevation", str(int(rng.integers(0, 2400)))),
            ("river", WORDS[int(rng.integers(len(WORDS)))].title() + " River"),
        )
        slug = name.lower()
        text = f"{name} is a city on the {dict(facts)['river']}. It was founded in {dict(facts)['founded']}."
        out[slug] = Article(slug, name, "city", facts, text)
    city_list = list(out.values())
    for i in range(people):
        name = f"{FIRST_NAMES[int(rng.integers(len(FIRST_NAMES)))]} {LAST_NAMES[int(rng.integers(len(LAST_NAMES)))]} {i}"
        home = city_list[int(rng.integers(len(city_list)))]
        facts = (
            ("born in", home.title),
            ("occupation", WORDS[int(rng.integers(len(WORDS)))] + " maker"),
            ("born", str(int(rng.integers(1900, 2000)))),
        )
        slug = name.lower().replace(" ", "-")
        out[slug] = Article(
            slug,
            name,
            "person",
            facts,
            f"{name} is a {dict(facts)['occupation']} from {home.title}.",
        )
    return out


def make_question(seed: int) -> dict[str, Any]:
    wiki = build_wiki()
    rng = np.random.default_rng([seed, 3_131])
    key = list(CITY_FACTS)[int(rng.integers(len(CITY_FACTS)))]
    if rng.integers(2):
        people = [a for a in wiki.values() if a.kind == "person"]
        person = people[int(rng.integers(len(people)))]
        city = wiki[person.fact("born in").lower()]
        q = f"What is the {CITY_FACTS[key]} of the city where {person.title} was born?"
        path = [person.slug, city.slug]
    else:
        cities = [a for a in wiki.values() if a.kind == "city"]
        city = cities[int(rng.integers(len(cities)))]
        q = f"What is the {CITY_FACTS[key]} of {city.title}?"
        path = [city.slug]
    return {"question": q, "answer": city.fact(key), "path": path}


def normalize(text: str) -> str:
    return " ".join(text.lower().replace(",", "").replace(".", " ").split())


class WikiSite(Site):
    """The wiki; state = the question seed (the wiki itself never changes)."""

    def __init__(self) -> None:
        super().__init__()
        self.wiki = build_wiki()
        self.seed = 0
        self.question: dict[str, Any] = {}

    def reset(self, seed: int, task: Mapping[str, Any]) -> None:
        self.seed = int(seed)
        self.question = make_question(self.seed)

    def dump(self) -> Any:
        return {"seed": self.seed}

    def load(self, state: Any) -> None:
        self.reset(state["seed"], {})

    def handle(self, request: Request) -> Response:
        form = (
            "<form action='/search' method='get'><input name='q' aria-label='Search the wiki'>"
            "<button type='submit'>Search</button></form>"
        )
        if request.path == "/":
            cities = sorted(a.title for a in self.wiki.values() if a.kind == "city")
            links = " · ".join(f"<a href='/wiki/{esc(t.lower())}'>{esc(t)}</a>" for t in cities)
            body = form + f"<h2>Cities</h2><p>{links}</p><p>People: use the search.</p>"
            return Response(page("Wiki index", HEADER + body))
        if request.path == "/search":
            q = request.arg("q").strip().lower()
            hits = [a for a in self.wiki.values() if q and q in a.title.lower()][:20]
            rows = "".join(
                f"<li><a href='/wiki/{esc(a.slug)}'>{esc(a.title)}</a></li>" for a in hits
            )
            body = form + f"<p>{len(hits)} results for {esc(q)}</p><ul>{rows}</ul>"
            return Response(page(f"Search: {q}", HEADER + body))
        if request.path.startswith("/wiki/"):
            art = self.wiki.get(request.path[6:])
            if art is None:
                return not_found(request.path)
            rows = ""
            for key, value in art.facts:
                shown = esc(value)
                if key == "born in":
                    shown = f"<a href='/wiki/{quote_plus(value.lower())}'>{esc(value)}</a>"
                rows += f"<tr><th>{esc(key)}</th><td>{shown}</td></tr>"
            body = f"<h2>{esc(art.title)}</h2><table>{rows}</table><p>{esc(art.text)}</p>"
            return Response(page(art.title, HEADER + body))
        return not_found(request.path)

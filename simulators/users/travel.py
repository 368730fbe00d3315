"""Travel preference elicitation: a traveller with hidden hotel preferences.

The traveller wants a hotel in a city and holds 3-4 hidden preferences (area, budget,
stars, breakfast, pets, parking, pool), each with an importance. The catalogue holds ten
hotels; exactly one satisfies every hidden preference. ``search`` ranks hotels by how many
of the query's constraints they meet and shows the top five, so a good query needs the
preferences first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from agentgym.simulators.users.core import Dialogue, Fact, FactUser, Opening, ToolResult
from agentgym.simulators.users.text import mentioned, normalise, numbers, tokens

CITIES = ("Lisbon", "Kyoto", "Vienna", "Montreal", "Cape Town", "Valencia", "Oslo", "Seoul")
AREAS = ("old town", "beach", "airport", "business district", "university quarter")
NAME_A = (
    "Azure",
    "Grand",
    "Little",
    "Royal",
    "Harbor",
    "Garden",
    "Silver",
    "Maple",
    "Cedar",
    "Golden",
    "Quiet",
    "North",
)
NAME_B = ("Inn", "Suites", "Lodge", "House", "Palace", "Rooms", "Residence", "Stay")
BUDGETS = (90, 120, 160, 220)
BOOL_ATTRS = ("breakfast", "pets", "parking", "pool")

#: attribute -> (keywords, topic, question)
TOPICS: dict[str, tuple[tuple[str, ...], str, str]] = {
    "area": (
        ("area", "neighborhood", "neighbourhood", "location", "district", "where", "located"),
        "the area",
        "Which area of the city would you like to stay in?",
    ),
    "budget": (
        ("budget", "price", "cost", "afford", "expensive", "cheap", "spend", "pay", "much"),
        "the price",
        "What is your budget per night?",
    ),
    "stars": (
        ("star", "rating", "quality", "luxury", "class", "fancy"),
        "the hotel class",
        "How many stars should the hotel have?",
    ),
    "breakfast": (
        ("breakfast", "meal", "food", "morning"),
        "breakfast",
        "Do you need breakfast included?",
    ),
    "pets": (("pet", "dog", "cat", "animal"), "my dog", "Will you be travelling with a pet?"),
    "parking": (
        ("parking", "car", "drive", "driving", "park"),
        "parking",
        "Will you need parking for a car?",
    ),
    "pool": (
        ("pool", "swim", "swimming", "gym", "amenity", "amenitie"),
        "a pool",
        "Is a swimming pool important to you?",
    ),
}


@dataclass(frozen=True)
class Hotel:
    """One catalogue entry."""

    id: str
    name: str
    area: str
    price: int
    stars: int
    breakfast: bool
    pets: bool
    parking: bool
    pool: bool

    def line(self) -> str:
        feats = [f"{'with' if getattr(self, a) else 'no'} {a}" for a in BOOL_ATTRS]
        return (
            f"[{self.id}] {self.name} | {self.area} | ${self.price}/night | "
            f"{self.stars} stars | " + ", ".join(feats)
        )


def _satisfies(hotel: Hotel, prefs: Mapping[str, Any]) -> dict[str, bool]:
    out = {}
    for key, want in prefs.items():
        if key == "budget":
            out[key] = hotel.price <= want
        elif key == "stars":
            out[key] = hotel.stars >= want
        elif key == "area":
            out[key] = hotel.area == want
        else:
            out[key] = getattr(hotel, key) is True
    return out


def _facts(prefs: Mapping[str, Any], importance: Mapping[str, float]) -> list[Fact]:
    facts = []
    for key, want in prefs.items():
        kw, topic, question = TOPICS[key]
        if key == "area":
            value = str(want)
            direct = (f"I'd like to stay in the {want} area.",)
            indirect = (f"I want to be close to everything in the {want}.",)
        elif key == "budget":
            value = str(want)
            direct = (f"My budget is at most ${want} per night.",)
            indirect = (f"I really can't go above {want} dollars a night.",)
        elif key == "stars":
            value = f"{want} stars"
            direct = (f"It should have at least {want} stars.",)
            indirect = (f"Anything under {want} stars feels too basic for me.",)
        else:
            value = key
            direct = {
                "breakfast": ("Breakfast must be included.",),
                "pets": ("I'm bringing my dog, so it has to allow pets.",),
                "parking": ("I'm driving, so I need parking.",),
                "pool": ("I'd love a hotel with a pool.",),
            }[key]
            indirect = {
                "breakfast": ("I can't function without breakfast at the hotel.",),
                "pets": ("My dog goes everywhere with me, so pets have to be welcome.",),
                "parking": ("We're coming by car and need somewhere to park it.",),
                "pool": ("Swimming every morning in a pool is a must for me.",),
            }[key]
        hint = key in ("area", "budget", "stars")  # naming a yes/no topic would give it away
        facts.append(Fact(key, value, kw, direct, indirect, importance[key], question, topic, hint))
    return facts


class TravelDialogue(Dialogue):
    """A hotel search with a traveller holding hidden preferences."""

    search_help = (
        "search(query): list the hotels that best match a query such as "
        "'beach under $160 4 stars breakfast pets'."
    )
    answer_help = "answer(answer): the id of the hotel to book, e.g. 'H3'."

    def start(self, task_seed: int, user_seed: int) -> Opening:
        rng = np.random.default_rng(task_seed)
        self.city = CITIES[int(rng.integers(len(CITIES)))]
        keys = list(TOPICS)
        n = int(rng.integers(3, 5))
        chosen = [keys[i] for i in sorted(rng.choice(len(keys), size=n, replace=False))]
        prefs: dict[str, Any] = {}
        for key in chosen:
            if key == "area":
                prefs[key] = AREAS[int(rng.integers(len(AREAS)))]
            elif key == "budget":
                prefs[key] = BUDGETS[int(rng.integers(len(BUDGETS)))]
            elif key == "stars":
                prefs[key] = int(rng.integers(3, 6))
            else:
                prefs[key] = True
        self.prefs = prefs
        importance = {k: float(rng.integers(1, 4)) for k in prefs}
        self.hotels = self._catalogue(rng)
        self.user = FactUser(
            f"A traveller looking for a hotel in {self.city}; friendly but brief.",
            _facts(prefs, importance),
            wording=self.wording,
        )
        self.user.reset(seed=user_seed)
        self.searched_best = False
        self.chosen: str | None = None
        self.success = self.done = False
        text = self.user.choose(
            (
                f"Hi! I need a hotel in {self.city} for next week.",
                f"Hello, can you help me book a hotel in {self.city}?",
            )
        )
        instruction = (
            f"Help the traveller book the hotel in {self.city} that fits all their "
            "preferences. Ask about them one at a time, search, then answer with the "
            "hotel id."
        )
        return Opening(instruction, text)

    def _catalogue(self, rng: np.random.Generator) -> list[Hotel]:
        names = [f"{a} {b}" for a in NAME_A for b in NAME_B]
        picks = rng.choice(len(names), size=10, replace=False)
        best_pos = int(rng.integers(1, 10))  # never first, so an unguided pick misses it
        hotels = []
        for i in range(10):
            while True:
                h = Hotel(
                    id=f"H{i + 1}",
                    name=names[int(picks[i])],
                    area=AREAS[int(rng.integers(len(AREAS)))],
                    price=int(rng.integers(6, 30)) * 10,
                    stars=int(rng.integers(2, 6)),
                    breakfast=bool(rng.integers(2)),
                    pets=bool(rng.integers(2)),
                    parking=bool(rng.integers(2)),
                    pool=bool(rng.integers(2)),
                )
                ok = all(_satisfies(h, self.prefs).values())
                if i == best_pos:
                    h = self._make_fit(h)
                    break
                if not ok:
                    break
            hotels.append(h)
        self.best = hotels[best_pos].id
        return hotels

    def _make_fit(self, h: Hotel) -> Hotel:
        fields = h.__dict__.copy()
        for key, want in self.prefs.items():
            if key == "budget":
                fields["price"] = min(fields["price"], int(want) - 10)
            elif key == "stars":
                fields["stars"] = max(fields["stars"], int(want))
            elif key == "area":
                fields["area"] = want
            else:
                fields[key] = True
        return Hotel(**fields)

    def _query_prefs(self, query: str) -> dict[str, Any]:
        text = normalise(query)
        toks = set(tokens(query))
        found: dict[str, Any] = {}
        for area in AREAS:
            if area in text:
                found["area"] = area
        m = re.search(r"(\d+)\s*(?:-\s*)?stars?", query.lower())
        if m:
            found["stars"] = int(m.group(1))
        for n in numbers(query):
            if n >= 20 and (not m or n != float(m.group(1))):
                found["budget"] = n
        for attr in BOOL_ATTRS:
            if toks.intersection(TOPICS[attr][0][:2]):
                found[attr] = True
        return found

    def search(self, query: str) -> ToolResult:
        want = self._query_prefs(query)
        ranked = sorted(
            self.hotels,
            key=lambda h: (-sum(_satisfies(h, want).values()), int(h.id[1:])),
        )[:5]
        scores: dict[str, float] = {}
        if any(h.id == self.best for h in ranked) and not self.searched_best and want:
            self.searched_best = True
            scores["search"] = 1.0
        head = "Top matches" + (f" for {sorted(want)}" if want else " (no constraints understood)")
        return ToolResult(head + ":\n" + "\n".join(h.line() for h in ranked), scores=scores)

    def answer(self, answer: str) -> ToolResult:
        ids = {f"H{n}" for n in re.findall(r"\bH(\d{1,2})\b", answer.upper())}
        named = set(mentioned(answer, [h.name for h in self.hotels]))
        picks = [h for h in self.hotels if h.id in ids or h.name in named]
        if len(picks) != 1:
            # Unclear: the traveller asks again and the episode goes on (the turn is spent).
            what = "several hotels" if picks else "no hotel I can find"
            return ToolResult(
                f"User: That names {what}. Which one hotel should I book? Give me its id.",
                flags=("unclear_answer",),
            )
        hotel = picks[0]
        self.done = True
        self.user.stopped = True
        self.chosen = hotel.id
        fit = _satisfies(hotel, self.prefs)
        weights = {f.id: f.importance for f in self.user.facts.values()}  # type: ignore[attr-defined]
        partial = sum(weights[k] for k, ok in fit.items() if ok) / sum(weights.values())
        self.success = hotel.id == self.best
        if self.success:
            text = f"User: {hotel.name} is perfect, please book it. Thank you!"
        else:
            missed = [TOPICS[k][1] for k, ok in fit.items() if not ok]
            text = f"User: Hmm, {hotel.name} doesn't work for me ({', '.join(missed)}). Bye."
        return ToolResult(
            text,
            scores={"outcome": 1.0 if self.success else 0.0, "choice": partial},
            stop=True,
            success=self.success,
        )

    def oracle(self) -> tuple[str, dict[str, Any]]:
        user = self.user
        assert isinstance(user, FactUser)
        for fact in user.facts.values():
            if fact.id not in user.revealed:
                return "talk", {"message": fact.question}
        if not self.searched_best:
            parts = []
            for key, want in self.prefs.items():
                parts.append(
                    {"budget": f"under ${want}", "stars": f"{want} stars"}.get(
                        key, str(want) if key == "area" else key
                    )
                )
            return "search", {"query": " ".join(parts)}
        return "answer", {"answer": self.best}

    def state(self) -> Any:
        return {**self.user.state(), "searched": self.searched_best, "chosen": self.chosen}

"""A generated world of fictional entities with typed relations and dates.

Nine kinds of entity: countries, cities, people, companies, universities, bands, films,
novels and albums. Every relation is functional (one value per subject), so a chain of
relations from an entity has exactly one answer:

=================  ===============  ==================================================
relation           subject          object
=================  ===============  ==================================================
``located_in``     city             country
``capital``        country          city
``born_in``        person           city
``educated_at``    person           university (some people have none)
``spouse``         person           person (symmetric; some people have none)
``founded_by``     company, university, band   person
``based_in``       company, university, band   city
``directed_by``    film             person
``written_by``     novel            person
``performed_by``   album            band
=================  ===============  ==================================================

Each entity also has a year (birth, founding or release) and distractor links the articles
mention but no question asks about (where a person lives now, a film's cast and shooting
city, a novel's setting, a company's other offices, a city's neighbouring country).

Everything is drawn from one ``numpy`` generator seeded by the world seed, so a seed always
gives the same world. ``alphabet`` picks the disjoint name alphabet (see
:mod:`~agentgym.simulators.search.names`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from agentgym.simulators.search.names import NameMaker

#: How many entities of each kind a world holds (3,395 in all).
WORLD_SIZES: dict[str, int] = {
    "country": 14,
    "city": 160,
    "person": 1500,
    "company": 220,
    "university": 60,
    "band": 180,
    "film": 450,
    "novel": 480,
    "album": 331,
}

#: Occupations and how many people hold each (they sum to ``WORLD_SIZES["person"]``).
OCCUPATIONS: dict[str, int] = {
    "film director": 230,
    "novelist": 260,
    "musician": 200,
    "entrepreneur": 230,
    "scholar": 120,
    "actor": 260,
    "politician": 200,
}

ORG_KINDS = ("company", "university", "band")
WORK_KINDS = ("film", "novel", "album")
#: Who founds what.
FOUNDER_OCCUPATION = {"company": "entrepreneur", "university": "scholar", "band": "musician"}
#: Share of films that adapt a novel and carry its name (disambiguated titles).
ADAPTATION_SHARE = 0.15
#: Share of people who are married (to another person of the world).
MARRIED_SHARE = 0.4


#: Name patterns of organisations and works; ``{w}`` is a fresh invented word, so every name
#: holds a word of its world's alphabet. The other words are shared English fillers.
NAME_PATTERNS: dict[str, tuple[str, ...]] = {
    "company": (
        "{w} Industries",
        "{w} Systems",
        "{w} Holdings",
        "{w} Motors",
        "{w} Labs",
        "{w} Foods",
        "{w} Airways",
        "{w} Media",
    ),
    "university": (
        "University of {w}",
        "{w} University",
        "{w} Institute of Technology",
        "{w} College",
    ),
    "band": ("The {w}s", "{w}", "{w} Collective", "The {w} Trio", "{w} Choir"),
    "novel": (
        "{w}",
        "The {w} Affair",
        "Return to {w}",
        "{w} Nights",
        "The Last {w}",
        "{w} Rising",
        "A Winter in {w}",
        "The House of {w}",
        "Letters from {w}",
    ),
    "album": (
        "{w}",
        "Songs of {w}",
        "{w} Blue",
        "Live in {w}",
        "The {w} Sessions",
        "Echoes of {w}",
        "{w} Road",
    ),
}
NAME_PATTERNS["film"] = NAME_PATTERNS["novel"]
#: The fixed English words of :data:`NAME_PATTERNS` (the only words train and test names share).
FILLER_WORDS = frozenset(
    word for ps in NAME_PATTERNS.values() for p in ps for word in p.split() if "{w}" not in word
)


@dataclass
class Entity:
    """One entity: its kind, names, year, relations (kind -> entity id) and distractors."""

    id: int
    kind: str
    name: str
    year: int
    title: str = ""
    rel: dict[str, int] = field(default_factory=dict)
    #: Entities an article mentions without a relation any question uses.
    extra: dict[str, tuple[int, ...]] = field(default_factory=dict)
    occupation: str = ""
    pronoun: str = "it"

    def label(self) -> str:
        """How the entity is named inside a question (``the film X``, a person by name)."""
        return {
            "film": f"the film {self.name}",
            "novel": f"the novel {self.name}",
            "album": f"the album {self.name}",
            "band": f"the band {self.name}",
            "city": f"the city of {self.name}",
        }.get(self.kind, self.name)


@dataclass
class World:
    """The entities of one generated world, by id, with lookups by title and kind."""

    seed: int
    alphabet: int
    entities: list[Entity]
    by_kind: dict[str, list[int]]

    def __post_init__(self) -> None:
        self.by_title = {e.title: e.id for e in self.entities}

    def __getitem__(self, entity_id: int) -> Entity:
        return self.entities[entity_id]

    def related(self, entity_id: int, relation: str) -> Entity | None:
        """The object of ``relation`` for an entity, or None where it has none."""
        target = self.entities[entity_id].rel.get(relation)
        return None if target is None else self.entities[target]


class _Builder:
    """Draws a world in a fixed order (names, places, people, organisations, works)."""

    def __init__(self, seed: int, alphabet: int):
        self.rng = np.random.default_rng([seed, alphabet, 0x5EA7C4])
        self.names = NameMaker(self.rng, alphabet)
        self.taken: set[str] = set()
        self.entities: list[Entity] = []
        self.by_kind: dict[str, list[int]] = {k: [] for k in WORLD_SIZES}

    def pick(self, ids: list[int] | tuple[int, ...]) -> int:
        return int(ids[int(self.rng.integers(len(ids)))])

    def year(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, max(lo, hi) + 1))

    def add(self, kind: str, name: str, year: int, **kw: object) -> Entity:
        e = Entity(id=len(self.entities), kind=kind, name=name, year=year, **kw)  # type: ignore[arg-type]
        self.entities.append(e)
        self.by_kind[kind].append(e.id)
        return e

    def unique_name(self, make: object) -> str:
        while True:
            name = make()  # type: ignore[operator]
            if name not in self.taken:
                self.taken.add(name)
                return name

    def patterned(self, patterns: tuple[str, ...]) -> str:
        """A name from ``patterns`` with ``{w}`` filled by a fresh invented word."""
        pattern = patterns[int(self.rng.integers(len(patterns)))]
        return self.unique_name(lambda: pattern.format(w=self.names.word()))

    # ---- places ---------------------------------------------------------------------------

    def places(self) -> None:
        for _ in range(WORLD_SIZES["country"]):
            self.add("country", self.unique_name(lambda: self.names.word(2)), self.year(1200, 1960))
        countries = self.by_kind["country"]
        for i in range(WORLD_SIZES["city"]):
            country = (
                countries[i % len(countries)] if i < 2 * len(countries) else self.pick(countries)
            )
            neighbour = self.pick([c for c in countries if c != country])
            city = self.add("city", self.unique_name(self.names.word), self.year(800, 1900))
            city.rel["located_in"] = country
            city.extra["border"] = (neighbour,)
        for country in countries:  # the first city drawn in each country is its capital
            capital = next(
                c for c in self.by_kind["city"] if self.entities[c].rel["located_in"] == country
            )
            self.entities[country].rel["capital"] = capital

    # ---- people ---------------------------------------------------------------------------

    def people(self) -> None:
        firsts = [self.names.unique_word(self.taken, 2) for _ in range(220)]
        surnames = [self.names.unique_word(self.taken) for _ in range(650)]
        cities = self.by_kind["city"]
        occupations = [o for o, n in OCCUPATIONS.items() for _ in range(n)]
        order = self.rng.permutation(len(occupations))
        for slot in order:
            name = self.unique_name(
                lambda: (
                    f"{firsts[int(self.rng.integers(len(firsts)))]} "
                    f"{surnames[int(self.rng.integers(len(surnames)))]}"
                )
            )
            born = self.pick(cities)
            lives = self.pick([c for c in cities if c != born])
            person = self.add(
                "person",
                name,
                self.year(1890, 1995),
                occupation=occupations[int(slot)],
                pronoun="she" if self.rng.random() < 0.5 else "he",
            )
            person.rel["born_in"] = born
            person.extra["lives_in"] = (lives,)
        self._namesakes()
        self._marriages()

    def _namesakes(self) -> None:
        """Each person sharing a surname with others gets one of them as a namesake."""
        by_surname: dict[str, list[int]] = {}
        for pid in self.by_kind["person"]:
            by_surname.setdefault(self.entities[pid].name.split()[-1], []).append(pid)
        for group in by_surname.values():
            for pid in group:
                others = [q for q in group if q != pid]
                if others:
                    self.entities[pid].extra["namesake"] = (self.pick(others),)

    def _marriages(self) -> None:
        people = sorted(self.by_kind["person"], key=lambda p: self.entities[p].year)
        pairs = int(len(people) * MARRIED_SHARE / 2)
        free = list(people)
        for _ in range(pairs):
            a_i = int(self.rng.integers(len(free) - 1))
            a, b = free[a_i], free[a_i + 1]  # neighbours by birth year: similar ages
            del free[a_i : a_i + 2]
            self.entities[a].rel["spouse"] = b
            self.entities[b].rel["spouse"] = a
            if len(free) < 2:
                break

    def by_occupation(self, occupation: str) -> list[int]:
        return [p for p in self.by_kind["person"] if self.entities[p].occupation == occupation]

    # ---- organisations --------------------------------------------------------------------

    def organisations(self) -> None:
        cities = self.by_kind["city"]
        for kind in ORG_KINDS:
            founders = self.by_occupation(FOUNDER_OCCUPATION[kind])
            for i in range(WORLD_SIZES[kind]):
                founder = founders[i] if i < len(founders) else self.pick(founders)
                born = self.entities[founder].year
                lag = (18, 30) if kind == "band" else (25, 50)
                org = self.add(
                    kind,
                    self.patterned(NAME_PATTERNS[kind]),
                    min(2020, self.year(born + lag[0], born + lag[1])),
                )
                org.rel["founded_by"] = founder
                org.rel["based_in"] = self.pick(cities)
                other = self.pick([c for c in cities if c != org.rel["based_in"]])
                org.extra["offices" if kind != "band" else "toured"] = (other,)
                if kind == "company":
                    org.extra["chief"] = (self.pick(self.by_occupation("entrepreneur")),)
        universities = sorted(self.by_kind["university"], key=lambda u: self.entities[u].year)
        for pid in self.by_kind["person"]:
            person = self.entities[pid]
            if self.rng.random() < 0.25:
                continue
            open_then = [
                u
                for u in universities
                if self.entities[u].year <= person.year + 18
                and self.entities[u].rel["founded_by"] != pid
            ]
            if open_then:
                person.rel["educated_at"] = self.pick(open_then)

    # ---- works ----------------------------------------------------------------------------

    def works(self) -> None:
        cities = self.by_kind["city"]
        actors = self.by_occupation("actor")
        entrepreneurs = self.by_occupation("entrepreneur")
        novelists = self.by_occupation("novelist")
        for i in range(WORLD_SIZES["novel"]):
            author = novelists[i] if i < len(novelists) else self.pick(novelists)
            born = self.entities[author].year
            novel = self.add(
                "novel",
                self.patterned(NAME_PATTERNS["novel"]),
                min(2024, self.year(born + 22, born + 70)),
            )
            novel.rel["written_by"] = author
            novel.extra["set_in"] = (self.pick(cities),)
        directors = self.by_occupation("film director")
        novels = list(self.by_kind["novel"])
        for i in range(WORLD_SIZES["film"]):
            director = directors[i] if i < len(directors) else self.pick(directors)
            born = self.entities[director].year
            year = min(2024, self.year(born + 24, born + 65))
            source = None
            if self.rng.random() < ADAPTATION_SHARE:
                earlier = [n for n in novels if self.entities[n].year < year]
                if earlier:
                    source = self.pick(earlier)
                    novels.remove(source)
            name = (
                self.entities[source].name
                if source is not None
                else self.patterned(NAME_PATTERNS["novel"])
            )
            film = self.add("film", name, year)
            film.rel["directed_by"] = director
            cast = self.rng.choice(len(actors), size=2, replace=False)
            film.extra["cast"] = tuple(actors[int(c)] for c in cast)
            film.extra["shot_in"] = (self.pick(cities),)
            if source is not None:
                film.extra["adapts"] = (source,)
                self.entities[source].extra["adapted_as"] = (film.id,)
        bands = self.by_kind["band"]
        for i in range(WORLD_SIZES["album"]):
            band = bands[i] if i < len(bands) else self.pick(bands)
            formed = self.entities[band].year
            album = self.add(
                "album",
                self.patterned(NAME_PATTERNS["album"]),
                min(2024, self.year(formed + 1, formed + 30)),
            )
            album.rel["performed_by"] = band
            album.extra["recorded_in"] = (self.pick(cities),)
            album.extra["producer"] = (self.pick(entrepreneurs + actors),)

    def titles(self) -> None:
        """Article titles: the name, or ``Name (kind)`` where names collide (adaptations)."""
        count: dict[str, int] = {}
        for e in self.entities:
            count[e.name] = count.get(e.name, 0) + 1
        for e in self.entities:
            e.title = e.name if count[e.name] == 1 else f"{e.name} ({e.kind})"


def build_world(seed: int, alphabet: int = 0) -> World:
    """Generate the world of ``seed`` with names from ``alphabet`` (0: train, 1: test)."""
    b = _Builder(seed, alphabet)
    b.places()
    b.people()
    b.organisations()
    b.works()
    b.titles()
    return World(seed=seed, alphabet=alphabet, entities=b.entities, by_kind=b.by_kind)

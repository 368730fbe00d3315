"""Encyclopedia articles written from a world: varied templates, paraphrases, distractors.

Each fact is worded by one of several templates chosen by the world's generator, so the
same relation reads differently from article to article ("was born in X", "a native of
X", "X-born"...). Articles also state facts no question asks about and that read like the
ones asked (where a person lives now beside where they were born, a film's cast beside its
director, a novel's setting, a company's chief executive and other offices), and a
person's article names a namesake, so a reader has to read, not match words.

Articles are split into passages of up to three sentences; the search index holds passages,
``open`` shows the whole article. Every sentence records the entities and years it names,
so an env knows what a reader has seen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from agentgym.simulators.search.world import Entity, World

#: Sentences per passage.
PASSAGE_SENTENCES = 3


@dataclass(frozen=True)
class Passage:
    """A few sentences of one article, with the entities and years they name."""

    title: str
    text: str
    mentions: tuple[int, ...]
    years: tuple[int, ...]


@dataclass(frozen=True)
class Article:
    """One entity's article: its title and its passages in order."""

    entity_id: int
    title: str
    passages: tuple[Passage, ...]

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.passages)

    @property
    def mentions(self) -> tuple[int, ...]:
        """Every entity the article names (other than itself), first mention first."""
        seen: dict[int, None] = {}
        for p in self.passages:
            for m in p.mentions:
                if m != self.entity_id:
                    seen.setdefault(m, None)
        return tuple(seen)


class _Writer:
    """Fills templates for one article, recording mentions and years per sentence."""

    def __init__(self, world: World, rng: np.random.Generator, subject: Entity):
        self.world, self.rng, self.subject = world, rng, subject
        self.sentences: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []

    def say(self, templates: tuple[str, ...], **slots: Entity | int | str) -> None:
        template = templates[int(self.rng.integers(len(templates)))]
        values: dict[str, str] = {}
        mentions: list[int] = []
        years: list[int] = []
        for key, value in slots.items():
            if isinstance(value, Entity):
                values[key] = value.name
                mentions.append(value.id)
            elif isinstance(value, int):
                values[key] = str(value)
                years.append(value)
            else:
                values[key] = value
        s = self.subject
        pronoun = {"he": ("He", "his"), "she": ("She", "her")}.get(s.pronoun, ("It", "its"))
        values.setdefault("Pr", pronoun[0])
        values.setdefault("poss", pronoun[1])
        values.setdefault("X", s.name)
        text = template.format(**values)
        self.sentences.append((text[0].upper() + text[1:], tuple(mentions), tuple(years)))

    def e(self, entity_id: int) -> Entity:
        return self.world[entity_id]

    def article(self) -> Article:
        passages = []
        for i in range(0, len(self.sentences), PASSAGE_SENTENCES):
            chunk = self.sentences[i : i + PASSAGE_SENTENCES]
            passages.append(
                Passage(
                    title=self.subject.title,
                    text=" ".join(t for t, _, _ in chunk),
                    mentions=tuple(m for _, ms, _ in chunk for m in ms),
                    years=tuple(y for _, _, ys in chunk for y in ys),
                )
            )
        return Article(self.subject.id, self.subject.title, tuple(passages))


def _person(w: _Writer, works: dict[int, list[int]]) -> None:
    s = w.subject
    born, lives = w.e(s.rel["born_in"]), w.e(s.extra["lives_in"][0])
    w.say(
        (
            "{X} (born {Y}) is a {occ} based in {L}.",
            "{X}, born in {Y}, is a {occ} who lives in {L}.",
            "{X} is a {occ} (born {Y}) now living in {L}.",
        ),
        Y=s.year,
        occ=s.occupation,
        L=lives,
    )
    w.say(
        (
            "{Pr} was born in {B}.",
            "{Pr} is a native of {B}, where {Pr2} grew up.",
            "{X}'s birthplace is {B}.",
            "Born in {B}, {X} later settled in {L}.",
        ),
        B=born,
        L=lives,
        Pr2=s.pronoun,
    )
    if "educated_at" in s.rel:
        w.say(
            ("{Pr} studied at {U}.", "{Pr} is a graduate of {U}.", "{X} attended {U}."),
            U=w.e(s.rel["educated_at"]),
        )
    if "spouse" in s.rel:
        w.say(
            ("{Pr} is married to {S}.", "{X} married {S}.", "{Poss} spouse is {S}."),
            S=w.e(s.rel["spouse"]),
            Poss="His" if s.pronoun == "he" else "Her",
        )
    made = works.get(s.id, [])
    for wid in made[:3]:
        work = w.e(wid)
        if work.kind == "film" and work.rel["directed_by"] == s.id:
            w.say(
                ("{Pr} directed the film {W} ({Y}).", "In {Y} {Pr2} directed {W}."),
                W=work,
                Y=work.year,
                Pr2=s.pronoun,
            )
        elif work.kind == "novel":
            w.say(
                ("{Pr} wrote the novel {W} ({Y}).", "{Poss} novel {W} appeared in {Y}."),
                W=work,
                Y=work.year,
                Poss="His" if s.pronoun == "he" else "Her",
            )
        elif work.kind in ("company", "university", "band"):
            w.say(
                ("{Pr} founded {W} in {Y}.", "In {Y} {Pr2} founded {W}."),
                W=work,
                Y=work.year,
                Pr2=s.pronoun,
            )
        else:  # films acted in
            w.say(("{Pr} appeared in the film {W}.", "{Pr} had a role in {W}."), W=work)
    if "namesake" in s.extra:
        other = w.e(s.extra["namesake"][0])
        w.say(
            (
                "Not to be confused with {N}, a {occ} born in {B}.",
                "{Poss} relative {N} was born in {B}.",
            ),
            N=other,
            occ=other.occupation,
            B=w.e(other.rel["born_in"]),
            Poss="His" if s.pronoun == "he" else "Her",
        )


def _city(w: _Writer, natives: dict[int, list[int]]) -> None:
    s = w.subject
    country, border = w.e(s.rel["located_in"]), w.e(s.extra["border"][0])
    w.say(
        (
            "{X} is a city in {K}, near the border with {K2}.",
            "{X} is a city of {K}; the border with {K2} lies nearby.",
            "Close to the frontier with {K2}, {X} is a city in {K}.",
        ),
        K=country,
        K2=border,
    )
    w.say(
        ("It was founded in {Y}.", "The city dates from {Y}.", "{X} was founded in {Y}."), Y=s.year
    )
    if w.world[country.id].rel.get("capital") == s.id:
        w.say(("It is the capital of {K}.", "{X} serves as the capital of {K}."), K=country)
    people = natives.get(s.id, [])[:2]
    if len(people) == 2:
        w.say(
            ("People born in {X} include {A} and {B}.", "Natives of the city include {A} and {B}."),
            A=w.e(people[0]),
            B=w.e(people[1]),
        )


def _country(w: _Writer, cities: dict[int, list[int]]) -> None:
    s = w.subject
    capital = w.e(s.rel["capital"])
    w.say(
        (
            "{X} is a country whose capital is {C}.",
            "The capital of {X} is {C}.",
            "{X} is a country; its capital city is {C}.",
        ),
        C=capital,
    )
    w.say(("It became independent in {Y}.", "{X} has been independent since {Y}."), Y=s.year)
    others = [c for c in cities.get(s.id, []) if c != capital.id][:2]
    if len(others) == 2:
        w.say(
            ("Other cities of {X} include {A} and {B}.", "{A} and {B} are also in {X}."),
            A=w.e(others[0]),
            B=w.e(others[1]),
        )


def _organisation(w: _Writer, albums: dict[int, list[int]]) -> None:
    s = w.subject
    founder, base = w.e(s.rel["founded_by"]), w.e(s.rel["based_in"])
    what = s.kind
    w.say(
        (
            "{X} is a {what} founded in {Y} by {F}.",
            "{F} founded the {what} {X} in {Y}.",
            "Founded by {F} in {Y}, {X} is a {what}.",
        ),
        what=what,
        Y=s.year,
        F=founder,
    )
    if s.kind == "band":
        toured = w.e(s.extra["toured"][0])
        w.say(("The band is based in {C}.", "{X} comes from {C}."), C=base)
        w.say(("It has toured widely in {T}.", "The band often plays in {T}."), T=toured)
        made = albums.get(s.id, [])[:2]
        if made:
            w.say(("Its albums include {A}.",), A=w.e(made[0]))
    else:
        office = w.e(s.extra["offices"][0])
        w.say(
            ("It is based in {C}.", "Its headquarters are in {C}.", "{X} is headquartered in {C}."),
            C=base,
        )
        w.say(
            ("It also has offices in {O}.",)
            if s.kind == "company"
            else ("It also has offices in {O}.", "A second campus stands in {O}."),
            O=office,
        )
        if "chief" in s.extra:
            w.say(
                ("Its chief executive is {P}.", "{P} runs the company today."),
                P=w.e(s.extra["chief"][0]),
            )


def _work(w: _Writer) -> None:
    s = w.subject
    if s.kind == "film":
        director = w.e(s.rel["directed_by"])
        w.say(
            (
                "{X} is a {Y} film directed by {D}.",
                "Directed by {D}, {X} was released in {Y}.",
                "{X} ({Y}) is a film by director {D}.",
            ),
            Y=s.year,
            D=director,
        )
        a, b = (w.e(i) for i in s.extra["cast"])
        w.say(("It stars {A} and {B}.", "{A} and {B} play the leads."), A=a, B=b)
        w.say(("It was shot in {C}.", "Filming took place in {C}."), C=w.e(s.extra["shot_in"][0]))
        if "adapts" in s.extra:
            novel = w.e(s.extra["adapts"][0])
            w.say(
                ("It is based on the novel of the same name by {N}.",),
                N=w.e(novel.rel["written_by"]),
            )
    elif s.kind == "novel":
        author = w.e(s.rel["written_by"])
        w.say(
            (
                "{X} is a {Y} novel by {A}.",
                "{A} wrote {X}, published in {Y}.",
                "Published in {Y}, {X} is a novel written by {A}.",
            ),
            Y=s.year,
            A=author,
        )
        w.say(("The story is set in {C}.", "It takes place in {C}."), C=w.e(s.extra["set_in"][0]))
        if "adapted_as" in s.extra:
            film = w.e(s.extra["adapted_as"][0])
            w.say(
                ("It was adapted into a film in {Y}, directed by {D}.",),
                Y=film.year,
                D=w.e(film.rel["directed_by"]),
            )
    else:
        band = w.e(s.rel["performed_by"])
        w.say(
            (
                "{X} is a {Y} album by {B}.",
                "{B} released the album {X} in {Y}.",
                "{X} is an album recorded by {B} and released in {Y}.",
            ),
            Y=s.year,
            B=band,
        )
        w.say(
            ("It was recorded in {C}.", "The band recorded it in {C}."),
            C=w.e(s.extra["recorded_in"][0]),
        )
        w.say(("{P} produced it.", "The album was produced by {P}."), P=w.e(s.extra["producer"][0]))


def write_articles(world: World) -> list[Article]:
    """One article per entity, in entity order, worded by a generator seeded from the world."""
    rng = np.random.default_rng([world.seed, world.alphabet, 0xA271C1E])
    works: dict[int, list[int]] = {}  # person -> films, novels, organisations, roles
    natives: dict[int, list[int]] = {}
    cities: dict[int, list[int]] = {}
    albums: dict[int, list[int]] = {}
    for e in world.entities:
        for relation in ("directed_by", "written_by", "founded_by"):
            if relation in e.rel:
                works.setdefault(e.rel[relation], []).append(e.id)
        for actor in e.extra.get("cast", ()):
            works.setdefault(actor, []).append(e.id)
        if "born_in" in e.rel:
            natives.setdefault(e.rel["born_in"], []).append(e.id)
        if e.kind == "city":
            cities.setdefault(e.rel["located_in"], []).append(e.id)
        if "performed_by" in e.rel:
            albums.setdefault(e.rel["performed_by"], []).append(e.id)
    out = []
    for e in world.entities:
        w = _Writer(world, rng, e)
        if e.kind == "person":
            _person(w, works)
        elif e.kind == "city":
            _city(w, natives)
        elif e.kind == "country":
            _country(w, cities)
        elif e.kind in ("company", "university", "band"):
            _organisation(w, albums)
        else:
            _work(w)
        out.append(w.article())
    return out

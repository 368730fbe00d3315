"""Multi-hop questions with exact answers, drawn from a world by a seed.

Three types, in proportions set by :data:`QUESTION_MIX`:

* **bridge** (2 hops, HotpotQA's main type): a chain of two relations from a named entity,
  "Where was the director of the film X born?";
* **comparison** (HotpotQA's and 2Wiki's): two named entities compared on a year ("Who was
  born first, A or B?") or on a shared fact ("Were A and B born in the same country?");
* **compositional** (3 or 4 hops, MuSiQue's longer chains): "In which country was the author
  of the novel X born?", "What is the capital of the country where the founder of Y was
  born?".

Every relation is functional, so a chain has exactly one answer; comparisons never compare
equal years. Each question records the articles that hold its facts (``needed``), in the
order a reader would open them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from agentgym.simulators.search.world import Entity, World

#: Question type -> share of questions. Bridge 45% (HotpotQA is ~80% bridge, ~20%
#: comparison), comparison 25% (2Wiki has more), compositional 30% (MuSiQue's 3- and
#: 4-hop questions: 20% 3-hop, 10% 4-hop).
QUESTION_MIX: dict[str, float] = {
    "bridge": 0.45,
    "comparison": 0.25,
    "compositional-3": 0.20,
    "compositional-4": 0.10,
}


@dataclass(frozen=True)
class Relation:
    """How one relation reads inside a question: as a noun phrase or as the question."""

    name: str
    phrase: str  # noun phrase of the object, "{x}" the subject's phrase
    questions: tuple[str, ...]  # the question asking for the object


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation(
            "directed_by",
            "the director of {x}",
            ("Who directed {x}?", "Who was the director of {x}?"),
        ),
        Relation(
            "written_by", "the author of {x}", ("Who wrote {x}?", "Who is the author of {x}?")
        ),
        Relation("performed_by", "the band that recorded {x}", ("Which band recorded {x}?",)),
        Relation(
            "founded_by", "the founder of {x}", ("Who founded {x}?", "Who is the founder of {x}?")
        ),
        Relation(
            "spouse", "the spouse of {x}", ("Who is {x} married to?", "Who is the spouse of {x}?")
        ),
        Relation(
            "born_in",
            "the city where {x} was born",
            ("Where was {x} born?", "In which city was {x} born?"),
        ),
        Relation(
            "educated_at", "the university attended by {x}", ("Which university did {x} attend?",)
        ),
        Relation(
            "based_in",
            "the city where {x} is based",
            ("In which city is {x} based?", "Where is {x} based?"),
        ),
        Relation(
            "located_in",
            "the country containing {x}",
            ("In which country is {x}?", "In which country is {x} located?"),
        ),
        Relation("capital", "the capital of {x}", ("What is the capital of {x}?",)),
    )
}

_YEAR_QUESTIONS = {
    "person": ("In what year was {x} born?", "When was {x} born?"),
    "city": ("In what year was {x} founded?",),
    "country": ("In what year did {x} become independent?",),
    "company": ("In what year was {x} founded?",),
    "university": ("In what year was {x} founded?",),
    "band": ("In what year was {x} formed?",),
    "film": ("In what year was {x} released?",),
    "novel": ("In what year was {x} published?",),
    "album": ("In what year was {x} released?",),
}

#: A born_in hop followed by located_in reads "the country where {x} was born".
_BORN_COUNTRY = ("the country where {x} was born", ("In which country was {x} born?",))


@dataclass(frozen=True)
class Question:
    """One question: its text, gold answers and the facts behind them."""

    kind: str  # bridge | comparison | compositional
    hops: int
    text: str
    answers: tuple[str, ...]  # the gold answer first, then accepted aliases
    subjects: tuple[int, ...]  # the entities the question names
    needed: tuple[int, ...]  # articles holding the facts, in reading order
    chain: tuple[str, ...] = ()  # relations of a chain question ("year" may end it)

    @property
    def answer(self) -> str:
        return self.answers[0]


def _compose(world: World, start: Entity, chain: list[str], rng: np.random.Generator) -> str:
    """The question text of a chain: nested noun phrases, then the last relation's question."""
    phrase, before = start.label(), ""
    current = start
    for i, relation in enumerate(chain):
        last = i == len(chain) - 1
        born_country = relation == "located_in" and i > 0 and chain[i - 1] == "born_in"
        if last:
            if relation == "year":
                options = _YEAR_QUESTIONS[current.kind]
            elif born_country:
                phrase, options = before, _BORN_COUNTRY[1]
            else:
                options = RELATIONS[relation].questions
            text = options[int(rng.integers(len(options)))].replace("{x}", phrase)
            return text[0].upper() + text[1:]
        template = _BORN_COUNTRY[0] if born_country else RELATIONS[relation].phrase
        inner = before if born_country else phrase
        before, phrase = phrase, template.replace("{x}", inner)
        current = world[current.rel[relation]]
    raise ValueError("an empty chain")


def _walk(
    world: World, rng: np.random.Generator, hops: int
) -> tuple[Entity, list[str], list[int]] | None:
    """A random chain of ``hops`` relations from a random entity, visiting no entity twice."""
    kinds = [k for k in world.by_kind if k != "country"]
    start = world[int(rng.choice(world.by_kind[kinds[int(rng.integers(len(kinds)))]]))]
    path = [start.id]
    chain: list[str] = []
    current = start
    for hop in range(hops):
        options = [r for r, t in sorted(current.rel.items()) if t not in path]
        if hop == hops - 1 and hops > 1:
            options.append("year")
        if not options:
            return None
        relation = options[int(rng.integers(len(options)))]
        chain.append(relation)
        if relation == "year":
            break
        current = world[current.rel[relation]]
        path.append(current.id)
    return start, chain, path


def chain_question(world: World, rng: np.random.Generator, hops: int) -> Question:
    """A ``hops``-relation chain question (bridge for 2, compositional for 3-4)."""
    while True:
        walked = _walk(world, rng, hops)
        if walked is None:
            continue
        start, chain, path = walked
        if chain[-1] == "year":
            answer = str(world[path[-1]].year)
            answers: tuple[str, ...] = (answer,)
            needed = tuple(path)
        else:
            target = world[path[-1]]
            answers = tuple(dict.fromkeys((target.name, target.title)))
            needed = tuple(path[:-1])
        return Question(
            kind="bridge" if hops == 2 else "compositional",
            hops=hops,
            text=_compose(world, start, chain, rng),
            answers=answers,
            subjects=(start.id,),
            needed=needed,
            chain=tuple(chain),
        )


_FIRST = {
    "person": ("Who was born first, {a} or {b}?", "Who is older, {a} or {b}?"),
    "company": ("Which company was founded first, {a} or {b}?",),
    "university": ("Which university is older, {a} or {b}?",),
    "band": ("Which band was formed first, {a} or {b}?",),
    "film": ("Which film came out first, {a} or {b}?",),
    "novel": ("Which novel was published first, {a} or {b}?",),
}


def comparison_question(world: World, rng: np.random.Generator) -> Question:
    """Two entities compared on a year, or on whether they share a fact (yes/no)."""
    style = int(rng.integers(4))
    if style <= 1:  # which came first: the earlier year wins (never a tie)
        kind = list(_FIRST)[int(rng.integers(len(_FIRST)))]
        ids = world.by_kind[kind]
        while True:
            a, b = (world[int(i)] for i in rng.choice(ids, size=2, replace=False))
            if a.year != b.year:
                break
        first = a if a.year < b.year else b
        options = _FIRST[kind]
        text = options[int(rng.integers(len(options)))].format(a=a.name, b=b.name)
        answers = tuple(dict.fromkeys((first.name, first.title)))
        return Question("comparison", 2, text, answers, (a.id, b.id), (a.id, b.id))
    same = bool(rng.random() < 0.5)
    if style == 2:  # born in the same country (2 hops on each side)
        people = world.by_kind["person"]
        a = world[int(rng.choice(people))]
        country = world[a.rel["born_in"]].rel["located_in"]
        pool = [
            p
            for p in people
            if p != a.id and (world[world[p].rel["born_in"]].rel["located_in"] == country) == same
        ]
        b = world[int(rng.choice(pool))]
        text = f"Were {a.name} and {b.name} born in the same country?"
        needed: tuple[int, ...] = (a.id, a.rel["born_in"], b.id, b.rel["born_in"])
    else:  # films by the same director
        films = world.by_kind["film"]
        while True:
            a = world[int(rng.choice(films))]
            pool = [
                f
                for f in films
                if f != a.id
                and (world[f].rel["directed_by"] == a.rel["directed_by"]) == same
                and world[f].name != a.name
            ]
            if pool:
                break
        b = world[int(rng.choice(pool))]
        text = f"Were the films {a.name} and {b.name} directed by the same person?"
        needed = (a.id, b.id)
    return Question("comparison", 2, text, ("yes" if same else "no",), (a.id, b.id), needed)


def make_question(world: World, seed: int, mix: Mapping[str, float] | None = None) -> Question:
    """The question of ``seed`` in ``world``, its type drawn by ``mix`` (default
    :data:`QUESTION_MIX`; any subset of its keys, weights renormalised)."""
    mix = QUESTION_MIX if mix is None else mix
    unknown = sorted(set(mix) - set(QUESTION_MIX))
    if unknown or not mix or sum(mix.values()) <= 0:
        raise ValueError(f"mix needs positive weights over {list(QUESTION_MIX)}, got {dict(mix)!r}")
    rng = np.random.default_rng([seed, 0x9E57])
    kinds = list(mix)
    weights = np.asarray([float(mix[k]) for k in kinds])
    kind = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
    if kind == "comparison":
        return comparison_question(world, rng)
    return chain_question(world, rng, 2 if kind == "bridge" else int(kind[-1]))

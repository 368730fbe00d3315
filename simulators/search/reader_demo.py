"""A reader that answers from the text it has read: a demonstrator a clone can imitate.

The env's oracle knows the question's gold path (``Question.needed``) and its answer. The
:class:`Reader` knows neither. It parses the question with the question generator's own
phrasings (the language of this world, which any reader of it knows), searches the names the
question gives, opens the articles it has found, reads the fact it needs out of each
article's text (with the article writer's phrasings), follows it to the next article, and
answers with what it read. It sees only the question, the text each of its actions
returned, and the actions the env lists as admissible now, so passages it has not read
cannot change what it does.

    >>> plan = parse_question("Where was the director of the film Gorlen Tide born?")
    >>> plan.kind, plan.starts, plan.chain
    ('chain', (('Gorlen Tide', 'film'),), ('directed_by', 'born_in'))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentgym.simulators.search.questions import _BORN_COUNTRY, _FIRST, _YEAR_QUESTIONS, RELATIONS

__all__ = ["Options", "Plan", "Reader", "parse_question", "read_fact"]

#: The kind of entity a relation leads to (to pick between titles like "X (film)" and
#: "X (novel)").
OBJECT_KIND = {
    "directed_by": "person",
    "written_by": "person",
    "performed_by": "band",
    "founded_by": "person",
    "spouse": "person",
    "born_in": "city",
    "educated_at": "university",
    "based_in": "city",
    "located_in": "country",
    "capital": "city",
}

_LABELS = (
    ("the film ", "film"),
    ("the novel ", "novel"),
    ("the album ", "album"),
    ("the band that recorded ", ""),  # a relation phrase, not a label
    ("the band ", "band"),
    ("the city of ", "city"),
)


@dataclass(frozen=True)
class Plan:
    """What a question asks: ``chain`` (follow ``chain`` from ``starts[0]``), ``first``
    (which of two came first), ``same_country`` or ``same_director`` (yes/no)."""

    kind: str
    starts: tuple[tuple[str, str], ...]
    """(name, kind hint) of each entity the question names; kind "" when unknown."""
    chain: tuple[str, ...] = ()


def _regex(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(template).replace(re.escape("{x}"), "(?P<x>.+)") + "$")


def _forms() -> tuple[
    list[tuple[re.Pattern[str], tuple[str, ...]]], list[tuple[re.Pattern[str], tuple[str, ...]]]
]:
    """(question regexes, noun-phrase regexes), each with the relations it adds (outermost
    last)."""
    questions: list[tuple[re.Pattern[str], tuple[str, ...]]] = []
    for rel in RELATIONS.values():
        questions += [(_regex(q), (rel.name,)) for q in rel.questions]
    for forms in _YEAR_QUESTIONS.values():
        questions += [(_regex(q), ("year",)) for q in forms]
    questions += [(_regex(q), ("born_in", "located_in")) for q in _BORN_COUNTRY[1]]
    phrases = [(_regex(rel.phrase), (rel.name,)) for rel in RELATIONS.values()]
    phrases.append((_regex(_BORN_COUNTRY[0]), ("born_in", "located_in")))
    return questions, phrases


_QUESTIONS, _PHRASES = _forms()
_FIRST_FORMS = [
    re.compile("^" + re.escape(f).replace(re.escape("{a}"), "(?P<a>.+)").replace(
        re.escape("{b}"), "(?P<b>.+)") + "$")
    for forms in _FIRST.values()
    for f in forms
]  # fmt: skip
_SAME_COUNTRY = re.compile(r"^Were (?P<a>.+) and (?P<b>.+) born in the same country\?$")
_SAME_DIRECTOR = re.compile(
    r"^Were the films (?P<a>.+) and (?P<b>.+) directed by the same person\?$"
)


def _phrase(text: str) -> tuple[tuple[str, str], tuple[str, ...]]:
    """A noun phrase as (start entity, relations from it, innermost first)."""
    for regex, rels in _PHRASES:
        m = regex.match(text)
        if m:
            start, inner = _phrase(m.group("x"))
            return start, inner + rels
    for prefix, kind in _LABELS:
        if text.startswith(prefix) and kind:
            return (text[len(prefix) :], kind), ()
    return (text, ""), ()


def parse_question(question: str) -> Plan | None:
    """The plan of a question in one of the generator's phrasings (None otherwise)."""
    text = question.strip()
    m = _SAME_DIRECTOR.match(text)
    if m:
        return Plan("same_director", ((m["a"], "film"), (m["b"], "film")))
    m = _SAME_COUNTRY.match(text)
    if m:
        return Plan("same_country", ((m["a"], "person"), (m["b"], "person")))
    for regex in _FIRST_FORMS:
        m = regex.match(text)
        if m:
            return Plan("first", ((m["a"], ""), (m["b"], "")))
    plans = []
    for candidate in dict.fromkeys((text, text[:1].lower() + text[1:])):
        for regex, rels in _QUESTIONS:
            m = regex.match(candidate)
            if m:
                start, inner = _phrase(m.group("x"))
                plans.append(Plan("chain", (start,), inner + rels))
    # several phrasings can match ("Who is the founder of X married to?" also reads as
    # "Who is the founder of {X married to}?"): the parse that explains most is right
    return max(plans, key=lambda p: len(p.chain), default=None)


# ---- reading articles ----------------------------------------------------------------------

_PATTERNS: dict[str, tuple[str, ...]] = {
    "born_in": (
        r"(?:He|She|It) was born in {N}\.",
        r"is a native of {N},",
        r"'s birthplace is {N}\.",
        r"(?:^|\. )Born in {N}, ",
    ),
    "educated_at": (r"(?:He|She|It) studied at {N}\.", r"is a graduate of {N}\.", r" attended {N}\."),
    "spouse": (r"is married to {N}\.", r" married {N}\.", r"(?:His|Her) spouse is {N}\."),
    "founded_by": (r"founded in \d+ by {N}\.", r"(?:^|\. ){N} founded the ", r"Founded by {N} in "),
    "based_in": (
        r"The band is based in {N}\.",
        r" comes from {N}\.",
        r"It is based in {N}\.",
        r"headquarters are in {N}\.",
        r"headquartered in {N}\.",
    ),
    "directed_by": (r"film directed by {N}\.", r"(?:^|\. )Directed by {N}, ", r"film by director {N}\."),
    "written_by": (r"novel by {N}\.", r"(?:^|\. ){N} wrote ", r"novel written by {N}\."),
    "performed_by": (r"album by {N}\.", r"(?:^|\. ){N} released the album ", r"recorded by {N} and released"),
    "located_in": (r"is a city in {N}, near", r"is a city of {N};", r"is a city in {N}\."),
    "capital": (r"whose capital is {N}\.", r"The capital of .+? is {N}\.", r"capital city is {N}\."),
}  # fmt: skip
_YEAR = re.compile(r"\b(\d+)\b")


def read_fact(relation: str, text: str, names: Sequence[str]) -> str | None:
    """The object of ``relation`` an article's ``text`` states, among the ``names`` it
    links to (its year for ``"year"``); None if the text does not state it."""
    if relation == "year":
        m = _YEAR.search(text)
        return m.group(1) if m else None
    for name in sorted(names, key=len, reverse=True):
        for pattern in _PATTERNS.get(relation, ()):
            if re.search(pattern.replace("{N}", re.escape(name)), text):
                return name
    return None


@dataclass(frozen=True)
class Options:
    """The admissible actions, by kind: search queries, titles to open, answers."""

    searches: tuple[str, ...] = ()
    opens: tuple[str, ...] = ()
    answers: tuple[str, ...] = ()


@dataclass
class _Read:
    """What the reader has read: articles by title (text, linked titles)."""

    articles: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def article_of(self, name: str, kind: str) -> tuple[str, list[str]] | None:
        title = _pick_title(name, kind, list(self.articles))
        return None if title is None else self.articles[title]


_ARTICLE = re.compile(r"^Article: (.+?)\n(.*)\nLinked articles: (.*)$", re.DOTALL)


def _name(title: str) -> str:
    """``"Gorlen Tide (film)"`` -> ``"Gorlen Tide"``."""
    m = re.match(r"^(.*) \((\w+)\)$", title)
    return m.group(1) if m else title


def _pick_title(name: str, kind: str, titles: Sequence[str]) -> str | None:
    """The title among ``titles`` of the entity called ``name`` (of ``kind`` if several)."""
    exact = [t for t in titles if t == name]
    tagged = [t for t in titles if t.startswith(name + " (") and _name(t) == name]
    if kind:
        for t in tagged:
            if t.endswith(f"({kind})"):
                return t
    if exact:
        return exact[0]
    return tagged[0] if tagged else None


class Reader:
    """The observation-only search demonstrator; see the module docstring."""

    def decide(
        self, question: str, observations: Sequence[str], options: Options, searched: bool
    ) -> tuple[str, str]:
        """The next action as ``(kind, argument)``: ``("search", query)``, ``("open",
        title)`` or ``("answer", text)``. ``observations`` are the texts the env returned
        so far (after the question); ``searched``: whether a search was made already."""
        read = _Read()
        for obs in observations:
            for part in obs.split("\n\n"):
                m = _ARTICLE.match(part)
                if m:
                    read.articles[m.group(1)] = (m.group(2), m.group(3).split("; "))
        plan = parse_question(question)
        if plan is None:
            return self._fallback(options, searched)
        if not searched and options.searches:
            name = plan.starts[0][0]
            return ("search", name if name in options.searches else options.searches[0])
        step = self._follow(plan, read, options)
        return step if step is not None else self._fallback(options, searched)

    def _follow(self, plan: Plan, read: _Read, options: Options) -> tuple[str, str] | None:
        """Open the next article the plan needs, or answer once everything is read."""
        ends = []
        for name, kind in plan.starts:
            chain = plan.chain
            if plan.kind == "first":
                chain = ("year",)
            elif plan.kind == "same_country":
                chain = ("born_in", "located_in")
            elif plan.kind == "same_director":
                chain = ("directed_by",)
            got = self._walk(name, kind, chain, read, options)
            if isinstance(got, tuple):
                return got
            if got is None:
                return None
            ends.append(got)
            if plan.kind == "chain":
                break
        return ("answer", self._answer(plan, ends, options))

    def _walk(
        self, name: str, kind: str, chain: Sequence[str], read: _Read, options: Options
    ) -> str | tuple[str, str] | None:
        """Follow ``chain`` from ``name``: the end (a name or year) once every article on
        the way was read, else the next action (an open); None when stuck."""
        for relation in chain:
            article = read.article_of(name, kind)
            if article is None:
                title = _pick_title(name, kind, options.opens)
                return None if title is None else ("open", title)
            text, links = article
            fact = read_fact(relation, text, [_name(t) for t in links])
            if fact is None:
                return None
            name, kind = fact, OBJECT_KIND.get(relation, "")
        return name

    def _answer(self, plan: Plan, ends: Sequence[str], options: Options) -> str:
        if plan.kind == "first":
            (a, _), (b, _) = plan.starts
            return a if int(ends[0]) < int(ends[1]) else b
        if plan.kind in ("same_country", "same_director"):
            return "yes" if ends[0] == ends[1] else "no"
        return ends[0]

    def _fallback(self, options: Options, searched: bool) -> tuple[str, str]:
        """Without a plan: search the question's words, open the first result, answer."""
        if not searched and options.searches:
            return ("search", options.searches[-1])
        if options.opens:
            return ("open", options.opens[0])
        return ("answer", options.answers[0] if options.answers else "")

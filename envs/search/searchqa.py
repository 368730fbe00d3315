"""Multi-hop question answering with a search tool over a generated encyclopedia.

=================  ===========================================================
id                 ``agentgym/SearchQA-v0``
world              3,395 fictional entities (people, places, organisations, works) per
                   world, 5,500+ passages, BM25 (``bm25s``); generated from a seed
data               generated (default), or your files: ``questions=`` (HotpotQA,
                   2WikiMultiHopQA, MuSiQue, FlashRAG/Search-R1) and ``corpus=``
                   (FlashRAG/Search-R1 JSONL); see docs/own-data.md
question           bridge (2 hops) 45%, comparison 25%, compositional 3-hop 20%, 4-hop 10%
                   (``question_types=`` keeps a subset, e.g. ``["bridge"]``)
action             ``search`` / ``open`` tool calls (up to 3 per turn) and/or
                   ``<answer>...</answer>`` (or the ``answer`` tool), which ends the episode
observation        text: the question at reset, then the results of each call
turn budget        8 turns, then truncated
reward range       -0.1 .. 1 per step (default weights)
=================  ===========================================================

Observations
    At reset: the question and how to answer. After a ``search``: the top 3 passages, each
    with its article's title. After an ``open``: the whole article and the titles of the
    articles it links to. A title shared by several articles (a novel and the film adapted
    from it) opens a list of the titles it may mean; an unknown title gets similar titles.

Actions
    ``<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>``,
    ``<tool_call>{"name": "open", "arguments": {"title": "..."}}</tool_call>`` and
    ``<answer>a name, a year, yes or no</answer>``. ``answer_tool=True`` also offers the
    suite's ``answer`` tool (``{"answer": "..."}``) for frameworks that forward only tool
    calls; the framework adapters turn it on by default. ``info["admissible_actions"]`` lists candidates
    for small policies (LLMs need not use it): searches for the entities the question names
    and for the question's words, ``open`` of every title seen and not yet opened, and
    answers among the entities named in the articles opened so far (plus the question's
    entities, years when the question asks for one, yes/no for a yes/no question).

Rewards (component: default weight)
    * ``format`` (0.1): -1 for a turn that does not parse or holds neither a call nor an
      answer, else 0.
    * ``exact_match`` (1.0): at the answer, 1 if it equals a gold answer after SQuAD
      normalisation (case, punctuation, articles and spacing ignored), else 0.
    * ``f1`` (0.0): at the answer, the best token F1 against the gold answers; reported in
      ``info["reward_components"]`` and weighted 0 by default (pass
      ``reward_weights={"f1": 1.0}`` to train on it).

    ``success`` is an exact match.

Tasks
    ``searchqa-<seed>``; train seeds 0..99,999, test seeds 100,000..100,999, valid seeds
    101,000..101,999 (for choosing hyperparameters without touching test). Train seeds
    ``25,000*w .. 25,000*w + 24,999`` ask about train world ``w`` (4 worlds); every test seed
    asks about one test world, every valid seed about one valid world. Test and valid names
    come from an alphabet disjoint from the train worlds' (no entity name, nor any invented
    word of one, is shared with a train world), so held-out questions cannot be answered
    from memory of training articles. ``info["question_type"]`` and ``info["hops"]`` say what
    was drawn.

Your own data
    ``gym.make("agentgym/SearchQA-v0", questions=PATH, corpus=PATH)`` asks the questions of
    a HotpotQA or 2WikiMultiHopQA JSON file, a MuSiQue JSONL file or a FlashRAG/Search-R1
    question JSONL file, searching a FlashRAG/Search-R1 corpus (BM25, index built once and
    cached on disk, ``index_dir=``). Without ``corpus`` each question searches its own
    context paragraphs (the distractor setting; FlashRAG question files need a corpus).
    Every gold answer and alias counts for exact match and F1. Task ids are the file's
    ids; the file is one split, the one named by ``split=`` (the other names hold no task).
    ``question_types=`` keeps the file's types (e.g. ``["comparison"]``). ``open`` shows
    every passage of a title. ``info["data"]`` names the files and their SHA-256;
    ``questions_sha256=`` / ``corpus_sha256=`` make the env refuse other files (``agentgym
    eval`` adds them, so replays of its recordings do). No ``admissible_actions``: real
    answers are not drawn from a finite set.

Version History
    * v0: first release.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from agentgym.envs.search.metrics import exact_match, f1_score
from agentgym.simulators.search import (
    QUESTION_MIX,
    Encyclopedia,
    Question,
    get_encyclopedia,
    make_question,
)
from agentgym.simulators.search.articles import Passage
from agentgym.simulators.search.encyclopedia import tokenize
from agentgym.simulators.search.passages import PassageIndex
from agentgym.simulators.search.readers import QARecord
from agentgym.simulators.search.userdata import UserData

from agentgym.core import AgentEnv, BaseOptions, ResetOutcome, StepOutcome
from agentgym.error import InvalidConfigError
from agentgym.parsing import ParsedAction, Tool, render_answer, render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits

SEARCH_TOOL = Tool(
    name="search",
    description="Search the encyclopedia; returns the best matching passages with the "
    "titles of their articles.",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 500, "description": "Words to look for."}
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)
OPEN_TOOL = Tool(
    name="open",
    description="Open the article with this title and read all of it.",
    parameters={
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 300, "description": "The article title."}
        },
        "required": ["title"],
        "additionalProperties": False,
    },
)

#: Calls run per turn; more are reported and skipped.
MAX_CALLS = 3
#: Train seeds per train world, and the worlds' seeds.
SEEDS_PER_TRAIN_WORLD = 25_000
TEST_WORLD_SEED = 1_000
VALID_WORLD_SEED = 2_000

SYSTEM_PROMPT = (
    "You answer questions about a fictional world using its encyclopedia. The questions "
    "need several facts from different articles. Search with\n"
    + render_tool_call("search", {"query": "words to look for"})
    + "\nread a whole article with\n"
    + render_tool_call("open", {"title": "Article Title"})
    + "\nand when you know the answer, give it once as <answer>...</answer>: only the name, "
    "the year, or yes/no. Giving an answer ends the episode."
)

FILE_SYSTEM_PROMPT = (
    "You answer questions with a search engine over a collection of documents. A question "
    "may need facts from several documents. Search with\n"
    + render_tool_call("search", {"query": "words to look for"})
    + "\nread every passage of a document with\n"
    + render_tool_call("open", {"title": "Document Title"})
    + "\nand when you know the answer, give it once as <answer>...</answer>: only the short "
    "answer (a name, a date, a number, yes or no). Giving an answer ends the episode."
)
#: Characters of one passage shown in search results, and of an opened document.
PASSAGE_CHARS = 2_000
DOCUMENT_CHARS = 8_000

_YES_NO_STARTS = ("Were", "Was", "Are", "Is", "Did", "Do", "Does")


def world_of(seed: int) -> tuple[int, int]:
    """``(world seed, alphabet)`` of the world a task seed asks about."""
    if seed >= 101_000:
        return VALID_WORLD_SEED, 1
    if seed >= 100_000:
        return TEST_WORLD_SEED, 1
    return seed // SEEDS_PER_TRAIN_WORLD, 0


class SearchQAEnv(AgentEnv):
    """Multi-hop QA with search and open tools; see the module docstring for the card."""

    metadata = {"family": "search", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "exact_match": 1.0,
        "f1": 0.0,
    }
    default_max_turns: ClassVar[int | None] = 8
    answers_in_text: ClassVar[bool] = True
    splits: ClassVar[tuple[str, ...]] = ("train", "test", "valid")

    def __init__(
        self,
        *,
        top_k: int = 3,
        question_types: Sequence[str] | None = None,
        questions: str | None = None,
        corpus: str | None = None,
        index_dir: str | None = None,
        questions_sha256: str | None = None,
        corpus_sha256: str | None = None,
        **base: Unpack[BaseOptions],
    ):
        if not 1 <= int(top_k) <= 20:
            raise InvalidConfigError(f"top_k must be in 1..20, got {top_k!r}.")
        if questions is None and (corpus, questions_sha256, corpus_sha256) != (None,) * 3:
            raise InvalidConfigError(
                "corpus= and the *_sha256= digests go with questions= (a question file); "
                "without it the env asks about its generated encyclopedia."
            )
        types = tuple(QUESTION_MIX) if question_types is None else tuple(question_types)
        if questions is None and (not types or any(t not in QUESTION_MIX for t in types)):
            raise InvalidConfigError(
                f"question_types must be a non-empty subset of {list(QUESTION_MIX)}, "
                f"got {question_types!r}."
            )
        super().__init__(**base)
        self.top_k = int(top_k)
        #: Question type -> weight: the card's mix, restricted to ``question_types``.
        self.question_mix = {t: QUESTION_MIX[t] for t in QUESTION_MIX if t in types}
        self._splits = {
            **seeded_splits("searchqa"),
            "valid": SeededTaskSet("searchqa", 101_000, 1_000),
        }
        self._enc: Encyclopedia | None = None
        self._question: Question | None = None
        #: A user's questions and passages (``questions=``); None for the generated worlds.
        self.data: UserData | None = None
        self._file_ids: tuple[str, ...] = ()
        self._record: QARecord | None = None
        self._index: PassageIndex | None = None
        if questions is not None:
            self._open_files(questions, corpus, index_dir, questions_sha256, corpus_sha256)
            self._keep_types(question_types)
        self._loaded: str | None = None
        self._opened: frozenset[int] = frozenset()
        self._seen: frozenset[int] = frozenset()
        self._searched = False

    def _open_files(
        self,
        questions: str,
        corpus: str | None,
        index_dir: str | None,
        questions_sha256: str | None,
        corpus_sha256: str | None,
    ) -> None:
        self.data = UserData.open(
            questions,
            corpus,
            index_dir=index_dir,
            questions_sha256=questions_sha256,
            corpus_sha256=corpus_sha256,
        )
        # a file is one task set: the split it was opened as (the other names hold nothing)
        object.__setattr__(self, "splits", (self.split,))

    def _keep_types(self, question_types: Sequence[str] | None) -> None:
        assert self.data is not None
        records = self.data.records
        if question_types is None:
            self._file_ids = tuple(r.id for r in records)
            return
        wanted = set(question_types)
        self._file_ids = tuple(r.id for r in records if r.kind in wanted)
        if not self._file_ids:
            kinds = sorted({r.kind for r in records})
            raise InvalidConfigError(
                f"question_types={list(question_types)!r} keeps no question of "
                f"{self.data.questions.path!r}; its types are {kinds}."
            )

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        if self.data is not None:
            return self._file_ids if (split or self.split) == self.split else ()
        return self._splits[split or self.split]

    def data_digests(self) -> dict[str, str]:
        """The keyword arguments that pin the data files (``questions_sha256=...``): passed
        back to the env, they make it refuse a different file. Empty for generated worlds."""
        return {} if self.data is None else self.data.digests()

    @property
    def tools(self) -> Sequence[Tool]:
        return (SEARCH_TOOL, OPEN_TOOL)

    @property
    def encyclopedia(self) -> Encyclopedia:
        """The encyclopedia of the current task's world."""
        assert self._enc is not None, "call reset() first"
        return self._enc

    @property
    def question(self) -> Question:
        """The current question (its gold answers are privileged: not for the policy)."""
        assert self._question is not None, "call reset() first"
        return self._question

    @property
    def record(self) -> QARecord:
        """The current question of a user's file (gold answers included: privileged)."""
        assert self._record is not None, "call reset() on an env built with questions= first"
        return self._record

    def _load(self, task_id: str) -> None:
        if self._loaded == task_id:
            return
        if self.data is not None:
            self._record = self.data.record(task_id)
            self._index = self.data.index_for(task_id)
            self._loaded = task_id
            return
        seed = SeededTaskSet.seed_of(task_id)
        self._enc = get_encyclopedia(*world_of(seed))
        self._question = make_question(self._enc.world, seed, self.question_mix)
        self._loaded = task_id

    # ---- episode ---------------------------------------------------------------------------

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        self._load(task_id)
        if self.data is not None:
            return self._reset_file()
        q = self.question
        self._opened = frozenset()
        self._seen = frozenset(q.subjects)
        self._searched = False
        text = (
            f"Question: {q.text}\n"
            "Use search and open to find the facts, then reply with <answer>...</answer> "
            "(only the name, the year, or yes/no)."
        )
        return ResetOutcome(
            text=text,
            instruction=q.text,
            system_prompt=SYSTEM_PROMPT,
            info={"question_type": q.kind, "hops": q.hops},
        )

    def _reset_file(self) -> ResetOutcome:
        assert self.data is not None
        r = self.record
        self._opened = self._seen = frozenset()
        self._searched = False
        text = (
            f"Question: {r.question}\n"
            "Use search and open to find the facts, then reply with <answer>...</answer> "
            "(only the short answer: a name, a date, a number, yes or no)."
        )
        return ResetOutcome(
            text=text,
            instruction=r.question,
            system_prompt=FILE_SYSTEM_PROMPT,
            info={"question_type": r.kind, "hops": r.hops, "data": self.data.source()},
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        parts: list[str] = []
        calls = list(action.tool_calls)
        if len(calls) > MAX_CALLS:
            parts.append(f"Only the first {MAX_CALLS} tool calls of a turn are run.")
            calls = calls[:MAX_CALLS]
        for call in calls:
            if call.name == "search":
                parts.append(self._search(str(call.arguments["query"])))
            else:
                parts.append(self._open(str(call.arguments["title"])))
        if action.answer is not None:
            golds = self.record.answers if self.data is not None else self.question.answers
            em = exact_match(action.answer, golds)
            parts.append("Answer received.")
            return StepOutcome(
                text="\n\n".join(parts),
                components={"exact_match": em, "f1": f1_score(action.answer, golds)},
                terminated=True,
                success=em == 1.0,
            )
        if not calls:
            if not action.valid:
                return StepOutcome(text="Invalid action: " + action.error_text())
            problem = (
                "expected a search or open tool call, or an <answer>. Example: "
                + render_tool_call("search", {"query": "words to look for"})
            )
            return StepOutcome(text="Invalid action: " + problem, action_valid=False, error=problem)
        return StepOutcome(text="\n\n".join(parts))

    def _search(self, query: str) -> str:
        self._searched = True
        if self.data is not None:
            return self._search_file(query)
        hits = self.encyclopedia.search(query, self.top_k)
        shown = query if len(query) <= 100 else query[:100] + "..."
        if not hits:
            return (
                f"search({shown!r}) found nothing: no word of the query appears in the "
                "encyclopedia. Try the name of a person, place, organisation or work."
            )
        self._see(hits)
        lines = [f"search({shown!r}) returned {len(hits)} passages:"]
        for i, p in enumerate(hits, 1):
            lines.append(f"[{i}] {p.title}\n{p.text}")
        return "\n".join(lines)

    def _see(self, passages: Sequence[Passage]) -> None:
        enc = self.encyclopedia
        new = {enc.world.by_title[p.title] for p in passages}
        new.update(m for p in passages for m in p.mentions)
        self._seen = self._seen | new

    def _search_file(self, query: str) -> str:
        assert self._index is not None
        index = self._index
        hits = index.search(query, self.top_k)
        shown = query if len(query) <= 100 else query[:100] + "..."
        if not hits:
            return f"search({shown!r}) found nothing: no word of the query is in the documents."
        self._seen = self._seen | frozenset(hits)
        lines = [f"search({shown!r}) returned {len(hits)} passages:"]
        for i, hit in enumerate(hits, 1):
            p = index.passage(hit)
            lines.append(f"[{i}] {p.title}\n{_cut(p.text, PASSAGE_CHARS)}")
        return "\n".join(lines)

    def _open_file(self, title: str) -> str:
        assert self._index is not None
        found = self._index.lookup(title)
        shown = title if len(title) <= 100 else title[:100] + "..."
        if found.ambiguous:
            return f"{shown!r} may refer to: " + "; ".join(found.candidates) + "."
        if not found.passages:
            similar = f" Similar titles: {'; '.join(found.candidates)}." if found.candidates else ""
            return f"No document is titled {shown!r}.{similar}"
        self._opened = self._opened | {found.passages[0]}
        self._seen = self._seen | frozenset(found.passages)
        body = "\n".join(self._index.passage(i).text for i in found.passages)
        return f"Document: {found.title}\n{_cut(body, DOCUMENT_CHARS)}"

    def _open(self, title: str) -> str:
        if self.data is not None:
            return self._open_file(title)
        enc = self.encyclopedia
        found = enc.open(title)
        shown = title if len(title) <= 100 else title[:100] + "..."
        if found.ambiguous:
            return f"{shown!r} may refer to: " + "; ".join(found.candidates) + "."
        if found.article is None:
            similar = f" Similar titles: {'; '.join(found.candidates)}." if found.candidates else ""
            return f"No article is titled {shown!r}.{similar}"
        article = found.article
        self._opened = self._opened | {article.entity_id}
        self._see(article.passages)
        self._seen = self._seen | {article.entity_id}
        links = "; ".join(enc.world[m].title for m in article.mentions)
        return f"Article: {article.title}\n{article.text}\nLinked articles: {links}"

    # ---- state -----------------------------------------------------------------------------

    def state_key(self) -> str:
        """What is known, not how: the task, the articles opened and the entities seen."""
        if self._task_id is None:
            return ""
        parts = (
            self._task_id,
            ",".join(map(str, sorted(self._opened))),
            ",".join(map(str, sorted(self._seen))),
        )
        return hashlib.blake2b("\x00".join(parts).encode(), digest_size=16).hexdigest()

    def admissible_actions(self) -> list[str] | None:
        """Candidate actions for small policies (see the card): searches, opens, answers.
        None on a user's questions, whose answers are not drawn from a finite set."""
        if self.data is not None:
            return None
        enc, q = self.encyclopedia, self.question
        world = enc.world
        actions = [render_tool_call("search", {"query": world[s].name}) for s in q.subjects]
        words = " ".join(dict.fromkeys(tokenize(q.text)))
        actions.append(render_tool_call("search", {"query": words}))
        titles = sorted(world[e].title for e in self._seen - self._opened)
        actions += [render_tool_call("open", {"title": t}) for t in titles]
        answers: set[str] = {world[s].name for s in q.subjects}
        years: set[int] = set()
        for opened in self._opened:
            article = enc.article_of(opened)
            answers.update(world[m].name for m in article.mentions)
            years.update(y for p in article.passages for y in p.years)
            years.add(world[opened].year)
        if q.text.split(" ", 1)[0] in _YES_NO_STARTS:
            answers.update(("yes", "no"))
        if "year" in q.text.lower() or q.text.startswith("When "):
            answers.update(str(y) for y in years)
        actions += [render_answer(a) for a in sorted(answers)]
        return list(dict.fromkeys(actions))

    def oracle_action(self) -> str:
        """Search the question's first entity, open each article on the path, answer.

        On a user's questions: search the question, open each supporting title the
        passages hold, answer the first gold answer."""
        if self.data is not None:
            return self._oracle_file()
        q, world = self.question, self.encyclopedia.world
        if not self._searched:
            return render_tool_call("search", {"query": world[q.subjects[0]].name})
        for needed in q.needed:
            if needed not in self._opened:
                return render_tool_call("open", {"title": world[needed].title})
        return render_answer(q.answer)

    def _oracle_file(self) -> str:
        assert self._index is not None
        r = self.record
        if not self._searched:
            return render_tool_call("search", {"query": r.question[:500]})
        for title in r.supporting:
            found = self._index.lookup(title)
            if found.title == title and found.passages[0] not in self._opened:
                return render_tool_call("open", {"title": title})
        return render_answer(r.answers[0])

    def _native_snapshot(self) -> Any:
        return (self._task_id, self._opened, self._seen, self._searched)

    def _native_restore(self, native: Any) -> None:
        task_id, self._opened, self._seen, self._searched = native
        self._load(task_id)


def _cut(text: str, limit: int) -> str:
    return (
        text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} more characters]"
    )

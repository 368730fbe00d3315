"""Readers for users' own QA data: one per published question format, and the corpus reader.

Question files, told apart by their layout (the fields of the first record):

=====================  ======  ===========================================================
format                 layout  fields read
=====================  ======  ===========================================================
HotpotQA               JSON    ``_id``, ``question``, ``answer``, ``type``, ``context``
                       list    (``[title, [sentences]]`` pairs), ``supporting_facts``
2WikiMultiHopQA        JSON    as HotpotQA, plus ``evidences`` (the triples; their count
                       list    is the number of hops)
MuSiQue                JSONL   ``id``, ``question``, ``answer``, ``answer_aliases``,
                               ``paragraphs`` (``title``, ``paragraph_text``,
                               ``is_supporting``); ``answerable: false`` records are left out
FlashRAG / Search-R1   JSONL   ``id``, ``question``, ``golden_answers`` (a list)
=====================  ======  ===========================================================

Corpora: FlashRAG / Search-R1 JSONL, ``id`` and ``contents`` with the title on the first
line of ``contents`` (in double quotes in their Wikipedia dumps; the quotes are dropped).

A file that is not in the format its layout points to is refused with one line naming the
format expected and the first field that did not match (:class:`DataFormatError`); after a
first good record, a malformed record (bad JSON, a missing or mistyped field, a repeated
id) is skipped and counted in :attr:`QuestionFile.skipped`, never a crash.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentgym.datafiles import (
    BAD_LINE,
    RecordMismatch,
    json_lines,
    read_with_digest,
    require,
)
from agentgym.error import InvalidConfigError

#: Files are read in chunks of this many bytes while hashing.


class DataFormatError(InvalidConfigError):
    """A data file that is not in the format it was expected to be in (one-line message)."""


@dataclass(frozen=True)
class Paragraph:
    """One passage: its article's title and its text."""

    title: str
    text: str


@dataclass(frozen=True)
class QARecord:
    """One question of a user's file, in the form every format is read into."""

    id: str
    question: str
    #: Every gold answer and alias; exact match and F1 take the best of them.
    answers: tuple[str, ...]
    #: The dataset's question type (``bridge``, ``comparison``, ``2hop``...); ``""`` if none.
    kind: str = ""
    #: Hops the dataset states or implies; 0 when it says nothing.
    hops: int = 0
    #: The question's own context paragraphs (the distractor setting); empty for FlashRAG.
    paragraphs: tuple[Paragraph, ...] = ()
    #: Titles of the supporting paragraphs, in the file's order.
    supporting: tuple[str, ...] = ()


@dataclass
class QuestionFile:
    """The questions read from one file, with where they came from."""

    path: str
    format: str
    sha256: str
    records: list[QARecord]
    #: Records left out, by reason (``malformed``, ``duplicate id``, ``unanswerable``).
    skipped: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line: the file, its format, its digest and what was kept and left out."""
        left = ", ".join(f"{n} {why}" for why, n in sorted(self.skipped.items()))
        return (
            f"{os.path.basename(self.path)} ({FORMAT_NAMES[self.format]}, sha256 "
            f"{self.sha256[:12]}): {len(self.records)} questions"
            + (f", skipped {left}" if left else "")
        )


FORMAT_NAMES = {
    "hotpotqa": "HotpotQA JSON",
    "2wikimultihopqa": "2WikiMultiHopQA JSON",
    "musique": "MuSiQue JSONL",
    "flashrag": "FlashRAG/Search-R1 question JSONL",
    "flashrag-corpus": "FlashRAG/Search-R1 corpus JSONL",
}


# ---- field checks ---------------------------------------------------------------------------


def _text(record: Any, name: str) -> str:
    value = require(record, name, str, "a string")
    if not value.strip():
        raise RecordMismatch(f"field {name!r} is empty")
    return str(value)


def _str_list(record: Any, name: str) -> list[str]:
    value = require(record, name, list, "a list of strings")
    if not all(isinstance(v, str) for v in value):
        raise RecordMismatch(f"field {name!r} is not a list of strings")
    return value


def _record_id(record: Any, name: str) -> str:
    value = require(record, name, (str, int), "a string or integer id")
    return str(value)


def join_sentences(sentences: list[str]) -> str:
    """Sentences as one text: HotpotQA's carry their leading space, 2Wiki's do not."""
    out = ""
    for s in sentences:
        if out and not out[-1].isspace() and s and not s[0].isspace():
            out += " "
        out += s
    return " ".join(out.split())


def _context(record: Any) -> tuple[Paragraph, ...]:
    value = require(record, "context", list, "a list of [title, [sentences]] pairs")
    out = []
    for pair in value:
        ok = (
            isinstance(pair, list)
            and len(pair) == 2
            and isinstance(pair[0], str)
            and isinstance(pair[1], list)
            and all(isinstance(s, str) for s in pair[1])
        )
        if not ok:
            raise RecordMismatch("field 'context' is not a list of [title, [sentences]] pairs")
        out.append(Paragraph(pair[0], join_sentences(pair[1])))
    return tuple(out)


def _supporting_titles(record: Any) -> tuple[str, ...]:
    value = require(record, "supporting_facts", list, "a list of [title, sentence index] pairs")
    titles = []
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise RecordMismatch("field 'supporting_facts' is not a list of [title, index] pairs")
        titles.append(pair[0])
    return tuple(dict.fromkeys(titles))


# ---- one converter per question format -------------------------------------------------------


def _hotpotqa(record: Any) -> QARecord | None:
    return QARecord(
        id=_record_id(record, "_id"),
        question=_text(record, "question"),
        answers=(_text(record, "answer"),),
        kind=_text(record, "type"),
        hops=2,
        paragraphs=_context(record),
        supporting=_supporting_titles(record),
    )


def _two_wiki(record: Any) -> QARecord | None:
    rid, question = _record_id(record, "_id"), _text(record, "question")
    answer, kind = _text(record, "answer"), _text(record, "type")
    paragraphs, supporting = _context(record), _supporting_titles(record)
    evidences = require(record, "evidences", list, "a list of [subject, relation, object] triples")
    return QARecord(rid, question, (answer,), kind, len(evidences), paragraphs, supporting)


_HOPS = re.compile(r"^(\d+)hop")


def _musique(record: Any) -> QARecord | None:
    rid, question = _record_id(record, "id"), _text(record, "question")
    answer = _text(record, "answer")
    aliases = _str_list(record, "answer_aliases")
    items = require(record, "paragraphs", list, "a list of paragraph objects")
    paragraphs, supporting = [], []
    for item in items:
        title, text = _text(item, "title"), require(item, "paragraph_text", str, "a string")
        paragraphs.append(Paragraph(title, " ".join(text.split())))
        if item.get("is_supporting") is True:
            supporting.append(title)
    if record.get("answerable") is False:
        return None
    kind = rid.split("__", 1)[0] if "__" in rid else ""
    hops = _HOPS.match(kind)
    return QARecord(
        id=rid,
        question=question,
        answers=tuple(dict.fromkeys([answer, *aliases])),
        kind=kind,
        hops=int(hops.group(1)) if hops else 0,
        paragraphs=tuple(paragraphs),
        supporting=tuple(dict.fromkeys(supporting)),
    )


def _flashrag(record: Any) -> QARecord | None:
    rid, question = _record_id(record, "id"), _text(record, "question")
    answers = [a for a in _str_list(record, "golden_answers") if a.strip()]
    if not answers:
        raise RecordMismatch("field 'golden_answers' holds no answer")
    meta = record.get("metadata")
    kind = meta.get("type", "") if isinstance(meta, dict) else ""
    return QARecord(
        rid, question, tuple(dict.fromkeys(answers)), kind if isinstance(kind, str) else ""
    )


@dataclass(frozen=True)
class _Format:
    name: str
    layout: str  # "json" (one list) or "jsonl" (one object a line)
    #: A field only this format has among those of its layout (how it is recognised).
    marker: str
    fields: tuple[str, ...]
    convert: Callable[[Any], QARecord | None]


QUESTION_FORMATS = (
    _Format("2wikimultihopqa", "json", "evidences",
            ("_id", "question", "answer", "type", "context", "supporting_facts", "evidences"),
            _two_wiki),
    _Format("hotpotqa", "json", "level",
            ("_id", "question", "answer", "type", "context", "supporting_facts"), _hotpotqa),
    _Format("musique", "jsonl", "paragraphs",
            ("id", "question", "answer", "answer_aliases", "paragraphs"), _musique),
    _Format("flashrag", "jsonl", "golden_answers", ("id", "question", "golden_answers"),
            _flashrag),
)  # fmt: skip


def _pick_format(layout: str, first: Any) -> _Format:
    """The format of a file of ``layout`` whose first record is ``first``."""
    candidates = [f for f in QUESTION_FORMATS if f.layout == layout]
    if isinstance(first, dict):
        for fmt in candidates:
            if fmt.marker in first:
                return fmt
        return min(candidates, key=lambda f: sum(name not in first for name in f.fields))
    return candidates[-1] if layout == "json" else candidates[0]


def _decode(path: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            f"{path}: not a question file: expected UTF-8 JSON or JSONL text, got a byte "
            f"that is not UTF-8 at offset {exc.start}"
        ) from None


def read_questions(path: str | os.PathLike[str]) -> QuestionFile:
    """Read a question file in any of the formats above; refuse anything else in one line."""
    path, raw, digest = read_with_digest(path, "questions")
    text = _decode(path, raw)
    stripped = text.lstrip()
    if stripped.startswith("["):
        items, layout = _json_list(path, text), "json"
    elif stripped.startswith("{"):
        items, layout = json_lines(text), "jsonl"
    else:
        raise DataFormatError(
            f"{path}: not a question file: expected a JSON list (HotpotQA, 2WikiMultiHopQA) "
            f"or JSON lines (MuSiQue, FlashRAG), got text starting {stripped[:20]!r}"
        )
    return _convert(path, digest, layout, items)


def _json_list(path: str, text: str) -> Iterator[tuple[int, Any]]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise DataFormatError(
            f"{path}: not HotpotQA or 2WikiMultiHopQA JSON: the file is not valid JSON ({exc})"
        ) from None
    if not isinstance(data, list):
        raise DataFormatError(f"{path}: not HotpotQA or 2WikiMultiHopQA JSON: not a JSON list")
    return enumerate(data, 1)


def _convert(path: str, digest: str, layout: str, items: Iterator[tuple[int, Any]]) -> QuestionFile:
    where = "record" if layout == "json" else "line"
    fmt: _Format | None = None
    out = QuestionFile(path, "", digest, [])
    seen: set[str] = set()
    for number, item in items:
        if fmt is None:
            if item is BAD_LINE:
                raise DataFormatError(
                    f"{path}: not a question file: expected JSON lines (MuSiQue, FlashRAG), "
                    f"but line {number} is not JSON"
                )
            fmt = _pick_format(layout, item)
            out.format = fmt.name
            if isinstance(item, dict) and "contents" in item and "question" not in item:
                raise DataFormatError(
                    f"{path}: not a question file: expected {FORMAT_NAMES[fmt.name]}, got a "
                    "corpus (its records have 'contents'); pass it as corpus=..."
                )
        try:
            if item is BAD_LINE:
                raise RecordMismatch("is not JSON")
            record = fmt.convert(item)
        except RecordMismatch as exc:
            if not out.records and not out.skipped:
                raise DataFormatError(
                    f"{path}: not {FORMAT_NAMES[fmt.name]}: {where} {number} {exc} "
                    f"(expected fields: {', '.join(fmt.fields)})"
                ) from None
            _count(out.skipped, "malformed")
            continue
        if record is None:
            _count(out.skipped, "unanswerable")
        elif record.id in seen:
            _count(out.skipped, "duplicate id")
        else:
            seen.add(record.id)
            out.records.append(record)
    if fmt is None or not out.records:
        raise DataFormatError(
            f"{path}: not a question file: expected at least one question, found "
            + ("none" if fmt is None else f"none usable ({_left(out.skipped)})")
        )
    return out


def _count(counts: dict[str, int], reason: str) -> None:
    counts[reason] = counts.get(reason, 0) + 1


def _left(skipped: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))


# ---- the corpus -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusLine:
    """One passage of a corpus file: where its line starts, how long it is, title, text."""

    offset: int
    length: int
    title: str
    text: str


def split_contents(contents: str) -> Paragraph:
    """FlashRAG ``contents``: the title on the first line (quotes dropped), then the text."""
    head, sep, rest = contents.partition("\n")
    if not sep:
        return Paragraph("", " ".join(head.split()))
    title = head.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1].strip()
    return Paragraph(title, " ".join(rest.split()))


def parse_corpus_line(line: bytes) -> Paragraph:
    """One corpus line as a passage; :class:`ValueError` names what is wrong with it."""
    try:
        record = json.loads(line)
    except ValueError:
        raise ValueError("is not JSON") from None
    try:
        _record_id(record, "id")
        contents = require(record, "contents", str, "a string")
    except RecordMismatch as exc:
        raise ValueError(str(exc)) from None
    return split_contents(contents)


def iter_corpus(
    path: str, skipped: dict[str, int], on_bytes: Callable[[int], None] | None = None
) -> Iterator[CorpusLine]:
    """The passages of a FlashRAG corpus file, streamed; malformed lines counted in
    ``skipped``; a file whose first line is not a corpus record is refused in one line."""
    first = True
    offset = 0
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, 1):
            start, offset = offset, offset + len(line)
            if on_bytes is not None:
                on_bytes(len(line))
            if not line.strip():
                continue
            try:
                passage = parse_corpus_line(line)
            except ValueError as exc:
                if first:
                    raise DataFormatError(
                        f"{path}: not {FORMAT_NAMES['flashrag-corpus']}: line {number} {exc} "
                        "(expected fields: id, contents)"
                    ) from None
                _count(skipped, "malformed")
                continue
            first = False
            yield CorpusLine(start, len(line), passage.title, passage.text)
    if first:
        raise DataFormatError(
            f"{path}: not {FORMAT_NAMES['flashrag-corpus']}: expected at least one passage, "
            "found none"
        )

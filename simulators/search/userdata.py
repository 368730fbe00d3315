"""A user's questions and the passages they are searched in: the world of SearchQA on files.

With a corpus file, every question searches the corpus (its index is built once and cached
on disk, :mod:`.bm25cache`). Without one, each question searches its own context
paragraphs from the question file: HotpotQA's and 2WikiMultiHopQA's ten (the distractor
setting: the supporting paragraphs among distractors), MuSiQue's twenty. FlashRAG question
files carry no paragraphs, so they need a corpus.

Parsed question files are kept per process (keyed by path, size, modification time and
inode), so several envs over one file read it once.
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Sequence
from typing import Any

from agentgym.simulators.search.bm25cache import CorpusIndex, open_corpus
from agentgym.simulators.search.passages import PassageIndex
from agentgym.simulators.search.readers import FORMAT_NAMES, QARecord, QuestionFile, read_questions

from agentgym.error import InvalidConfigError

#: Questions' own-paragraph indexes kept per dataset (they cost about a millisecond each).
OWN_INDEXES = 256

_FILES: collections.OrderedDict[tuple[Any, ...], QuestionFile] = collections.OrderedDict()
_FILES_LOCK = threading.Lock()


def load_questions(path: str | os.PathLike[str]) -> QuestionFile:
    """:func:`~.readers.read_questions`, once per process for an unchanged file."""
    real = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(real)
    except OSError as exc:
        raise InvalidConfigError(
            f"questions={os.fspath(path)!r}: cannot read it ({exc.strerror})."
        ) from None
    key = (real, st.st_size, st.st_mtime_ns, st.st_ino)
    with _FILES_LOCK:
        found = _FILES.get(key)
        if found is not None:
            _FILES.move_to_end(key)
            return found
    loaded = read_questions(real)
    with _FILES_LOCK:
        _FILES[key] = loaded
        while len(_FILES) > 4:
            _FILES.popitem(last=False)
    return loaded


def _check_digest(keyword: str, path: str, want: str | None, got: str) -> None:
    if want is not None and str(want).lower() != got:
        raise InvalidConfigError(
            f"{keyword}={path!r} has sha256 {got}, but {keyword}_sha256={want!r} was asked "
            "for (a recording names the file its episodes were played on): this is a different "
            "file. Pass the original file, or drop the digest to use this one."
        )


class UserData:
    """Questions from a user's file and the index each question searches."""

    def __init__(self, questions: QuestionFile, corpus: CorpusIndex | None):
        if corpus is None and questions.format == "flashrag":
            raise InvalidConfigError(
                f"questions={questions.path!r} is {FORMAT_NAMES[questions.format]}, which "
                "carries no paragraphs to search: pass corpus= a FlashRAG/Search-R1 corpus file."
            )
        self.questions = questions
        self.corpus = corpus
        self._by_id = {r.id: r for r in questions.records}
        self._own: collections.OrderedDict[str, PassageIndex] = collections.OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        questions: str | os.PathLike[str],
        corpus: str | os.PathLike[str] | None = None,
        *,
        index_dir: str | os.PathLike[str] | None = None,
        questions_sha256: str | None = None,
        corpus_sha256: str | None = None,
        progress: bool | None = None,
    ) -> UserData:
        """Read ``questions`` (and index ``corpus``), refusing files whose digest differs
        from ``questions_sha256`` / ``corpus_sha256`` when those are given."""
        qfile = load_questions(questions)
        _check_digest("questions", qfile.path, questions_sha256, qfile.sha256)
        index = None
        if corpus is not None:
            index = open_corpus(corpus, cache_dir=index_dir, progress=progress)
            _check_digest("corpus", index.path, corpus_sha256, index.sha256)
        elif corpus_sha256 is not None:
            raise InvalidConfigError("corpus_sha256= was given without corpus=.")
        return cls(qfile, index)

    @property
    def records(self) -> Sequence[QARecord]:
        return self.questions.records

    def record(self, task_id: str) -> QARecord:
        return self._by_id[task_id]

    def index_for(self, task_id: str) -> PassageIndex:
        """The corpus's index, or the question's own paragraphs' (built on first use)."""
        if self.corpus is not None:
            return self.corpus.index
        with self._lock:
            found = self._own.get(task_id)
            if found is not None:
                self._own.move_to_end(task_id)
                return found
        built = PassageIndex.from_paragraphs(self._by_id[task_id].paragraphs)
        with self._lock:
            self._own[task_id] = built
            while len(self._own) > OWN_INDEXES:
                self._own.popitem(last=False)
        return built

    def source(self) -> dict[str, Any]:
        """Where the data came from: files, formats, digests, counts (for info and cards)."""
        q = self.questions
        out: dict[str, Any] = {
            "questions": q.path,
            "questions_format": q.format,
            "questions_sha256": q.sha256,
            "questions_count": len(q.records),
            "questions_skipped": dict(q.skipped),
        }
        if self.corpus is not None:
            out.update(
                corpus=self.corpus.path,
                corpus_sha256=self.corpus.sha256,
                corpus_passages=len(self.corpus.index),
                corpus_skipped=dict(self.corpus.skipped),
            )
        return out

    def digests(self) -> dict[str, str]:
        """The keyword arguments that pin these files (``questions_sha256``, ``corpus_sha256``)."""
        out = {"questions_sha256": self.questions.sha256}
        if self.corpus is not None:
            out["corpus_sha256"] = self.corpus.sha256
        return out

"""agentgym/SearchQA-v0 on users' files (issue 36): each published format, the corpus index
and its cache, the one-line refusals, skipped records, and the tie rule of every search."""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path

import bm25s
import gymnasium as gym
import numpy as np
import pytest
from agentgym.envs.search.searchqa import SearchQAEnv
from agentgym.simulators.search import get_encyclopedia
from agentgym.simulators.search.bm25cache import open_corpus
from agentgym.simulators.search.passages import Lookup, PassageIndex, words
from agentgym.simulators.search.ranking import top_k
from agentgym.simulators.search.readers import (
    DataFormatError,
    Paragraph,
    join_sentences,
    read_questions,
    split_contents,
)
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgym
from agentgym.error import InvalidConfigError
from agentgym.parsing import render_answer, render_tool_call
from agentgym.testing import check_env

DATA = Path(__file__).resolve().parent.parent / "data"
HOTPOT = DATA / "hotpotqa_sample.json"
TWOWIKI = DATA / "2wikimultihopqa_sample.json"
MUSIQUE = DATA / "musique_sample.jsonl"
FLASH_Q = DATA / "flashrag_questions_sample.jsonl"
CORPUS = DATA / "flashrag_corpus_sample.jsonl"

#: (format, question file, needs a corpus, a question id, an alias that must count, a wrong answer)
FORMATS = [
    ("hotpotqa", HOTPOT, False, "5f0a1c2e9b3d4a0017e1a002", "Yes.", "no"),
    ("2wikimultihopqa", TWOWIKI, False, "a1b2c3d40bdd11eba7f7acde48001001", "zofia łęcka", "Jerzy Łęcki"),
    ("musique", MUSIQUE, False, "2hop__104731_20311", "Bjørgvin", "Trondheim"),
    ("flashrag", FLASH_Q, True, "test_0", "M. Holt", "Ásgeir Brekkan"),
]  # fmt: skip


def _make(path: Path, corpus: bool, tmp_path: Path, **kw):  # type: ignore[no-untyped-def]
    extra = {"corpus": str(CORPUS), "index_dir": str(tmp_path / "idx")} if corpus else {}
    return gym.make("agentgym/SearchQA-v0", questions=str(path), **extra, **kw)


def _play_oracle(env) -> dict:  # type: ignore[no-untyped-def]
    for _ in range(env.unwrapped.max_turns):
        _obs, _r, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        if terminated or truncated:
            return info
    raise AssertionError("the oracle did not answer within the turn budget")


# ---- the tie rule (issue 38) ---------------------------------------------------------------


def test_search_returns_tied_passages_in_corpus_order():
    """Words that score many passages equally: the cut takes the first in corpus order (the
    argpartition cut took an arbitrary subset of the tied ones)."""
    enc = get_encyclopedia(0, alphabet=0)
    checked = 0
    for word in ("politician", "novel", "musician", "headquarters", "written", "1952"):
        scores = np.asarray(enc._retriever.get_scores([word]), dtype=np.float64)
        for k in (1, 3, 5):
            want = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
            tied = int(np.sum(scores == scores[want[-1]]))
            checked += tied > 1
            assert [id(p) for p in enc.search(word, k)] == [id(enc.passages[i]) for i in want]
    assert checked >= 10  # the cut did fall inside a group of equal scores


def test_top_k_takes_the_first_of_equal_scores_and_drops_zeros():
    scores = np.zeros(5000)
    scores[[4000, 17, 2500, 9, 3333]] = 1.0
    scores[4999] = 2.0
    assert top_k(scores, 3).tolist() == [4999, 9, 17]
    assert top_k(scores, 50).tolist() == [4999, 9, 17, 2500, 3333, 4000]
    assert top_k(scores, 0).tolist() == [] and top_k(np.zeros(0), 3).tolist() == []


# ---- one test per published format -----------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "path", "corpus", "qid", "alias", "wrong"), FORMATS, ids=[f[0] for f in FORMATS]
)
def test_gold_answers_earn_the_outcome_and_a_wrong_one_does_not(
    fmt, path, corpus, qid, alias, wrong, tmp_path
):
    env = _make(path, corpus, tmp_path)
    assert env.unwrapped.data.questions.format == fmt
    for (
        task_id
    ) in env.unwrapped.task_ids():  # the oracle: search, open the supporting titles, answer
        _, info = env.reset(options={"task_id": task_id})
        assert info["data"]["questions_format"] == fmt and info["task_id"] == task_id
        end = _play_oracle(env)
        assert end["success"] and end["reward_components"]["exact_match"] == 1.0, task_id
    for answer, em in ((alias, 1.0), (wrong, 0.0)):
        env.reset(options={"task_id": qid})
        *_, terminated, _, info = env.step(render_answer(answer))
        assert terminated and info["reward_components"]["exact_match"] == em, answer
        assert info["success"] is (em == 1.0)
    env.close()


def _broken(tmp_path: Path, path: Path, field: str) -> Path:
    """``path`` with ``field`` removed from its first record."""
    out = tmp_path / ("broken" + "".join(path.suffixes))
    if path.suffix == ".json":
        records = json.loads(path.read_text(encoding="utf-8"))
        del records[0][field]
        out.write_text(json.dumps(records), encoding="utf-8")
    else:
        lines = path.read_text(encoding="utf-8").splitlines()
        first = json.loads(lines[0])
        del first[field]
        out.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    return out


@pytest.mark.parametrize(
    ("path", "field", "name"),
    [
        (HOTPOT, "context", "HotpotQA JSON"),
        (TWOWIKI, "answer", "2WikiMultiHopQA JSON"),
        (MUSIQUE, "answer_aliases", "MuSiQue JSONL"),
        (FLASH_Q, "golden_answers", "FlashRAG/Search-R1 question JSONL"),
    ],
    ids=["hotpotqa", "2wikimultihopqa", "musique", "flashrag"],
)
def test_a_file_not_in_its_format_is_refused_in_one_line(path, field, name, tmp_path):
    with pytest.raises(DataFormatError) as err:
        read_questions(_broken(tmp_path, path, field))
    message = str(err.value)
    assert "\n" not in message and f"not {name}:" in message
    assert (
        f"record 1 has no field {field!r}" in message or f"line 1 has no field {field!r}" in message
    )
    with pytest.raises(InvalidConfigError, match=f"not {name}"):
        gym.make("agentgym/SearchQA-v0", questions=str(_broken(tmp_path, path, field)))


def test_files_of_another_kind_are_refused_in_one_line(tmp_path):
    refusals = {
        "corpus.jsonl": (CORPUS.read_bytes(), "got a corpus (its records have 'contents')"),
        "tasks.jsonl": (json.dumps({"task_id": 1, "text": "x"}).encode() + b"\n", "not FlashRAG/Search-R1 question JSONL: line 1 has no field 'id'"),
        "notes.txt": (b"hello", "expected a JSON list (HotpotQA, 2WikiMultiHopQA) or JSON lines"),
        "latin1.json": ("[\"caf\xe9\"]".encode("latin-1"), "not UTF-8 at offset 5"),
        "numbers.json": (b"[1, 2]", "not HotpotQA JSON: record 1 is a JSON int, not an object"),
    }  # fmt: skip
    for name, (content, needle) in refusals.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DataFormatError) as err:
            read_questions(tmp_path / name)
        assert "\n" not in str(err.value) and needle in str(err.value), (name, str(err.value))
    for name, content, needle in (
        ("empty.json", b"[]", "expected at least one question, found none"),
        ("blank.jsonl", b"\n\n", "expected a JSON list (HotpotQA, 2WikiMultiHopQA) or JSON lines"),
    ):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DataFormatError, match=re.escape(needle)):
            read_questions(tmp_path / name)
    (tmp_path / "empty_corpus.jsonl").write_bytes(b"\n")
    with pytest.raises(DataFormatError, match="corpus JSONL: expected at least one passage"):
        open_corpus(tmp_path / "empty_corpus.jsonl", cache_dir=tmp_path / "idx")
    bad_corpus = tmp_path / "bad_corpus.jsonl"
    bad_corpus.write_text(json.dumps({"id": "0", "text": "no contents"}) + "\n")
    with pytest.raises(
        DataFormatError, match="not FlashRAG/Search-R1 corpus JSONL: line 1 has no field 'contents'"
    ):
        open_corpus(bad_corpus, cache_dir=tmp_path / "idx")


def test_malformed_records_are_skipped_and_counted(tmp_path):
    lines = MUSIQUE.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[1])
    bad["paragraphs"] = "not a list"
    path = tmp_path / "musique.jsonl"
    path.write_text("\n".join([lines[0], "{not json", json.dumps(bad), lines[0], lines[2]]) + "\n")
    got = read_questions(path)
    assert [r.id for r in got.records] == ["2hop__104731_20311"]
    assert got.skipped == {"malformed": 2, "duplicate id": 1, "unanswerable": 1}
    assert "skipped 1 duplicate id, 2 malformed, 1 unanswerable" in got.describe()

    corpus = tmp_path / "corpus.jsonl"
    rows = CORPUS.read_text(encoding="utf-8").splitlines()
    corpus.write_text("\n".join([rows[0], "[1, 2]", *rows[1:4], '{"id": "9"}']) + "\n")
    index = open_corpus(corpus, cache_dir=tmp_path / "idx")
    assert len(index.index) == 4 and index.skipped == {"malformed": 2}
    assert [index.index.passage(i).title for i in range(4)] == ["Kvarn Bridge"] * 2 + [
        "Maren Holt"
    ] * 2


def test_records_with_a_mistyped_nested_field_are_skipped(tmp_path):
    """Nested fields are checked as closely as the top level: a bad one skips the record."""
    hotpot = json.loads(HOTPOT.read_text(encoding="utf-8"))
    bad = [json.loads(json.dumps(hotpot[1])) for _ in range(5)]
    bad[0]["context"][1] = ["Ostra Lock"]  # a pair without its sentences
    bad[1]["context"][0][1] = ["fine", 7]  # a sentence that is not a string
    bad[2]["supporting_facts"] = [["Kvarn Bridge"]]
    bad[3]["answer"] = ["yes"]  # HotpotQA's answer is one string
    bad[4]["question"] = "   "
    for i, record in enumerate(bad):
        record["_id"] = f"bad-{i}"
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([hotpot[0], *bad]), encoding="utf-8")
    got = read_questions(path)
    assert [r.id for r in got.records] == [hotpot[0]["_id"]] and got.skipped == {"malformed": 5}

    lines = MUSIQUE.read_text(encoding="utf-8").splitlines()
    first, broken = json.loads(lines[0]), json.loads(lines[1])
    broken["paragraphs"][0] = {"idx": 0, "paragraph_text": "no title"}
    aliases = json.loads(lines[1])
    aliases["id"], aliases["answer_aliases"] = "2hop__1_2", ["ok", 3]
    path = tmp_path / "musique.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (first, broken, aliases)) + "\n")
    assert read_questions(path).skipped == {"malformed": 2}

    flash = [json.loads(line) for line in FLASH_Q.read_text(encoding="utf-8").splitlines()]
    flash[1]["golden_answers"] = []
    flash[2]["golden_answers"] = "Brekkan"  # a string, not a list
    flash[3]["id"] = None
    path = tmp_path / "flash.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in flash) + "\n")
    got = read_questions(path)
    assert [r.id for r in got.records] == ["test_0"] and got.skipped == {"malformed": 3}


def test_corpus_contents_and_sentences_become_passage_text():
    assert split_contents('"Kvarn Bridge"\nA  stone\n bridge. ') == Paragraph(
        "Kvarn Bridge", "A stone bridge."
    )
    assert split_contents("Kvarn Bridge\ntext") == Paragraph("Kvarn Bridge", "text")  # no quotes
    assert split_contents('""\ntext') == Paragraph("", "text")
    assert split_contents('"\ntext') == Paragraph('"', "text")  # one quote is not a pair
    assert split_contents('"A"\n') == Paragraph("A", "")
    assert split_contents("only text, no title line") == Paragraph("", "only text, no title line")
    assert join_sentences(["One.", " Two.", "Three.", "", " Four. "]) == "One. Two. Three. Four."
    assert join_sentences([]) == ""


def test_each_format_reads_the_fields_it_documents():
    hotpot = {r.id: r for r in read_questions(HOTPOT).records}
    bridge = hotpot["5f0a1c2e9b3d4a0017e1a001"]
    assert (bridge.kind, bridge.hops, bridge.answers) == ("bridge", 2, ("Lindqvist Conservatory",))
    assert bridge.supporting == ("Sólveig í Dal", "Ásgeir Brekkan")
    assert bridge.paragraphs[1] == Paragraph(
        "Ásgeir Brekkan",
        "Ásgeir Brekkan (1894–1960) was a Faroese composer and organist. He studied at the "
        "Lindqvist Conservatory in Malmö. His best known work is the opera Sólveig í Dal.",
    )
    wiki = {r.id: r for r in read_questions(TWOWIKI).records}
    assert [(r.kind, r.hops) for r in wiki.values()] == [
        ("compositional", 2),
        ("comparison", 2),
        ("bridge_comparison", 4),
    ]
    assert wiki["a1b2c3d40bdd11eba7f7acde48001001"].paragraphs[0].text == (
        "The Salt Orchard is a 1987 Polish drama film. It was directed by Jerzy Łęcki."
    )
    musique = {r.id: r for r in read_questions(MUSIQUE).records}
    three = musique["3hop1__55012_20311_7731"]
    assert (three.kind, three.hops, three.answers) == ("3hop1", 3, ("Vestland", "Vestland county"))
    assert (
        three.supporting == ("Kvarn Bridge", "Maren Holt", "Bergen") and len(three.paragraphs) == 4
    )
    flash = {r.id: r for r in read_questions(FLASH_Q).records}
    assert flash["test_2"].answers == ("Ásgeir Brekkan", "Asgeir Brekkan", "Brekkan")
    assert flash["test_0"].paragraphs == ()


# ---- the corpus and its index ----------------------------------------------------------------


def test_corpus_scores_are_bm25s_scores_on_the_same_words(tmp_path):
    index = open_corpus(CORPUS, cache_dir=tmp_path).index
    passages = [index.passage(i) for i in range(len(index))]
    retriever = bm25s.BM25()
    retriever.index([words(f"{p.title}. {p.text}") for p in passages], show_progress=False)
    for query in (
        "kvarn",  # the corpus's first word: term id 0
        "Maren Holt engineer",
        "opera Malmö",
        "bridge bridge 1951",
        "Trøndelag cathedral",
    ):
        known = [w for w in words(query) if w in retriever.vocab_dict]
        np.testing.assert_allclose(index.scores(query), retriever.get_scores(known), rtol=1e-6)
    assert index.scores("zzz unknownword") is None and index.search("zzz") == []


def test_the_index_is_built_once_and_rebuilt_when_the_corpus_changes(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    shutil.copy(CORPUS, corpus)
    cache = tmp_path / "idx"
    first = open_corpus(corpus, cache_dir=cache)
    assert first.built and first.directory.startswith(str(cache))
    assert open_corpus(corpus, cache_dir=cache) is first  # the same process: kept in memory
    # another process finds it on disk
    import subprocess
    import sys

    probe = (
        "from agentgym.simulators.search.bm25cache import open_corpus\n"
        f"c = open_corpus({str(corpus)!r}, cache_dir={str(cache)!r})\n"
        "print(c.built, c.directory, c.index.search('Lindqvist pianist', 1))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", first.directory, "[5]"]
    with corpus.open("a", encoding="utf-8") as fh:
        fh.write(
            json.dumps({"id": "12", "contents": '"Vestland"\nVestland is a county of Norway.'})
            + "\n"
        )
    second = open_corpus(corpus, cache_dir=cache)
    assert second.built and second.directory != first.directory and len(second.index) == 13
    assert (
        second.index.passage(second.index.search("Vestland county Norway", 1)[0]).title
        == "Vestland"
    )


def test_a_progress_bar_only_when_asked_or_large_on_a_terminal(tmp_path, capsys):
    open_corpus(CORPUS, cache_dir=tmp_path / "quiet")  # small, and stderr is not a terminal
    assert capsys.readouterr().err == ""
    open_corpus(CORPUS, cache_dir=tmp_path / "loud", progress=True)
    assert "indexing corpus" in capsys.readouterr().err


def test_words_and_titles_fold_case_and_accents():
    index = PassageIndex.from_paragraphs(
        [
            Paragraph("Ásgeir Brekkan", "A Faroese composer."),
            Paragraph("Zürich", "A city."),
            Paragraph("Zurich", "A town."),
            Paragraph("Ásgeir Brekkan", "An organist too."),
        ]
    )
    assert index.search("asgeir BREKKAN composer", 1) == [0]
    assert index.lookup("ÁSGEIR BREKKAN").passages == (0, 3)  # every passage of the title
    assert index.lookup("Zürich").passages == (1,)  # the exact title wins
    assert index.lookup("ZURICH") == Lookup(candidates=("Zurich", "Zürich"), ambiguous=True)
    assert index.lookup("organist") == Lookup(candidates=("Ásgeir Brekkan",))  # similar titles
    assert index.lookup("nothing like it") == Lookup()


# ---- the env on loaded data ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "path", "corpus"),
    [(f[0], f[1], f[2]) for f in FORMATS] + [("hotpotqa+corpus", HOTPOT, True)],
)
def test_loaded_envs_pass_the_conformance_suites(fmt, path, corpus, tmp_path):
    factory = functools.partial(_make, path, corpus, tmp_path)
    env = factory()
    try:
        check_env(env, factory=factory)
        gymnasium_check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


NASTY = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["\udcff\ud800", "\x00", "(((", ".*+?", "a" * 300, "Ásgeir", "  ", "é" * 40]),
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(text=NASTY, tool=st.sampled_from(["search", "open", "answer"]))
def test_any_argument_string_on_loaded_data_gives_an_observation(text, tool):
    env = SearchQAEnv(questions=str(HOTPOT), answer_tool=True)
    env.reset(seed=3)
    key = {"search": "query", "open": "title", "answer": "answer"}[tool]
    obs, reward, terminated, _, info = env.step(render_tool_call(tool, {key: text}))
    assert env.observation_space.contains(obs)
    assert info["action_valid"] and terminated == (tool == "answer")
    if tool != "answer":
        assert reward == 0.0 and obs["text"].startswith(("search(", "No document", "Document", "'"))


def test_the_file_is_the_split_it_was_opened_as():
    env = SearchQAEnv(questions=str(HOTPOT), split="test")
    assert env.splits == ("test",) and len(env.task_ids("test")) == 4
    assert env.task_ids("train") == () and SearchQAEnv.splits == ("train", "test", "valid")
    assert [env.reset(seed=s)[1]["task_id"] for s in range(6)] == [
        env.reset(seed=s)[1]["task_id"] for s in range(6)
    ]


def test_search_open_and_the_state_key_on_loaded_data():
    env = SearchQAEnv(questions=str(HOTPOT))
    _, info = env.reset(options={"task_id": "5f0a1c2e9b3d4a0017e1a001"})
    assert "admissible_actions" not in info and info["hops"] == 2
    start = info["state_key"]
    obs, *_, info = env.step(
        render_tool_call("search", {"query": "Lindqvist conservatory founded"})
    )
    assert (
        obs["text"].splitlines()[1] == "[1] Lindqvist Conservatory" and info["state_key"] != start
    )
    obs, *_ = env.step(render_tool_call("open", {"title": "asgeir brekkan"}))
    assert obs["text"].startswith("Document: Ásgeir Brekkan\nÁsgeir Brekkan (1894–1960)")
    obs, *_ = env.step(render_tool_call("open", {"title": "Nothing Here"}))
    assert obs["text"].startswith("No document is titled 'Nothing Here'.")
    corpus_env = SearchQAEnv(questions=str(FLASH_Q), corpus=str(CORPUS))
    corpus_env.reset(options={"task_id": "test_3"})
    obs, *_ = corpus_env.step(render_tool_call("open", {"title": "Maren Holt"}))
    assert obs["text"] == (
        "Document: Maren Holt\nMaren Holt (1861–1930) was a Norwegian civil engineer who built "
        "bridges and canal locks in Sweden and Norway.\nHolt died in Trondheim in 1930 and was "
        "buried in the cemetery of Nidaros Cathedral."
    )


def test_settings_that_do_not_fit_are_refused():
    with pytest.raises(InvalidConfigError, match="carries no paragraphs to search: pass corpus="):
        SearchQAEnv(questions=str(FLASH_Q))
    with pytest.raises(InvalidConfigError, match="go with questions="):
        SearchQAEnv(corpus=str(CORPUS))
    with pytest.raises(
        InvalidConfigError, match=r"keeps no question .* its types are \['bridge', 'comparison'\]"
    ):
        SearchQAEnv(questions=str(HOTPOT), question_types=["inference"])
    kept = SearchQAEnv(questions=str(HOTPOT), question_types=["comparison"])
    assert len(kept.task_ids()) == 2


def test_a_digest_pins_the_files(tmp_path):
    env = SearchQAEnv(questions=str(FLASH_Q), corpus=str(CORPUS), index_dir=str(tmp_path))
    digests = env.data_digests()
    assert set(digests) == {"questions_sha256", "corpus_sha256"}
    SearchQAEnv(questions=str(FLASH_Q), corpus=str(CORPUS), index_dir=str(tmp_path), **digests)
    other = tmp_path / "other.jsonl"
    other.write_text(FLASH_Q.read_text(encoding="utf-8").replace("kvarn", "Kvarn"))
    with pytest.raises(InvalidConfigError, match=r"questions=.* has sha256 .* different file"):
        SearchQAEnv(questions=str(other), corpus=str(CORPUS), index_dir=str(tmp_path), **digests)
    assert agentgym.get_record("agentgym/SearchQA-v0").family == "search"


@pytest.mark.parametrize(
    "name", ["agentgym.simulators.search.ranking", "agentgym.simulators.search.passages"]
)
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0

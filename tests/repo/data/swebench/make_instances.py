"""Write instances.jsonl and instances_missing.jsonl (SWE-bench's format) for the tests.

The repository snapshot ``repos/acme__wordstats/c0ffee1`` was written for agentgym's tests
with two bugs; each instance fixes one. Run from anywhere: ``python make_instances.py``.
"""

import json
from pathlib import Path

from agentgym.simulators.repo.swebench import read_snapshot
from agentgym.simulators.repo.tasks import unified_diff

HERE = Path(__file__).resolve().parent
BASE = read_snapshot(HERE / "repos" / "acme__wordstats" / "c0ffee1")
P2P = [
    "tests/test_counting.py::test_word_counts",
    "tests/test_counting.py::test_word_counts_ignore_case",
    "tests/test_text.py::test_normalize_keeps_apostrophes",
    "tests/test_text.py::test_normalize_lowers_and_strips_punctuation",
    "tests/test_text.py::test_sentences_split_on_end_marks",
]


def changed(path, old, new):
    text = BASE[path]
    assert old in text, (path, old)
    return {**BASE, path: text.replace(old, new, 1)}


def instance(number, problem, fix, tests, f2p):
    return {
        "instance_id": f"acme__wordstats-{number}",
        "repo": "acme/wordstats",
        "base_commit": "c0ffee1",
        "problem_statement": problem,
        "hints_text": "",
        "created_at": "2024-05-01T12:00:00Z",
        "version": "0.3",
        "patch": unified_diff(BASE, fix),
        "test_patch": unified_diff(BASE, tests),
        "FAIL_TO_PASS": json.dumps(f2p),
        "PASS_TO_PASS": json.dumps(P2P),
        "environment_setup_commit": "c0ffee1",
    }


ONE = instance(
    1,
    "sentences() loses the last sentence\n\n`sentences('One. Two')` returns `['One.']`; "
    "I expected `['One.', 'Two']` (text often does not end with a full stop).",
    changed(
        "wordstats/text.py",
        "        pos = match.end()\n    return out\n",
        "        pos = match.end()\n    rest = text[pos:].strip()\n    if rest:\n"
        "        out.append(rest)\n    return out\n",
    ),
    changed(
        "tests/test_text.py",
        '== ["One.", "Two!", "Three?"]\n',
        '== ["One.", "Two!", "Three?"]\n\n\ndef test_last_sentence_without_end_mark():\n'
        '    assert sentences("One. Two") == ["One.", "Two"]\n',
    ),
    ["tests/test_text.py::test_last_sentence_without_end_mark"],
)
TWO = instance(
    2,
    "top_words lists the rarest words first\n\n`top_words('b a b c b a', n=2)` gives "
    "`[('c', 1), ('a', 2)]` but the docstring promises the most frequent first: "
    "`[('b', 3), ('a', 2)]`.",
    changed("wordstats/counting.py", "kv[0]), reverse=True)", "kv[0]))"),
    changed(
        "tests/test_counting.py",
        "from wordstats import word_counts\n",
        "from wordstats import top_words, word_counts\n\n\ndef test_top_words_most_frequent_first():\n"
        '    assert top_words("b a b c b a", n=2) == [("b", 3), ("a", 2)]\n\n\n'
        "def test_top_words_ties_alphabetical():\n"
        '    assert top_words("y x z", n=3) == [("x", 1), ("y", 1), ("z", 1)]\n',
    ),
    [
        "tests/test_counting.py::test_top_words_most_frequent_first",
        "tests/test_counting.py::test_top_words_ties_alphabetical",
    ],
)
MISSING = instance(
    3,
    "Export word counts as XML",
    changed(
        "wordstats/counting.py", '"""Word frequencies."""\n', '"""Word frequencies (XML too)."""\n'
    ),
    changed(
        "tests/test_counting.py",
        "from wordstats import word_counts\n",
        "from lxml import etree\n\nfrom wordstats import word_counts\n\n\ndef test_xml():\n"
        '    assert etree.fromstring("<a/>").tag == "a"\n',
    ),
    ["tests/test_counting.py::test_xml"],
)

if __name__ == "__main__":
    with open(HERE / "instances.jsonl", "w") as fh:
        for row in (ONE, TWO):
            fh.write(json.dumps(row) + "\n")
    with open(HERE / "instances_missing.jsonl", "w") as fh:
        fh.write(json.dumps(MISSING) + "\n")

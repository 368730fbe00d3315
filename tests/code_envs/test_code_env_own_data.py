"""agentgym/CodeTests-v0 on users' HumanEval and MBPP files (issue 36): the canonical solution
earns the outcome, wrong ones do not, tests cannot be faked from the submission's process,
and files of another format are refused in one line."""

from __future__ import annotations

import functools
import gzip
import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest
from agentgym.envs.code.codetests import CodeTestsEnv
from agentgym.envs.code.filetasks import load_task_set
from agentgym.envs.code.readers import TaskFormatError, doctest_asserts, read_tasks
from agentgym.simulators.sandbox._programs_jail import _AgentgymCodec
from agentgym.simulators.sandbox.programs import ProgramError, instrument
from gymnasium.utils.env_checker import check_env as gymnasium_check_env
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgym.error import InvalidConfigError
from agentgym.parsing import render_tool_call
from agentgym.testing import check_env

pytestmark = [pytest.mark.sandbox]

DATA = Path(__file__).resolve().parent.parent / "data"
HUMANEVAL = DATA / "humaneval_sample.jsonl"
MBPP = DATA / "mbpp_sample.jsonl"


def submit(code: str) -> str:
    return render_tool_call("submit", {"code": code})


@pytest.fixture(scope="module")
def cache(tmp_path_factory):  # type: ignore[no-untyped-def]
    return str(tmp_path_factory.mktemp("code-cache"))


def _env(path: Path, cache: str, **kw) -> CodeTestsEnv:  # type: ignore[no-untyped-def]
    return CodeTestsEnv(tasks=str(path), cache_dir=cache, **kw)


def _outcome(env: CodeTestsEnv, task_id: str, code: str) -> tuple[float, bool, str]:
    env.reset(options={"task_id": task_id})
    obs, _, terminated, _, info = env.step(submit(code))
    assert terminated
    return info["reward_components"]["outcome"], info["success"], obs["text"]


# ---- one test per published format -----------------------------------------------------------

WRONG = {
    "HumanEval/0": "def smallest_gap(values):\n    return min(values)\n",
    "HumanEval/1": "def unrotate_letters(word, shift):\n    return word\n",
    "HumanEval/2": "def low_high(numbers):\n    return [min(numbers), max(numbers)]\n",  # a list, not a tuple
    "HumanEval/3": "def has_accent(text):\n    return 'é' in text\n",
    "1": "R = 3\nC = 3\ndef path_cost(grid):\n    return sum(map(sum, grid))\n",
    "2": "def shared_items(a, b):\n    return tuple(set(a) & set(b))[::-1]\n",
    "3": "def circle_area(r):\n    return 3.14 * r * r\n",
    "4": "def count_capitalised(s):\n    return sum(w[:1].isupper() and w[:1].isascii() for w in s.split())\n",
}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "fmt"), [(HUMANEVAL, "humaneval"), (MBPP, "mbpp")], ids=["humaneval", "mbpp"]
)
def test_canonical_solutions_earn_the_outcome_and_wrong_ones_do_not(pool, cache, path, fmt):
    env = _env(path, cache)
    assert env.data is not None and env.data.format == fmt and env.data.skipped == {}
    for task_id in env.task_ids():
        env.reset(options={"task_id": task_id})
        obs, _, terminated, _, info = env.step(env.oracle_action())
        assert terminated and info["success"], (task_id, obs["text"])
        assert info["reward_components"]["outcome"] == 1.0
        outcome, success, text = _outcome(env, task_id, WRONG[task_id])
        assert not success and outcome < 1.0, (task_id, text)
    env.close()


@pytest.mark.parametrize(
    ("path", "field", "name"),
    [(HUMANEVAL, "entry_point", "HumanEval JSONL"), (MBPP, "test_list", "MBPP JSONL")],
    ids=["humaneval", "mbpp"],
)
def test_a_file_not_in_its_format_is_refused_in_one_line(path, field, name, tmp_path):
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    del first[field]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    with pytest.raises(TaskFormatError) as err:
        read_tasks(broken)
    assert "\n" not in str(err.value)
    assert f"not {name}: record 1 has no field {field!r}" in str(err.value)
    with pytest.raises(InvalidConfigError, match=f"not {name}"):
        CodeTestsEnv(tasks=str(broken))


def test_other_files_are_refused_in_one_line(tmp_path):
    cases = {
        "questions.json": (DATA / "hotpotqa_sample.json").read_bytes(),
        "corpus.jsonl": (DATA / "flashrag_corpus_sample.jsonl").read_bytes(),
        "junk.jsonl": b"not json at all\n",
        "empty.jsonl": b"\n\n",
        "cut.jsonl.gz": gzip.compress(HUMANEVAL.read_bytes())[:100],
    }
    needles = {
        "questions.json": "not HumanEval JSONL: record 1 has no field 'task_id'",
        "corpus.jsonl": "not HumanEval JSONL: record 1 has no field 'task_id'",
        "junk.jsonl": "but line 1 is not JSON",
        "empty.jsonl": "expected at least one task, found none",
        "cut.jsonl.gz": "not a task file: a damaged gzip file",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(TaskFormatError) as err:
            read_tasks(tmp_path / name)
        assert "\n" not in str(err.value) and needles[name] in str(err.value), str(err.value)


def test_each_format_reads_the_fields_it_documents(tmp_path):
    humaneval = {t.id: t for t in read_tasks(HUMANEVAL).tasks}
    gap = humaneval["HumanEval/0"]
    assert gap.entry_point == "smallest_gap" and gap.solution.startswith("from typing import List")
    assert gap.shown_tests == (
        "assert smallest_gap([1.0, 4.0, 4.5]) == 0.5",
        "assert smallest_gap([10.0, 2.0, 7.0, 3.0]) == 1.0",
    )
    assert gap.hidden_program.endswith("check(smallest_gap)\n")
    mbpp = {t.id: t for t in read_tasks(MBPP).tasks}
    assert "\r" not in mbpp["1"].solution and mbpp["1"].entry_point == "path_cost"
    assert mbpp["2"].entry_point == "shared_items"  # the first call of the test is set()
    assert mbpp["2"].hidden_program.count("assert") == 4  # test_list + challenge_test_list
    assert mbpp["3"].public_program.startswith("import math\nTOLERANCE = 1e-9\n")  # setup code
    prompt = (
        'def f(xs):\n    """\n    >>> round(f([1, 2]), 2) # a comment, as HumanEval has\n    -0.5\n'
        "    >>> f([1]) < 3\n    True\n    >>> print(f([]))\n    nothing to eval\n"
        '    >>> g(1)\n    2\n    """\n'
    )
    assert doctest_asserts(prompt, "f") == [
        "assert round(f([1, 2]), 2) == -0.5",
        "assert (f([1]) < 3) == True",
    ]
    packed = tmp_path / "HumanEval.jsonl.gz"  # as HumanEval is published
    packed.write_bytes(gzip.compress(HUMANEVAL.read_bytes()))
    assert [t.id for t in read_tasks(packed).tasks] == list(humaneval)


def test_malformed_records_and_broken_references_are_skipped_and_counted(pool, tmp_path):
    lines = MBPP.read_text(encoding="utf-8").splitlines()
    wrong_reference = json.loads(lines[1])
    wrong_reference["task_id"] = 20
    wrong_reference["code"] = "def shared_items(a, b):\n  return ()"
    no_parse = json.loads(lines[2])
    no_parse["task_id"] = 21
    no_parse["code"] = "def circle_area(r) return r"
    no_tests = json.loads(lines[3])
    no_tests["task_id"], no_tests["test_list"] = 22, []
    path = tmp_path / "mbpp.jsonl"
    records = [lines[0], "{oops", lines[0], json.dumps(no_parse), json.dumps(no_tests)]
    path.write_text("\n".join([*records, json.dumps(wrong_reference)]) + "\n")
    tasks = load_task_set(path, pool, cache_dir=tmp_path)
    assert list(tasks.tasks) == ["1"]
    assert tasks.skipped == {
        "malformed": 3,
        "duplicate id": 1,
        "the reference solution fails its own tests": 1,
    }
    cached = json.loads(next((tmp_path / "code").glob("*.json")).read_text())
    assert set(cached) == {"1", "20"}  # the checks are kept on disk for the next load


def test_public_tests_are_the_examples_the_reference_satisfies(pool, cache):
    env = _env(HUMANEVAL, cache)
    obs, info = env.reset(options={"task_id": "HumanEval/2"})
    assert "Public tests:\n  assert low_high([3, 9, 1]) == (1, 9)\nYour submission" in obs["text"]
    assert "assert low_high([4]) == (4, 5)\n" not in obs["text"].split("Public tests:")[1]
    assert info["data"]["tasks_sha256"] == env.data_digests()["tasks_sha256"]
    obs, *_ = env.step(render_tool_call("run_tests", {"code": WRONG["HumanEval/2"]}))
    assert obs["text"] == (
        "[run_tests] 0/1 public tests passed\nassert low_high([3, 9, 1]) == (1, 9): failed; "
        "low_high([3, 9, 1]) returned [1, 9]"
    )
    env.close()


HACKS = {
    "equal to everything": "class A:\n    def __eq__(self, other):\n        return True\n"
    "def low_high(numbers):\n    return A()\n",
    "exit before the tests": "import sys\ndef low_high(numbers):\n    return (0, 0)\nsys.exit(0)\n",
    "print passed": "print('4/4 hidden tests passed')\ndef low_high(numbers):\n    return None\n",
    "patch the builtins": "import builtins\nbuiltins.min = lambda *a: 0\nbuiltins.max = lambda *a: 0\n"
    "def low_high(numbers):\n    return (0, 0)\n",
    "forge the result pipe": "import os\nfor i in range(8):\n    os.write(3, ('{\"i\": %d, \"ok\": true, \"value\": \"true\"}\\n' % i).encode())\n"
    "def low_high(numbers):\n    return (0, 0)\n",
    "tuple subclass": "class T(tuple):\n    def __eq__(self, other):\n        return True\n"
    "def low_high(numbers):\n    return T((0, 0))\n",
}  # fmt: skip


@pytest.mark.parametrize("hack", list(HACKS))
def test_the_hidden_check_cannot_be_faked_from_the_submission(pool, cache, hack):
    env = _env(HUMANEVAL, cache)
    outcome, success, text = _outcome(env, "HumanEval/2", HACKS[hack])
    assert outcome == 0.0 and not success, text
    env.close()


def test_loaded_envs_pass_the_conformance_suites(pool, cache):
    factory = functools.partial(gym.make, "agentgym/CodeTests-v0", tasks=str(MBPP), cache_dir=cache)
    env = factory()
    try:
        check_env(env, factory=factory)
        gymnasium_check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


def test_the_file_is_one_split_and_a_digest_pins_it(pool, cache, tmp_path):
    env = _env(MBPP, cache, split="test")
    assert env.splits == ("test",) and env.task_ids("train") == () and len(env.task_ids()) == 4
    digest = env.data_digests()["tasks_sha256"]
    other = tmp_path / "mbpp.jsonl"
    shutil.copy(MBPP, other)
    _env(other, cache, tasks_sha256=digest).close()
    other.write_text(MBPP.read_text(encoding="utf-8").replace("total cost", "whole cost"))
    with pytest.raises(InvalidConfigError, match=r"has sha256 .* different file"):
        _env(other, cache, tasks_sha256=digest)
    with pytest.raises(InvalidConfigError, match="goes with tasks="):
        CodeTestsEnv(tasks_sha256=digest)
    env.close()


def test_values_cross_the_jail_with_their_exact_types():
    values = [
        None, True, 3, -(10**30), 0.1, float("inf"), -0.0, 2 + 3j, b"\x00\xff", "é\udcff",
        [1, (2, 3)], (), {1: "a", (2, 3): [frozenset({4})]}, {5, 6}, [[[]]],
    ]  # fmt: skip
    for value in values:
        back = _AgentgymCodec.decode(_AgentgymCodec.encode(value))
        assert back == value and type(back) is type(value), value
    assert repr(_AgentgymCodec.decode(_AgentgymCodec.encode(-0.0))) == "-0.0"
    for bad in (object(), [1, {2: object()}], type("L", (list,), {})()):
        with pytest.raises(TypeError, match="is not plain data"):
            _AgentgymCodec.encode(bad)
    deep: list = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(ValueError, match="nested too deeply"):
        _AgentgymCodec.encode(deep)


def test_asserts_become_verdict_reports():
    program = instrument(
        "def check(c):\n    for x in range(3):\n        assert c(x) == x, 'msg'\ncheck(f)\n"
    )
    assert program.asserts == ("assert c(x) == x, 'msg'",)
    assert (
        "_agentgym_assert(0, lambda: c(x) == x)" in program.source
        and "assert " not in program.source
    )
    with pytest.raises(ProgramError, match="no assert"):
        instrument("x = 1")
    with pytest.raises(ProgramError, match="do not parse"):
        instrument("assert (")


NASTY_CODE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["\udcff", "\x00", "def low_high(", "raise SystemExit", "import os; os._exit(3)",
                     "def low_high(n):\n    while True: pass\n", "x" * 5000]),
)  # fmt: skip


@settings(max_examples=12, deadline=None, derandomize=True, database=None)
@given(code=NASTY_CODE, tool=st.sampled_from(["run_tests", "submit"]))
def test_any_submission_string_gives_an_observation_never_an_exception(pool, cache, code, tool):
    env = _env(HUMANEVAL, cache, test_timeout=2.0)
    env.reset(options={"task_id": "HumanEval/2"})
    obs, _, terminated, _, info = env.step(render_tool_call(tool, {"code": code}))
    assert env.observation_space.contains(obs) and info["action_valid"]
    assert terminated == (tool == "submit") and not info.get("success", False)
    env.close()


@pytest.mark.parametrize(
    "name", ["agentgym.simulators.sandbox.programs", "agentgym.envs.code.readers"]
)
def test_docstring_examples(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def _humaneval_record(task_id: str, body: str, test: str) -> str:
    prompt = "def f(x, y=None):\n"
    return json.dumps(
        {
            "task_id": task_id,
            "prompt": prompt,
            "canonical_solution": body,
            "test": test,
            "entry_point": "f",
        }
    )


def test_tasks_the_grader_cannot_use_are_skipped_with_the_reason(pool, tmp_path):
    check = "def check(candidate):\n"
    records = [
        _humaneval_record("ok", "    return x + 1\n", check + "    assert candidate(1) == 2\n"),
        _humaneval_record(
            "args", "    return x(1)\n", check + "    assert candidate(lambda v: v) == 1\n"
        ),
        _humaneval_record(
            "result", "    return object()\n", check + "    assert candidate(1) is not None\n"
        ),
        _humaneval_record(
            "error",
            "    return x\n",
            check + "    assert candidate(1) == 1\n    raise RuntimeError('broke')\n",
        ),
        _humaneval_record(
            "none", "    return x\n", check + "    if candidate(1) == 0:\n        assert False\n"
        ),
        _humaneval_record(
            "kwargs",
            "    return (x, y)\n",
            check + "    assert candidate(1, y=(2,)) == (1, (2,))\n",
        ),
    ]
    path = tmp_path / "humaneval.jsonl"
    path.write_text("\n".join(records) + "\n")
    tasks = load_task_set(path, pool, cache_dir=tmp_path)
    assert list(tasks.tasks) == ["ok", "kwargs"]
    assert tasks.skipped == {
        "a call's arguments are not plain data (TypeError: a value of type function is not plain data)": 1,
        "a call's result is not plain data (TypeError: a value of type object is not plain data)": 1,
        "the tests stopped with RuntimeError: broke": 1,
        "no assert ran": 1,
    }
    env = CodeTestsEnv(tasks=str(path), cache_dir=str(tmp_path))
    assert _outcome(env, "kwargs", "def f(x, y=None):\n    return (x, y)\n")[:2] == (1.0, True)
    assert _outcome(env, "kwargs", "def f(x, y=None):\n    return (x, list(y))\n")[:2] == (
        0.0,
        False,
    )
    env.close()

"""The base env options (issue 33): one typed object, taken by ``AgentEnv``, the same on every
single-agent id that ``agentgym list`` shows.

Every id must accept ``split``, ``reward_weights``, ``max_turns``, ``render_mode``,
``max_text_length`` and ``answer_tool`` through ``gym.make`` and give each the meaning
:class:`agentgym.core.EnvOptions` documents; a keyword no class of the env takes is a typed
error that names it, a close match and the valid options.
"""

from __future__ import annotations

import dataclasses
import doctest
import inspect
import json
from typing import Any

import gymnasium as gym
import pytest

import agentgym
import agentgym.env_options
from agentgym.cli import main
from agentgym.core import AgentEnv, BaseOptions, EnvOptions
from agentgym.env_options import BASE_OPTION_NAMES
from agentgym.error import InvalidConfigError, UnknownOptionError
from tests.fake_envs import CounterEnv

RECORDS = agentgym.list_envs(multi_agent=False)
IDS = [r.id for r in RECORDS]
#: Ids whose default mode drives a real Chromium; their text twins (same class, same base
#: code) play the episodes below, and these are checked where the env is built.
BROWSER = {r.id for r in RECORDS if r.family == "web" and r.kwargs.get("mode") != "text"}
PLAYED = [i for i in IDS if i not in BROWSER]
HELLO = "hello"  # no tool call and no answer: an invalid turn on every env


def _make(env_id: str, **kwargs: Any) -> Any:
    return gym.make(env_id, disable_env_checker=True, **kwargs)


def test_the_ids_are_every_single_agent_id_agentgym_list_shows(capsys):
    assert main(["list", "--json"]) == 0
    listed = [r["id"] for r in json.loads(capsys.readouterr().out) if not r["multi_agent"]]
    assert sorted(listed) == sorted(IDS) and len(IDS) >= 37
    assert BROWSER and len(PLAYED) + len(BROWSER) == len(IDS)


@pytest.mark.parametrize("env_id", IDS)
def test_every_base_option_is_accepted_and_set_the_same_way(env_id):
    cls = type(_make(env_id).unwrapped)
    registered = agentgym.get_record(env_id).kwargs  # Sokoban's sizes fix their own budgets
    fixed = {k: v for k, v in registered.items() if k in BASE_OPTION_NAMES}
    for name, value in {
        "split": "test",
        "reward_weights": {"format": 0.5},
        "max_turns": 2,
        "render_mode": "ansi",
        "max_text_length": 77,
        "answer_tool": False,
    }.items():
        env = _make(env_id, **{name: value})
        core = env.unwrapped
        assert core.env_options == EnvOptions(**{**fixed, name: value}), name
        env.close()
    core = _make(env_id, split="test").unwrapped
    assert core.split == "test"
    core = _make(env_id, reward_weights={"format": 0.5}).unwrapped
    assert core.reward_weights == {**cls.default_reward_weights, "format": 0.5}
    assert list(core.reward_weights) == list(cls.default_reward_weights)  # the summing order
    assert _make(env_id, max_turns=2).unwrapped.max_turns == 2  # over the registered budget
    assert _make(env_id, render_mode="ansi").unwrapped.render_mode == "ansi"
    env = _make(env_id, max_text_length=77)
    assert env.unwrapped.max_text_length == 77
    assert env.observation_space["text"].max_length == 77


@pytest.mark.parametrize("env_id", IDS)
def test_answer_tool_is_offered_exactly_where_the_episode_ends_with_an_answer(env_id):
    cls = type(_make(env_id).unwrapped)
    if cls.answers_in_text:
        env = _make(env_id, answer_tool=True)
        tools = env.unwrapped.offered_tools
        assert env.unwrapped.answer_tool is True and tools[-1].name == "answer"
        assert [t.name for t in tools[:-1]] == [t.name for t in env.unwrapped.tools]
    else:
        with pytest.raises(InvalidConfigError, match=r"answer_tool=True needs an env whose"):
            _make(env_id, answer_tool=True)


@pytest.mark.filterwarnings("ignore:.*render_mode='human' that is not in the possible")
@pytest.mark.parametrize("env_id", IDS)
def test_values_the_env_cannot_use_name_what_it_has(env_id):
    cls = type(_make(env_id).unwrapped)
    components = sorted(cls.default_reward_weights)
    with pytest.raises(InvalidConfigError, match=rf"no reward component 'nope'.*{components!r}"):
        _make(env_id, reward_weights={"nope": 1.0})
    with pytest.raises(InvalidConfigError, match=r"split must be one of .*'nowhere'"):
        _make(env_id, split="nowhere")
    with pytest.raises(InvalidConfigError, match=r"render_mode 'human' is not supported"):
        _make(env_id, render_mode="human")
    with pytest.raises(InvalidConfigError, match=r"max_turns must be None or a whole number"):
        _make(env_id, max_turns=-1)


@pytest.mark.parametrize("env_id", IDS)
def test_an_unknown_keyword_is_a_typed_error_with_a_close_match_and_the_valid_ones(env_id):
    with pytest.raises(UnknownOptionError) as caught:
        _make(env_id, max_turn=3)
    error = caught.value
    cls = type(_make(env_id).unwrapped)
    assert isinstance(error, InvalidConfigError)  # as every other bad constructor argument
    assert error.unknown == ["max_turn"] and error.accepted == list(cls.option_names())
    assert set(BASE_OPTION_NAMES) <= set(error.accepted)
    message = str(error)
    assert message.startswith(f"{cls.__name__} takes no option 'max_turn' ")
    assert "(did you mean 'max_turns'?)" in message
    assert f"Its options: {', '.join(cls.option_names())}." in message


@pytest.mark.parametrize("env_id", PLAYED)
def test_the_options_act_the_same_on_every_id(env_id):
    plain = _make(env_id)
    obs, info = plain.reset(seed=0)
    full_text, task = obs["text"], info["task_id"]
    _, plain_reward, *plain_flags, plain_info = plain.step(HELLO)
    assert plain_flags == [False, False]  # the env's own budget is longer than one turn
    weight = plain.unwrapped.reward_weights["format"] + 0.25

    # reward_weights: the same turn, re-weighted
    env = _make(env_id, reward_weights={"format": weight})
    _, info = env.reset(seed=0)
    assert info["task_id"] == task and info["reward_weights"]["format"] == weight
    _, reward, *_, info = env.step(HELLO)
    components = info["reward_components"]
    assert components == plain_info["reward_components"] and components["format"] != 0.0
    assert reward == pytest.approx(plain_reward + 0.25 * components["format"])

    # max_turns: truncated after exactly that many turns, whatever the env's own budget
    env = _make(env_id, max_turns=2, render_mode="ansi")
    env.reset(seed=0)
    assert env.step(HELLO)[2:4] == (False, False)
    obs, _, terminated, truncated, info = env.step(HELLO)
    assert (terminated, truncated, info["success"]) == (False, True, False)
    assert env.render() == obs["text"]  # render_mode="ansi": the last observation's text

    # max_text_length: the text is cut to the limit, saying how much was left out
    limit = min(60, len(full_text) - 1)
    assert limit >= 40, full_text
    env = _make(env_id, max_text_length=limit)
    obs, _ = env.reset(seed=0)
    assert len(obs["text"]) == limit and obs["text"][:4] == full_text[:4]
    assert obs["text"].endswith(f"[... truncated: {len(full_text) - limit} more characters]")

    # split: the held-out task set
    env = _make(env_id, split="test")
    _, info = env.reset(seed=0)
    core = env.unwrapped
    assert info["task_id"] in core.task_ids("test")
    assert info["task_id"] not in core.task_ids("train")
    for e in (plain, env):
        e.close()


# ---- the one object and its checks --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("split", 1, "split must be a str, got 1."),
        ("reward_weights", [("format", 1.0)], "reward_weights must be a mapping"),
        ("reward_weights", {"format": "1"}, "finite number; got 'format': '1'."),
        ("reward_weights", {"format": float("nan")}, "finite number; got 'format': nan."),
        ("reward_weights", {"format": True}, "finite number; got 'format': True."),
        ("reward_weights", {1: 1.0}, "finite number; got 1: 1.0."),
        ("max_turns", -1, "max_turns must be None or a whole number >= 0, got -1."),
        ("max_turns", 2.5, "max_turns must be None or a whole number >= 0, got 2.5."),
        ("max_turns", True, "max_turns must be None or a whole number >= 0, got True."),
        ("render_mode", 3, "render_mode must be None or a str, got 3."),
        ("max_text_length", 0, "max_text_length must be a whole number >= 1, got 0."),
        ("max_text_length", None, "max_text_length must be a whole number >= 1, got None."),
        ("answer_tool", "yes", "answer_tool must be True or False, got 'yes'."),
    ],
)
def test_env_options_refuses_values_no_env_can_use(name, value, problem):
    with pytest.raises(InvalidConfigError) as caught:
        EnvOptions(**{name: value})
    assert problem in str(caught.value)


def test_the_smallest_usable_values_are_kept():
    options = EnvOptions(max_turns=0, max_text_length=1, reward_weights={"format": 0})
    assert (options.max_turns, options.max_text_length) == (0, 1)
    assert options.reward_weights == {"format": 0.0}
    assert type(options.reward_weights["format"]) is float


def test_env_options_is_frozen_and_keeps_its_own_copy_of_the_weights():
    weights = {"format": 0.5}
    env = CounterEnv(reward_weights=weights)
    weights["format"] = 9.0
    assert env.env_options.reward_weights == {"format": 0.5}
    assert env.reward_weights["format"] == 0.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        env.env_options.max_turns = 3  # type: ignore[misc]


def test_a_new_env_has_no_task_and_no_turns_until_reset():
    env = CounterEnv(max_turns=2)
    assert (env.task_id, env.turn, env.max_turns) == (None, 0, 2)
    env.reset(seed=0)
    env.step("x")
    assert env.turn == 1 and env.task_id is not None


def test_the_names_and_defaults_have_one_source():
    fields = {f.name: f.default for f in dataclasses.fields(EnvOptions)}
    assert tuple(fields) == BASE_OPTION_NAMES
    assert set(BaseOptions.__optional_keys__) == set(fields)
    params = inspect.signature(AgentEnv.__init__).parameters.values()
    keyword = {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY}
    assert keyword == fields
    assert [p.kind for p in params][-1] is inspect.Parameter.VAR_KEYWORD  # the unknown ones


def test_web_options_are_web_envs_own_keywords_and_the_base_ones():
    from agentgym.envs.web.base import WebEnv, WebOptions

    own = inspect.signature(WebEnv.__init__).parameters.values()
    own_names = {p.name for p in own if p.kind is p.KEYWORD_ONLY}
    assert set(WebOptions.__optional_keys__) == own_names | set(BASE_OPTION_NAMES)


class _Forwards(CounterEnv):
    def __init__(self, *, size: int = 3, **base: Any):
        self.size = size
        super().__init__(**base)


class _Explicit(CounterEnv):
    def __init__(self, *, size: int = 3, split: str = "train"):
        super().__init__(split=split)


def test_option_names_follow_each_class_that_passes_options_on():
    assert _Forwards.option_names() == tuple(sorted({"size", *BASE_OPTION_NAMES}))
    assert CounterEnv.option_names() == tuple(sorted(BASE_OPTION_NAMES))
    assert _Explicit.option_names() == ("size", "split")  # it passes nothing else on
    with pytest.raises(UnknownOptionError, match=r"'sise' \(did you mean 'size'\?\)"):
        _Forwards(sise=4)
    with pytest.raises(UnknownOptionError, match=r"takes no option 'a', 'zzz'\. Its options"):
        _Forwards(zzz=1, a=2)  # sorted; no close match, no hint


def test_an_env_own_keyword_gets_its_close_match():
    with pytest.raises(UnknownOptionError, match=r"'hieght' \(did you mean 'height'\?\)"):
        _make("agentgym/Sokoban-Tiny-v0", hieght=5)
    with pytest.raises(UnknownOptionError, match=r"'mdoe' \(did you mean 'mode'\?\)"):
        _make("agentgym/WebShopText-v0", mdoe="text")


def test_the_cli_names_an_unknown_keyword_before_building_the_env(capsys):
    code = main(
        ["run", "agentgym/WebTodoText-v0", "--env-kwargs", '{"knids": ["add"]}',
         "--episodes", "1", "--policy", "random", "--quiet"]
    )  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err
    assert "takes no keyword 'knids'" in err and "kinds" in err and "obs_chars" in err


def test_the_module_examples_run():
    result = doctest.testmod(agentgym.env_options)
    assert result.attempted > 0 and result.failed == 0

"""Demonstrations: record them with a scripted policy, read them back as training steps.

The pipeline the field uses for LLM agents is demonstrations, then RL: clone a
demonstrator into a starting checkpoint (:mod:`agentgym.algos.sft`), then improve it with
GRPO / GiGPO / Tree-GRPO. Every agentgym env has a privileged oracle; wrapped in
:class:`~agentgym.agents.NoisyPolicy` it gives *imperfect* demonstrations (a fraction
``epsilon`` of random admissible actions), so the clone also sees mistakes and what follows
them. Demonstrations are ordinary ``.agtr`` trajectory files (``agentgym view`` shows them).

:func:`demo_steps` rebuilds, for every recorded step, the exact :class:`PolicyInput` the
training rollouts would have given the policy at that point (system prompt, first
observation, the last ``history_turns`` turn pairs, the merged info with its admissible
actions), paired with the action the demonstrator took.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.error import InvalidConfigError
from agentgym.registry import get_record
from agentgym.rollout.steps import Chat
from agentgym.wrappers.chat import observation_message


@dataclass
class DemoStep:
    """One demonstrated step: what the policy would read, and the action taken."""

    input: PolicyInput
    action: str
    episode_id: str
    success: bool
    """Whether the episode this step belongs to succeeded."""


@dataclass
class DemoStats:
    """What :func:`record_demos` wrote."""

    path: str
    episodes: int
    steps: int
    success: float


def record_demos(
    env_id: str,
    out: str | os.PathLike[str],
    *,
    episodes: int = 64,
    epsilon: float = 0.2,
    policy: Policy | None = None,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    num_envs: int = 8,
    progress: bool = False,
    demonstrator: str = "oracle",
) -> DemoStats:
    """Play ``episodes`` TRAIN-split episodes with a demonstrator and record them to ``out``.

    The demonstrator is ``policy`` if given, else ``demonstrator`` (``"oracle"``: the env's
    privileged oracle; ``"observer"``: the env family's observation-only demonstrator, see
    :func:`observer_for`) with probability ``epsilon`` of a random admissible action.
    Episode ``k`` is reset with seed ``seed + k``. The demonstrator reads the whole
    conversation (an observer needs everything it has seen).
    """
    from agentgym.agents.scripted import NoisyPolicy, OraclePolicy
    from agentgym.episodes import play
    from agentgym.trajectory import Recorder

    if episodes < 1:
        raise InvalidConfigError(f"episodes must be >= 1, got {episodes}.")
    record = get_record(env_id)
    kwargs = dict(env_kwargs or {})
    if kwargs.get("split", "train") != "train":
        raise InvalidConfigError(
            f"demonstrations come from the train split; got split={kwargs['split']!r}. "
            "Held-out evaluation uses the test split, so demos from it would leak."
        )
    if policy is None:
        base: Policy = OraclePolicy() if demonstrator == "oracle" else observer_for(record.id)
        policy = NoisyPolicy(base, epsilon, seed)
    base_name = type(getattr(policy, "base", policy)).__name__
    extra = {"demonstrator": base_name, "epsilon": epsilon, "seed": seed}
    with Recorder(out, env_id=record.id, header_extra=extra) as rec:
        callbacks: dict[str, Any] = rec.play_callbacks(record.id, seed=seed)
        summaries = play(
            record.id,
            policy,
            episodes=episodes,
            seed=seed,
            env_kwargs=kwargs,
            num_envs=num_envs,
            progress=progress,
            history_turns=None,
            **callbacks,
        )
    steps = sum(s.turns for s in summaries)
    success = sum(s.success for s in summaries) / len(summaries)
    return DemoStats(str(out), len(summaries), steps, success)


def demo_steps(
    path: str | os.PathLike[str],
    *,
    history_turns: int | None = 1,
    only_success: bool = False,
) -> list[DemoStep]:
    """Every step of every complete episode in ``path``, as training inputs and actions."""
    import agentgym.trajectory as trj

    out: list[DemoStep] = []
    with trj.open(path) as reader:
        for ep in reader.episodes():
            if ep.start is None or not ep.complete:
                continue
            if only_success and not ep.success:
                continue
            start = ep.start
            head = []
            if start.get("system_prompt"):
                head.append({"role": "system", "content": start["system_prompt"]})
            head.append(observation_message(_obs(start.get("observation")), "user"))
            chat = Chat(head)
            info: dict[str, Any] = dict(start.get("info") or {})
            for frame in ep.steps:
                action = str(frame.get("action", ""))
                inp = PolicyInput(messages=chat.messages(history_turns), info=dict(info))
                out.append(DemoStep(inp, action, ep.episode_id, ep.success))
                chat.turns.append(
                    (
                        {"role": "assistant", "content": action},
                        observation_message(_obs(frame.get("observation")), "user"),
                    )
                )
                step_info = dict(frame.get("info") or {})
                info = {**info, **step_info}
                if "admissible_actions" not in step_info:
                    info.pop("admissible_actions", None)
    if not out:
        raise InvalidConfigError(
            f"{path} holds no complete demonstration episodes"
            + (" that succeeded" if only_success else "")
            + "; record some with `agentgym demos ENV --episodes N --out FILE.agtr`."
        )
    return out


def _obs(obs: Any) -> dict[str, Any]:
    """A recorded observation as the dict ``observation_message`` takes (images dropped)."""
    if isinstance(obs, Mapping):
        return {"text": str(obs.get("text", "")), "images": []}
    return {"text": "" if obs is None else str(obs), "images": []}


# ---- observation-only demonstrators ------------------------------------------------------------


_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _text(message: Mapping[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return str(content)


def _command(action: str) -> str:
    """The ``command`` argument of a household tool call (the text itself otherwise)."""
    bodies = _TOOL_CALL.findall(action)
    if len(bodies) == 1:
        try:
            call = json.loads(bodies[0])
            if call.get("name") == "command":
                return str(call["arguments"]["command"])
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    return action


class HouseholdExplorerPolicy:
    """:class:`~agentgym.simulators.household.explorer.Explorer` as a policy: it reads the
    conversation and the admissible commands only, never ``PolicyInput.env``."""

    def __init__(self, order: str = "likely"):
        from agentgym.simulators.household.explorer import Explorer

        self.explorer = Explorer(order)

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        out = []
        for inp in inputs:
            msgs = [m for m in inp.messages if m.get("role") != "system"]
            texts = [_text(m) for m in msgs if m.get("role") == "user"]
            commands = [_command(_text(m)) for m in msgs if m.get("role") == "assistant"]
            actions = list(inp.info.get("admissible_actions") or [])
            by_command = {_command(a): a for a in actions}
            command = self.explorer.decide(texts, commands, list(by_command))
            out.append(Generation(text=by_command.get(command, command)))
        return out


_ANSWER = re.compile(r"^<answer>(.*)</answer>$", re.DOTALL)


def _call(action: str) -> tuple[str, str] | None:
    """``(tool, its one argument)`` of a single tool call, ``("answer", text)`` of an
    answer; None for anything else."""
    m = _ANSWER.match(action.strip())
    if m:
        return ("answer", m.group(1))
    bodies = _TOOL_CALL.findall(action)
    if len(bodies) != 1:
        return None
    try:
        call = json.loads(bodies[0])
        args = list(call["arguments"].values())
        return (str(call["name"]), str(args[0])) if len(args) == 1 else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


class SearchReaderPolicy:
    """:class:`~agentgym.simulators.search.reader_demo.Reader` as a policy: it reads the
    question, what its actions returned and the admissible actions, never ``.env``."""

    def __init__(self) -> None:
        from agentgym.simulators.search.reader_demo import Reader

        self.reader = Reader()

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        from agentgym.simulators.search.reader_demo import Options

        out = []
        for inp in inputs:
            msgs = [m for m in inp.messages if m.get("role") != "system"]
            users = [_text(m) for m in msgs if m.get("role") == "user"]
            first = users[0] if users else ""
            question = first.split("\n", 1)[0].removeprefix("Question: ")
            calls = [_call(_text(m)) for m in msgs if m.get("role") == "assistant"]
            searched = any(c is not None and c[0] == "search" for c in calls)
            actions = list(inp.info.get("admissible_actions") or [])
            by_call = {c: a for a in actions if (c := _call(a)) is not None}
            kinds = {k: tuple(arg for kind, arg in by_call if kind == k) for k in
                     ("search", "open", "answer")}  # fmt: skip
            options = Options(kinds["search"], kinds["open"], kinds["answer"])
            choice = self.reader.decide(question, users[1:], options, searched)
            out.append(Generation(text=by_call.get(choice, f"<answer>{choice[1]}</answer>")))
        return out


#: Env id -> the observation-only demonstrator of its family (a callable giving a policy).
OBSERVERS: dict[str, Any] = {
    "agentgym/Household-v0": HouseholdExplorerPolicy,
    "agentgym/SearchQA-v0": SearchReaderPolicy,
}


def observer_for(env_id: str) -> Policy:
    """The observation-only demonstrator of ``env_id`` (a typed error where there is none)."""
    record = get_record(env_id)
    make = OBSERVERS.get(record.id)
    if make is None:
        raise InvalidConfigError(
            f"no observation-only demonstrator for {record.id}; there is one for "
            f"{sorted(OBSERVERS)}. Use demonstrator='oracle'."
        )
    policy: Policy = make()
    return policy


def demo_texts(path: str | os.PathLike[str]) -> list[list[str]]:
    """Per recorded episode, the texts a policy reads and chooses among: observations and
    admissible actions (for :func:`agentgym.agents.wordmodel.build_vocabulary`)."""
    from agentgym.agents.wordmodel import action_view

    out = []
    for steps in _episodes(demo_steps(path, history_turns=0)):
        texts = [_text(m) for m in steps[0].input.messages if m.get("role") != "system"]
        for st in steps:
            texts += [action_view(a) for a in st.input.info.get("admissible_actions") or []]
            texts += [_text(m) for m in st.input.messages[-1:] if m.get("role") == "user"]
        out.append(texts)
    return out


def relabel(steps: Sequence[DemoStep], env_id: str, path: str | os.PathLike[str]) -> list[DemoStep]:
    """``steps`` with each action replaced by the observation-only demonstrator's choice at
    that step. The demonstrator reads the whole episode, so the steps are rebuilt from
    ``path`` with full history for it; the returned steps keep their own inputs."""
    observer = observer_for(env_id)
    full = demo_steps(path, history_turns=None)
    if len(full) != len(steps):
        # only_success dropped episodes: match the steps by episode and position
        by_key = {(s.episode_id, _step_index(full, i)): s for i, s in enumerate(full)}
        full = [by_key[(s.episode_id, _step_index(steps, i))] for i, s in enumerate(steps)]
    labels = [g.text for g in observer.act([s.input for s in full])]
    return [DemoStep(s.input, a, s.episode_id, s.success) for s, a in zip(steps, labels)]


def _step_index(steps: Sequence[DemoStep], i: int) -> int:
    """Position of ``steps[i]`` within its episode."""
    k = 0
    while i - k - 1 >= 0 and steps[i - k - 1].episode_id == steps[i].episode_id:
        k += 1
    return k


def random_texts(
    env_id: str, env_kwargs: Mapping[str, Any], *, episodes: int = 64, seed: int = 0
) -> list[list[str]]:
    """Per episode of a random admissible policy on the TRAIN split, the texts a policy
    reads and chooses among (observations and admissible actions)."""
    import tempfile
    from pathlib import Path

    from agentgym.agents.scripted import RandomPolicy

    kwargs = {k: v for k, v in dict(env_kwargs).items() if k != "split"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "random.agtr"
        record_demos(env_id, out, episodes=episodes, policy=RandomPolicy(seed), seed=seed,
                     env_kwargs=kwargs)  # fmt: skip
        return demo_texts(out)


def _episodes(steps: Sequence[DemoStep]) -> list[list[DemoStep]]:
    grouped: dict[str, list[DemoStep]] = {}
    for st in steps:
        grouped.setdefault(st.episode_id, []).append(st)
    return list(grouped.values())

"""The agentgym contract: ``AgentEnv``, the base class of every single-agent env.

One turn of an LLM agent is one ``step``:

* **action** — ``str``, the model's raw output for the turn. The env parses it with the
  suite's one parser (:mod:`agentgym.parsing`) against the tools it declares. No string makes
  an env raise: a bad one comes back as an observation explaining the problem, with
  ``info["action_valid"] = False`` and a negative ``format`` reward component.
* **observation** — ``{"text": str, "images": tuple[np.ndarray, ...]}``. ``text`` is only what
  is *new* since the last step (tool output, the page, the user's reply); keeping the history
  is a wrapper's job (:class:`agentgym.wrappers.ChatHistory`). Images are HxWx3 ``uint8``.
* **reward** — always the weighted sum of named components, reported in
  ``info["reward_components"]``; ``gym.make(id, reward_weights={...})`` re-weights them.
  Reward never appears in observation text.

Subclasses implement a small template (see :class:`AgentEnv`): a task set, ``_reset``,
``_step`` and ``state_key``; the base class does task selection, parsing, reward summation,
the info keys, turn budgets and a replay-based ``snapshot``/``restore``. It also takes the
options every env has (:class:`~agentgym.env_options.EnvOptions`: ``split``,
``reward_weights``, ``max_turns``, ``render_mode``, ``max_text_length``, ``answer_tool``), so
they work the same on every id.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Never

import gymnasium as gym
import numpy as np

from agentgym.env_options import BASE_OPTION_NAMES, BaseOptions, EnvOptions
from agentgym.error import InvalidConfigError, UnknownOptionError, UnknownTaskError
from agentgym.parsing import (
    ANSWER_TOOL,
    ANSWER_TOOL_NOTE,
    ParsedAction,
    Tool,
    fold_answer_calls,
    parse_action,
)
from agentgym.spaces import action_space, observation_space
from agentgym.tasks import SPLITS

Observation = dict[str, Any]
"""``{"text": str, "images": tuple[np.ndarray, ...]}``."""

#: Keys every ``reset`` info dict holds.
RESET_INFO_KEYS = ("task_id", "instruction", "system_prompt", "tools", "state_key")
#: Keys every ``step`` info dict holds (``success`` too, once the episode is over).
STEP_INFO_KEYS = ("reward_components", "action_valid", "error", "tool_calls", "state_key")

_TRUNCATION_MARK = "\n[... truncated: {n} more characters]"
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)

__all__ = [
    "RESET_INFO_KEYS",
    "STEP_INFO_KEYS",
    "AgentEnv",
    "BaseOptions",
    "EnvOptions",
    "Observation",
    "ResetOutcome",
    "Snapshot",
    "StepOutcome",
]


def _copied_state(state: Any) -> Any:
    """A private copy of a bit generator's state (``copy.deepcopy``'s result, a few times
    faster: the usual state is dicts of ints and strings, copied here without the memo)."""
    if isinstance(state, dict):
        return {key: _copied_state(value) for key, value in state.items()}
    if isinstance(state, int | str):
        return state
    return copy.deepcopy(state)


@dataclass
class ResetOutcome:
    """What a subclass's ``_reset`` returns."""

    text: str
    instruction: str
    system_prompt: str = ""
    images: tuple[np.ndarray, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepOutcome:
    """What a subclass's ``_step`` returns.

    ``components`` are the unweighted reward components of this step; the base class fills
    any component the env declares but did not set with 0.0, and sets ``format`` to -1.0 for
    an invalid action unless the env set it. ``action_valid=None`` means "valid iff it
    parsed without errors".
    """

    text: str
    images: tuple[np.ndarray, ...] = ()
    components: dict[str, float] = field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    success: bool = False
    action_valid: bool | None = None
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    """An opaque copy of an env's state, from :meth:`AgentEnv.snapshot`.

    ``native`` is the env's own cheap copy of its world, or ``None`` when the env restores by
    replaying ``actions`` from the episode's start.
    """

    env_class: str
    rng_state: Mapping[str, Any]
    task_id: str
    options: Mapping[str, Any]
    actions: tuple[str, ...]
    turn: int
    done: bool
    success: bool
    last_obs: Observation
    native: Any = None


class AgentEnv(gym.Env[Observation, str]):
    """Base class of every single-agent agentgym env.

    Subclasses set:

    * ``metadata["family"]`` — ``"code"``, ``"web"``, ``"users"``, ``"visual"``, ``"games"``...
    * ``default_reward_weights`` — one entry per reward component, ``format`` among them.
    * ``default_max_turns`` — the turn budget (``None`` for none); past it the episode is
      truncated with ``success=False``.

    and implement:

    * ``task_ids(split)`` — the task set of a split (train and test disjoint);
    * ``_reset(task_id, options) -> ResetOutcome`` — build the world for a task, with
      randomness drawn only from ``self.np_random``;
    * ``_step(action: ParsedAction) -> StepOutcome`` — apply one parsed turn;
    * ``state_key() -> str`` — a canonical, history-free digest of the world state;

    and may override ``tools`` (the tools the model may call), ``admissible_actions()``,
    ``oracle_action()`` (a privileged reference move for scripted policies), and
    ``_native_snapshot()/_native_restore()`` for a cheap state copy (the default replays).

    A subclass's constructor declares only its own keywords and passes the base options on::

        def __init__(self, *, size: int = 4, **base: Unpack[BaseOptions]):
            super().__init__(**base)
    """

    metadata = {"family": "", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {"format": 0.1, "outcome": 1.0}
    default_max_turns: ClassVar[int | None] = None
    #: True for envs whose episode ends with an ``<answer>`` in the turn's text (not with a
    #: tool of their own); only these take ``answer_tool=True``.
    answers_in_text: ClassVar[bool] = False
    #: The split names ``split=`` accepts; ``train`` and ``test`` at least. Families with
    #: more held-out sets (seen and unseen layouts, a validation set) list them here.
    splits: ClassVar[tuple[str, ...]] = SPLITS

    def __init__(
        self,
        *,
        # The defaults have one source: EnvOptions (a field's class attribute is its default).
        split: str = EnvOptions.split,
        reward_weights: Mapping[str, float] | None = EnvOptions.reward_weights,
        max_turns: int | None = EnvOptions.max_turns,
        render_mode: str | None = EnvOptions.render_mode,
        max_text_length: int = EnvOptions.max_text_length,
        answer_tool: bool = EnvOptions.answer_tool,
        **unknown: Never,
    ):
        """Take the base options, the same on every env (:class:`EnvOptions` says what each
        does); a subclass declares its own keywords and passes these on as
        ``**base: Unpack[BaseOptions]``. A keyword that no class of the env takes raises
        :class:`~agentgym.error.UnknownOptionError`, naming the options it does take."""
        if unknown:
            raise UnknownOptionError(type(self).__name__, unknown, self.option_names())
        #: The base options this env was built with, as given (None: the env's default).
        self.env_options = EnvOptions(
            split=split,
            reward_weights=reward_weights,
            max_turns=max_turns,
            render_mode=render_mode,
            max_text_length=max_text_length,
            answer_tool=answer_tool,
        )
        self._apply_options(self.env_options)
        self.action_space = action_space()
        self._task_id: str | None = None
        self._options: dict[str, Any] = {}
        self._rng_state: Mapping[str, Any] = {}
        self._actions: list[str] = []
        self._turn = 0
        self._done = False
        self._success = False
        self._last_obs: Observation = {"text": "", "images": ()}
        self._closed = False

    def _apply_options(self, options: EnvOptions) -> None:
        """Check the base options against this env and set what they drive."""
        if options.split not in self.splits:
            raise InvalidConfigError(f"split must be one of {self.splits}, got {options.split!r}.")
        weights = dict(self.default_reward_weights)
        for name, value in (options.reward_weights or {}).items():
            if name not in weights:
                raise InvalidConfigError(
                    f"{type(self).__name__} has no reward component {name!r}; "
                    f"its components are {sorted(weights)}."
                )
            weights[name] = value
        modes = self.metadata.get("render_modes", [])
        if options.render_mode is not None and options.render_mode not in modes:
            raise InvalidConfigError(
                f"render_mode {options.render_mode!r} is not supported; choose from {modes}."
            )
        if options.answer_tool and not self.answers_in_text:
            raise InvalidConfigError(
                f"answer_tool=True needs an env whose episode ends with an <answer>; "
                f"{type(self).__name__} does not take one (its own tools end the episode)."
            )
        self.split = options.split
        #: Offer :data:`~agentgym.parsing.ANSWER_TOOL` next to ``<answer>`` text (see
        #: docs/contract.md), so frameworks that forward only tool calls can answer.
        self.answer_tool = options.answer_tool
        self.reward_weights: dict[str, float] = weights
        self.max_turns = self.default_max_turns if options.max_turns is None else options.max_turns
        self.render_mode = options.render_mode
        self.max_text_length = options.max_text_length
        self.observation_space = observation_space(max_text_length=self.max_text_length)

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Every keyword the constructor takes, sorted: the env's own and the base options.

        Each class from ``cls`` up that defines ``__init__`` adds its named parameters; one
        that passes ``**options`` on lets the walk go on to its base class, and reaching
        ``AgentEnv`` adds the base options.
        """
        names: set[str] = set()
        for klass in cls.__mro__:
            if klass is AgentEnv:
                names.update(BASE_OPTION_NAMES)
                break
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            params = list(inspect.signature(init).parameters.values())[1:]  # past self
            names.update(p.name for p in params if p.kind in _NAMED)
            if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                break
        return tuple(sorted(names))

    # ---- the template subclasses fill in ---------------------------------------------------

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        """The task ids of ``split`` (default: this env's split)."""
        raise NotImplementedError

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        raise NotImplementedError

    def _step(self, action: ParsedAction) -> StepOutcome:
        raise NotImplementedError

    def state_key(self) -> str:
        """A canonical digest of the current world state: equal states, equal keys.

        It must not depend on how the state was reached (no turn counters, no history), so
        GiGPO can group steps of different trajectories that stand in the same state.
        """
        raise NotImplementedError

    @property
    def tools(self) -> Sequence[Tool]:
        """The tools the model may call (empty for envs that only take answers)."""
        return ()

    @property
    def offered_tools(self) -> tuple[Tool, ...]:
        """The tools the model is shown and may call: :attr:`tools`, plus the answer tool
        when the env was built with ``answer_tool=True``."""
        own = tuple(self.tools)
        return (*own, ANSWER_TOOL) if self.answer_tool else own

    def admissible_actions(self) -> list[str] | None:
        """Ready action strings when the useful action set is finite here, else None."""
        return None

    def oracle_action(self) -> str:
        """A good next action computed from privileged state (for scripted policies)."""
        raise NotImplementedError(f"{type(self).__name__} has no oracle policy.")

    def _native_snapshot(self) -> Any:
        """A cheap copy of the world; ``None`` makes ``restore`` replay instead."""
        return None

    def _native_restore(self, native: Any) -> None:
        raise NotImplementedError

    # ---- the contract ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode.

        ``options["task_id"]`` picks the task; otherwise it is drawn from the split with the
        env's generator, so the same ``seed`` always gives the same task, world and first
        observation. Other options are passed to the env's ``_reset``.
        """
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", None)
        ids = self.task_ids(self.split)
        # Draw the task index even when options name the task, so both ways of asking for a
        # task leave the generator in the same state and build the same world.
        drawn = ids[int(self.np_random.integers(len(ids)))]
        if task_id is None:
            task_id = drawn
        elif task_id not in ids:
            other = [s for s in self.splits if s != self.split and task_id in self.task_ids(s)]
            where = f" It belongs to split {other[0]!r}." if other else ""
            raise UnknownTaskError(
                f"{type(self).__name__} (split {self.split!r}) has no task {task_id!r}.{where} "
                f"Example ids: {list(ids[:3])}."
            )
        self._rng_state = _copied_state(self.np_random.bit_generator.state)
        return self._begin(str(task_id), options)

    def _begin(self, task_id: str, options: dict[str, Any]) -> tuple[Observation, dict[str, Any]]:
        self._task_id = task_id
        self._options = options
        self._actions = []
        self._turn = 0
        self._done = False
        self._success = False
        out = self._reset(task_id, options)
        obs = self._observation(out.text, out.images)
        system_prompt = out.system_prompt
        if self.answer_tool:
            system_prompt = (
                f"{system_prompt}\n{ANSWER_TOOL_NOTE}" if system_prompt else ANSWER_TOOL_NOTE
            )
        info: dict[str, Any] = {
            "task_id": task_id,
            "instruction": out.instruction,
            "system_prompt": system_prompt,
            "tools": [t.to_openai() for t in self.offered_tools],
            "state_key": self.state_key(),
            "reward_weights": dict(self.reward_weights),  # so recordings can show value x weight
        }
        admissible = self.admissible_actions()
        if admissible is not None:
            info["admissible_actions"] = admissible
        info.update(out.info)
        return obs, info

    def step(self, action: str) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Apply one model turn. Never raises on any ``action``; see the module docstring."""
        if self._task_id is None:
            raise gym.error.ResetNeeded("Call reset() before step().")
        if self._done:
            return self._after_end(action)
        parsed = parse_action(action, self.offered_tools)
        if self.answer_tool:
            parsed = fold_answer_calls(parsed)
        self._actions.append(action if isinstance(action, str) else parsed.raw)
        self._turn += 1
        out = self._step(parsed)

        valid = parsed.valid if out.action_valid is None else bool(out.action_valid)
        weights = self.reward_weights
        components = dict.fromkeys(weights, 0.0)
        for name, value in out.components.items():
            components[name] = float(value)
        if "format" not in out.components and "format" in components:
            components["format"] = 0.0 if valid else -1.0
        total = 0.0  # summed in the components' order, as sum() would
        for name, value in components.items():
            total += weights.get(name, 0.0) * value
        reward = float(total)

        terminated, truncated = bool(out.terminated), bool(out.truncated)
        text = out.text
        problems = parsed.error_text()
        if problems and problems not in text:
            # The parser's explanation reaches the model even when the env's text leaves it
            # out (an env that acts on the valid calls of a turn and skips the rest, say).
            text = f"{text}\nInvalid action: {problems}" if text else f"Invalid action: {problems}"
        out_of_turns = self.max_turns is not None and self._turn >= self.max_turns
        if not terminated and not truncated and out_of_turns:
            truncated = True
            text += f"\nThe turn budget ({self.max_turns}) is used up; the episode ends."
        error = out.error
        if error is None and not parsed.valid:
            error = parsed.error_text()
        info: dict[str, Any] = {
            "reward_components": components,
            "action_valid": valid,
            "error": error,
            "tool_calls": [c.to_dict() for c in parsed.tool_calls],
            "state_key": self.state_key(),
        }
        if terminated or truncated:
            self._done = True
            self._success = bool(out.success) and terminated
            info["success"] = self._success
        else:
            admissible = self.admissible_actions()
            if admissible is not None:
                info["admissible_actions"] = admissible
        info.update(out.info)
        obs = self._observation(text, out.images)
        return obs, reward, terminated, truncated, info

    def _after_end(self, action: str) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        obs = self._observation("The episode has ended. Call reset() to start a new one.", ())
        info = {
            "reward_components": {name: 0.0 for name in self.reward_weights},
            "action_valid": False,
            "error": "step() after the episode ended",
            "tool_calls": [],
            "state_key": self.state_key(),
            "success": self._success,
        }
        return obs, 0.0, True, False, info

    def _observation(self, text: str, images: Sequence[np.ndarray] = ()) -> Observation:
        limit = self.max_text_length
        if len(text) > limit:
            mark = _TRUNCATION_MARK.format(n=len(text) - limit)
            text = text[: max(0, limit - len(mark))] + mark
            text = text[:limit]
        obs = {"text": text, "images": tuple(images)}
        self._last_obs = obs
        return obs

    # ---- snapshot / restore ----------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Copy the current state so :meth:`restore` can return to it (Tree-GRPO branching)."""
        if self._task_id is None:
            raise gym.error.ResetNeeded("Call reset() before snapshot().")
        return Snapshot(
            env_class=type(self).__qualname__,
            rng_state=copy.deepcopy(self._rng_state),
            task_id=self._task_id,
            options=copy.deepcopy(self._options),
            actions=tuple(self._actions),
            turn=self._turn,
            done=self._done,
            success=self._success,
            last_obs=self._last_obs,
            native=(
                None
                if (native := self._native_snapshot()) is None
                else (copy.deepcopy(self.np_random.bit_generator.state), native)
            ),
        )

    def restore(self, snapshot: Snapshot) -> None:
        """Return to a state taken by :meth:`snapshot` (of this env class, any instance)."""
        if not isinstance(snapshot, Snapshot) or snapshot.env_class != type(self).__qualname__:
            raise InvalidConfigError(
                f"restore() needs a Snapshot taken from a {type(self).__name__}, "
                f"got {type(snapshot).__name__}."
            )
        self._rng_state = copy.deepcopy(snapshot.rng_state)
        if snapshot.native is not None:
            rng_now, native = snapshot.native
            self.np_random.bit_generator.state = copy.deepcopy(rng_now)
            self._task_id = snapshot.task_id
            self._options = copy.deepcopy(dict(snapshot.options))
            self._native_restore(native)
        else:
            self.np_random.bit_generator.state = copy.deepcopy(dict(snapshot.rng_state))
            self._begin(snapshot.task_id, copy.deepcopy(dict(snapshot.options)))
            for action in snapshot.actions:
                self.step(action)
        self._actions = list(snapshot.actions)
        self._turn = snapshot.turn
        self._done = snapshot.done
        self._success = snapshot.success
        self._last_obs = snapshot.last_obs

    # ---- misc ------------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The current task's id (None before the first reset)."""
        return self._task_id

    @property
    def turn(self) -> int:
        """Turns taken in the current episode."""
        return self._turn

    def render(self) -> str | None:  # type: ignore[override]
        """``render_mode="ansi"``: the last observation's text."""
        if self.render_mode == "ansi":
            return self._last_obs["text"]
        return None

    def close(self) -> None:
        """Release resources. Safe to call more than once."""
        self._closed = True

"""Household: ALFWorld in kind. Find objects in a seeded home, process them, put them away.

=================  ===========================================================
id                 ``agentgym/Household-v0`` (family ``household``)
action             one ``command`` tool call per turn:
                   ``{"command": "go to cabinet 1"}``
observation        text in ALFWorld's style: what the command did (no images)
turn budget        50 turns, then truncated (GiGPO's ALFWorld setting)
reward range       -0.1 .. 10 per step
=================  ===========================================================

Observations
    At reset: the task, then the room and every receptacle in it::

        Your task is to: put a clean mug in coffeemachine.

        You are in the middle of a room. Looking quickly around you, you see a cabinet 2,
        a countertop 1, a fridge 1, ... and a sinkbasin 1.

    After each command, what it did: ``You arrive at countertop 1. On the countertop 1, you
    see a mug 1, and an apple 2.``; ``You open the fridge 1. The fridge 1 is open. In it,
    you see nothing.``; ``You clean the mug 1 using the sinkbasin 1.``; a command that does
    nothing here gives ``Nothing happens.`` (as in ALFWorld).

Actions
    ``<tool_call>{"name": "command", "arguments": {"command": "open fridge 1"}}</tool_call>``.
    Commands: ``go to X``, ``open X``, ``close X``, ``take X from Y``, ``put X in/on Y``,
    ``clean X with Y``, ``heat X with Y``, ``cool X with Y``, ``slice X with Y``, ``use X``,
    ``examine X``, ``look``, ``inventory``. Case, extra spaces and a final full stop do not
    matter, and ``put X in Y`` / ``put X on Y`` are read as ``put X in/on Y``.
    ``info["admissible_actions"]`` lists every command that does something now, as ready
    tool calls. One call per turn; more, none, or an ``<answer>`` is a format error.

Rewards (component: default weight)
    * ``outcome`` (10.0): 1 when the goal holds (the episode then terminates with success),
      as verl-agent scores ALFWorld.
    * ``invalid`` (0.1): -1 for a well-formed command that is not admissible (nothing
      happens), verl-agent's invalid-action penalty.
    * ``format`` (0.1): -1 for a turn that is not exactly one valid ``command`` call.

Tasks
    ALFWorld's six types: pick and place, examine in light, clean and place, heat and place,
    cool and place, pick two and place, each with several phrasings. Task
    ``household-l<layout>-t<slot>``: the layout number seeds the room (kitchen, living
    room, bedroom or bathroom; its receptacles, lamp and objects), the slot seeds the task
    and where every object starts. Splits: ``train`` (300 layouts x 200 slots);
    ``test_seen`` (the same layouts, 4 other slots each); ``test_unseen`` (40 layouts whose
    object sets never occur in training, 25 slots each); ``valid`` (40 more unseen layouts,
    for choosing hyperparameters); ``test`` = ``test_unseen``.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Unpack

from agentgym.envs.household.tasks import SPLITS, parse_task_id, split_tasks
from agentgym.simulators.household import (
    COMMANDS,
    Goal,
    State,
    World,
    generate_home,
    generate_task,
    next_command,
)

from agentgym.core import AgentEnv, BaseOptions, ResetOutcome, StepOutcome
from agentgym.parsing import ParsedAction, Tool, render_tool_call

COMMAND_TOOL = Tool(
    name="command",
    description="Do one thing in the house, e.g. 'go to cabinet 1' or 'take apple 1 from "
    "countertop 2'. Forms: " + "; ".join(form for form, _ in COMMANDS) + ".",
    parameters={
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "One household command, as listed in the admissible actions.",
            }
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)

SYSTEM_PROMPT = (
    "You are an agent in a household. Carry out the task you are given by issuing commands, "
    "one per turn, with the command tool, for example:\n"
    + render_tool_call("command", {"command": "go to countertop 1"})
    + "\nThe commands:\n"
    + "\n".join(f"- {form}: {what}" for form, what in COMMANDS)
    + "\nYou carry one object at a time. Closed receptacles hide what is in them until you "
    "open them. A command that does not apply here has no effect."
)


@lru_cache(maxsize=1 << 16)
def render_command(command: str) -> str:
    """A command as the tool call a model would write."""
    return render_tool_call("command", {"command": command})


class HouseholdEnv(AgentEnv):
    """ALFWorld-style household tasks; see the module docstring for the card."""

    metadata = {"family": "household", "render_modes": ["ansi"]}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "outcome": 10.0,
        "invalid": 0.1,
        "format": 0.1,
    }
    default_max_turns: ClassVar[int | None] = 50
    splits: ClassVar[tuple[str, ...]] = SPLITS

    def __init__(self, **base: Unpack[BaseOptions]):
        super().__init__(**base)
        self._world: World | None = None
        self._goal: Goal | None = None
        self._instruction = ""
        self._loaded: str | None = None  # the task id self._world was built for

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return split_tasks(split or self.split)

    @property
    def tools(self) -> Sequence[Tool]:
        return (COMMAND_TOOL,)

    def _load(self, task_id: str, state: State | None) -> str:
        """Build the world of ``task_id`` (at its start, or at ``state``); the instruction."""
        if state is not None and self._world is not None and self._loaded == task_id:
            self._world = World(self._world.home, state)  # same task: keep home and goal
            return self._instruction
        layout, slot = parse_task_id(task_id)
        task = generate_task(generate_home(layout), slot)
        self._world = World(task.home, task.start_state() if state is None else state)
        self._goal, self._instruction, self._loaded = task.goal, task.instruction, task_id
        return task.instruction

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        instruction = self._load(task_id, None)
        assert self._world is not None
        # The task comes first (as verl-agent's ALFWorld prompt puts it), so a reader of the
        # conversation's head - the byte-level reference agent - always sees it.
        text = f"Your task is to: {instruction}\n\n{self._world.overview()}"
        return ResetOutcome(text=text, instruction=instruction, system_prompt=SYSTEM_PROMPT)

    def _step(self, action: ParsedAction) -> StepOutcome:
        assert self._world is not None and self._goal is not None
        problem = None
        if not action.valid:
            problem = action.error_text()
        elif len(action.tool_calls) != 1 or action.answer is not None:
            problem = (
                f"expected exactly one command tool call, got {len(action.tool_calls)}"
                + (" and an <answer>" if action.answer is not None else "")
                + ". Example: "
                + render_command("look")
            )
        if problem is not None:
            return StepOutcome(
                text=f"Invalid action: {problem}",
                components={"format": -1.0},
                action_valid=False,
                error=problem,
            )
        command = str(action.tool_calls[0].arguments["command"])
        outcome = self._world.act(command)
        if not outcome.valid:
            return StepOutcome(
                text=outcome.text,
                components={"invalid": -1.0, "format": 0.0},
                action_valid=False,
                error=f"{command[:80]!r} is not an admissible command here; "
                "info['admissible_actions'] lists those that are.",
            )
        done = self._goal.satisfied(self._world.home, self._world.state)
        text = outcome.text + (" You have completed the task." if done else "")
        return StepOutcome(
            text=text,
            components={"outcome": 1.0 if done else 0.0},
            terminated=done,
            success=done,
        )

    def state_key(self) -> str:
        """The world state (where the agent is, what it carries, every object's place and
        states, open receptacles, lit lamps), with no history: equal states, equal keys."""
        return "" if self._world is None else self._world.state.key()

    def admissible_actions(self) -> list[str]:
        assert self._world is not None
        return [render_command(c) for c in self._world.admissible()]

    def oracle_action(self) -> str:
        """The next command of the oracle planner (``look`` once the goal holds)."""
        assert self._world is not None and self._goal is not None
        command = next_command(self._world, self._goal)
        return render_command(command or "look")

    def _native_snapshot(self) -> Any:
        assert self._world is not None
        return self._world.state.copy()

    def _native_restore(self, native: Any) -> None:
        assert self._task_id is not None
        self._load(self._task_id, native.copy())

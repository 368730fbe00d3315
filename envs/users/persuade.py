"""UserPersuade: move a sceptical user's stance with the right arguments, then ask.

=================  ===========================================================
id                 ``agentgym/UserPersuade-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer``
observation        text: the user's reaction or evidence cards (no images)
turn budget        14 turns, then truncated
reward range       about -0.5 .. 3.0 per episode with default weights
=================  ===========================================================

Observations
    At reset the user states their doubt. After ``talk``, a reaction that shows (in words,
    never numbers) how far the message moved them. ``search`` returns five evidence cards,
    one per argument type, each with an id to cite (``[E3]``).

Actions
    ``talk(message)``, ``search(query)``, ``answer(answer)`` asks for the final decision
    and ends the conversation.

Rewards (component: default weight)
    * ``progress`` (1.0): the change in stance this turn (negative for pressure or insults).
    * ``info`` (0.2): 1 when the user first names what holds them back.
    * ``search`` (0.1): 1 for the first search.
    * ``penalty`` (0.1): -1 for more than two argument types at once, injection, walls of
      text.
    * ``outcome`` (1.0): 1 when the user agrees (stance >= 0.5 when asked).
    * ``format`` (0.1): -1 for an invalid action.

Tasks
    Seeded proposals, starting stances (-0.7..-0.3) and argument sensitivities: task
    ``user-persuade-<seed>``; train 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.persuade import PersuadeDialogue


class UserPersuadeEnv(UserDialogueEnv):
    """Persuasion; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "progress": 1.0,
        "info": 0.2,
        "search": 0.1,
        "penalty": 0.1,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 14
    dialogue_cls: ClassVar[Any] = PersuadeDialogue
    task_prefix: ClassVar[str] = "user-persuade"
    system_intro: ClassVar[str] = (
        "You are a persuasive, respectful assistant. Find out what holds the user back, "
        "argue to it (cite evidence cards by id), then ask for their decision."
    )

"""UserTwentyQuestions: find the thing the user is thinking of with yes/no questions.

=================  ===========================================================
id                 ``agentgym/UserTwentyQuestions-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer``
observation        text: the user's yes/no reply or the list of things (no images)
turn budget        20 turns, then truncated
reward range       about -0.2 .. 2.0 per episode with default weights
=================  ===========================================================

Observations
    At reset an invitation to ask. After ``talk``, ``Yes.`` / ``No.`` for a question about
    one attribute or one named thing, a nudge for anything else, and a refusal (with a
    penalty) for several questions in one message. ``search`` lists the 26 possible things.

Actions
    ``talk(message)``, ``search(query)``, ``answer(answer)`` (one guess; ends the game).
    ``info["admissible_actions"]`` lists the attribute questions not asked yet and a guess
    of each of the 26 things.

Rewards (component: default weight)
    * ``info`` (1.0): information of each new answer, ``log2(before/after) / log2(26)`` over
      the things still consistent with all answers (sums to 1 when one is left).
    * ``search`` (0.0): 1 for the first search.
    * ``penalty`` (0.1): -1 for stuffing, injection, walls of text; -0.25 for repeats.
    * ``outcome`` (1.0): 1 for the right guess.
    * ``format`` (0.1): -1 for an invalid action.

Tasks
    Seeded: task ``user-twenty-<seed>``; train 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.twenty import TwentyQuestionsDialogue


class UserTwentyQuestionsEnv(UserDialogueEnv):
    """Twenty questions; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 1.0,
        "search": 0.0,
        "penalty": 0.1,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 20
    dialogue_cls: ClassVar[Any] = TwentyQuestionsDialogue
    task_prefix: ClassVar[str] = "user-twenty"
    system_intro: ClassVar[str] = (
        "You are playing twenty questions. The user thinks of a thing; ask yes/no questions "
        "one at a time, then answer with its name."
    )

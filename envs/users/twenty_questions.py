"""UserTwentyQuestions: find the thing the user is thinking of with yes/no questions.

=================  ===========================================================
id                 ``agentgym/UserTwentyQuestions-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer``
observation        text: the user's yes/no reply or the list of things (no images)
turn budget        20 turns, then truncated
reward range       about -1.2 .. 1.5 per episode with default weights
=================  ===========================================================

Observations
    At reset an invitation to ask, worded the same for every task (so the opening line never
    tells tasks apart). After ``talk``, ``Yes.`` / ``No.`` for a question about
    one attribute or one named thing, a nudge for anything else, and a refusal (with a
    penalty) for several questions in one message. ``search`` lists the 26 possible things.

Actions
    ``talk(message)``, ``search(query)``, ``answer(answer)`` (one guess; ends the game).
    ``info["admissible_actions"]`` lists the attribute questions not asked yet and a guess
    of each of the 26 things.

Rewards (component: default weight)
    * ``info`` (0.5): information of each new answer, ``log2(before/after) / log2(26)`` over
      the things still consistent with all answers (sums to 1 when one is left).
    * ``search`` (0.0): 1 for the first search.
    * ``penalty`` (0.1): -1 for stuffing, injection, walls of text; -0.25 for repeats.
    * ``outcome`` (1.0): 1 for the right guess.
    * ``no_guess`` (1.0): -1 when the game ends without a guess (the turn budget runs out,
      or the user leaves after too many non-questions or repeats).
    * ``format`` (0.1): -1 for an invalid action.

    Asking until the game ends without a guess never pays more than guessing: all the information there
    is pays at most 0.5, the ``no_guess`` penalty takes 1 away, so an episode without a
    guess ends below 0 (before penalties), while any guess keeps the information earned and
    adds 0 or 1.

Tasks
    Seeded: task ``user-twenty-<seed>``; train 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
    * v0, revised (issue 16): one opening line for every task (its wording was drawn from the
      reset seed, which told a handful of training tasks apart); ``info`` weight 1.0 -> 0.5
      and the ``no_guess`` penalty, so that asking until the turns run out no longer pays
      more than guessing. Returns are not comparable with earlier v0 runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.twenty import TwentyQuestionsDialogue

from agentgym.core import StepOutcome


class UserTwentyQuestionsEnv(UserDialogueEnv):
    """Twenty questions; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 0.5,
        "search": 0.0,
        "penalty": 0.1,
        "outcome": 1.0,
        "no_guess": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 20
    dialogue_cls: ClassVar[Any] = TwentyQuestionsDialogue
    task_prefix: ClassVar[str] = "user-twenty"
    system_intro: ClassVar[str] = (
        "You are playing twenty questions. The user thinks of a thing; ask yes/no questions "
        "one at a time, then answer with its name."
    )

    def _episode_ends(self, out: StepOutcome) -> None:
        dialogue = self.dialogue
        if dialogue is not None and getattr(dialogue, "guess", None) is None:
            out.components["no_guess"] = -1.0

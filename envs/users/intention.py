"""UserIntention: clarify a vague request, then answer with everything the user meant.

=================  ===========================================================
id                 ``agentgym/UserIntention-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer``
observation        text: the user's reply or a checklist (no images)
turn budget        12 turns, then truncated
reward range       about -0.3 .. 2.3 per episode with default weights
=================  ===========================================================

Observations
    At reset the vague request (``User: Can you help me plan a birthday party?``). After
    ``talk``, the user's reply: a hidden detail is released only when asked about.
    ``search`` returns the checklist of topics such requests usually involve (no values).

Actions
    ``talk(message)``, ``search(query)``, ``answer(answer)`` (the final plan or draft; ends
    the episode).

Rewards (component: default weight)
    * ``info`` (1.0): importance-weighted share of the details released this turn.
    * ``search`` (0.0): 1 for the first search (weight 0 by default: the checklist is free).
    * ``penalty`` (0.1): -1 for question-stuffing, injection or walls of text; -0.25 repeats.
    * ``coverage`` (0.5): importance-weighted share of the details the answer states.
    * ``outcome`` (1.0): 1 when the answer states every hidden detail.
    * ``format`` (0.1): -1 for an invalid action.

Tasks
    Seeded over three request types (party, laptop, email), four of six details hidden with
    importance 1-3: task ``user-intention-<seed>``; train 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.intention import IntentionDialogue


class UserIntentionEnv(UserDialogueEnv):
    """Intention clarification; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 1.0,
        "search": 0.0,
        "penalty": 0.1,
        "coverage": 0.5,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 12
    dialogue_cls: ClassVar[Any] = IntentionDialogue
    task_prefix: ClassVar[str] = "user-intention"
    system_intro: ClassVar[str] = (
        "You are an assistant. The user's request is vague: find out what they need by "
        "asking, then answer with a plan that states every detail they gave."
    )

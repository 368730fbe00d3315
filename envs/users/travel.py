"""UserTravel: elicit a traveller's hidden hotel preferences, search, and book the best hotel.

=================  ===========================================================
id                 ``agentgym/UserTravel-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer``
observation        text: the user's reply or the search results (no images)
turn budget        20 turns, then truncated
reward range       about -0.2 .. 2.6 per episode with default weights
=================  ===========================================================

Observations
    At reset the traveller's opening request (``User: ...``). After ``talk``, the reply;
    the traveller releases a preference only when asked about it, one or two topics per
    message. After ``search``, the five best-matching hotels of a ten-hotel catalogue.

Actions
    ``talk(message)``, ``search(query)`` (e.g. ``"beach under $160 4 stars pets"``),
    ``answer(answer)`` naming exactly one hotel (its id ``"H4"`` or its name) ends the
    episode; naming none or several gets a request to pick one and the episode goes on.

Rewards (component: default weight)
    * ``info`` (1.0): importance-weighted share of the preferences released this turn.
    * ``search`` (0.2): 1 the first time a constrained search lists the best hotel.
    * ``penalty`` (0.1): -1 for question-stuffing, prompt injection or walls of text,
      -0.25 for asking again about a released preference.
    * ``choice`` (0.5): importance-weighted share of preferences the booked hotel meets.
    * ``outcome`` (1.0): 1 when the booked hotel is the one that meets them all.
    * ``format`` (0.1): -1 for an invalid action.

Tasks
    Seeded: task ``user-travel-<seed>``; train seeds 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.travel import TravelDialogue


class UserTravelEnv(UserDialogueEnv):
    """Hotel preference elicitation; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 1.0,
        "search": 0.2,
        "penalty": 0.1,
        "choice": 0.5,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 20
    dialogue_cls: ClassVar[Any] = TravelDialogue
    task_prefix: ClassVar[str] = "user-travel"
    system_intro: ClassVar[str] = (
        "You are a travel assistant. Find out the traveller's preferences by asking, search "
        "the hotel catalogue, and book the hotel that fits them all."
    )

"""UserFunction: find f(target) of the user's hidden function by probing other inputs.

=================  ===========================================================
id                 ``agentgym/UserFunction-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer``
observation        text: ``f(x) = y`` replies or the list of function families
turn budget        12 turns, then truncated
reward range       about -0.2 .. 2.0 per episode with default weights
=================  ===========================================================

Observations
    At reset the user names the target input. After ``talk``, ``f(x) = y`` for the one
    integer the message contains; several numbers, the target itself or no number earn a
    refusal. ``search`` lists the four function families.

Actions
    ``talk(message)`` (e.g. ``"What is f(3)?"``), ``search(query)``, ``answer(answer)``
    (the integer f(target); ends the episode).

Rewards (component: default weight)
    * ``info`` (1.0): 0.25 for each of the first four distinct probes.
    * ``search`` (0.0): 1 for the first search.
    * ``penalty`` (0.1): -1 for several numbers at once, injection, walls of text; -0.25 for
      repeats or asking for the target.
    * ``outcome`` (1.0): 1 for the right value.
    * ``format`` (0.1): -1 for an invalid action.

Tasks
    Seeded over linear, quadratic, absolute and modular families with small integer
    coefficients: task ``user-function-<seed>``; train 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.function import FunctionDialogue


class UserFunctionEnv(UserDialogueEnv):
    """Function guessing; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 1.0,
        "search": 0.0,
        "penalty": 0.1,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 12
    dialogue_cls: ClassVar[Any] = FunctionDialogue
    task_prefix: ClassVar[str] = "user-function"
    system_intro: ClassVar[str] = (
        "The user holds a secret integer function. Ask for its value at inputs of your "
        "choice (one per turn), work out the rule, and answer with f at the target."
    )

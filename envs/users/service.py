"""UserService: tau-bench style customer service over a real SQLite database.

=================  ===========================================================
id                 ``agentgym/UserService-v0``
action             one tool call per turn: ``talk`` / ``search`` / ``answer`` or a shop
                   tool (``find_user``, ``list_orders``, ``get_order``, ``cancel_order``,
                   ``update_address``, ``return_item``)
observation        text: the customer's reply, a tool result, or policy lines
turn budget        16 turns, then truncated
reward range       about -1.5 .. 2.1 per episode with default weights
=================  ===========================================================

Observations
    At reset the customer's request (cancel an order, change an address, return an item).
    After ``talk``, the customer's reply (they reveal their email, order number, reason,
    new address or item only when asked). After a shop tool, its result or the policy it
    breaks. ``search`` searches the policy handbook.

Actions
    ``talk(message)``, ``search(query)``, ``answer(answer)`` (closing message: ends the chat
    only once the customer is served, otherwise the customer objects), and the shop tools.
    Policies: authenticate with ``find_user(email)`` first; only that customer's orders;
    cancel only pending orders (reason ``"no longer needed"`` or ``"ordered by mistake"``);
    change the address only of pending/processing orders; return only delivered items.

Rewards (component: default weight)
    * ``info`` (0.2): share of the customer's facts released this turn.
    * ``tool`` (0.5): 1 when a tool call first brings the database to the goal state.
    * ``policy`` (0.5): -1 for each policy breach (nothing changes).
    * ``penalty`` (0.1): -1 for a false "done" claim, stuffing, injection, walls of text.
    * ``outcome`` (1.0): 1 when the customer leaves satisfied: the final database equals the
      goal database and the required facts (the refund amount) were said.
    * ``format`` (0.1): -1 for an invalid action.

Tasks
    Seeded shops (6 customers, 2-3 orders each) and goals: task ``user-service-<seed>``;
    train 0..99,999, test 100,000..100,999.

Version History
    * v0: first release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agentgym.envs.users.base import UserDialogueEnv
from agentgym.simulators.users.service import ServiceDialogue


class UserServiceEnv(UserDialogueEnv):
    """Customer service over SQLite; see the module docstring for the card."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 0.2,
        "search": 0.0,
        "tool": 0.5,
        "policy": 0.5,
        "penalty": 0.1,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 16
    dialogue_cls: ClassVar[Any] = ServiceDialogue
    task_prefix: ClassVar[str] = "user-service"
    system_intro: ClassVar[str] = (
        "You are a customer service agent of an online shop. Follow the policies (search the "
        "handbook if unsure), authenticate the customer, do what they need with the tools, "
        "and tell them what they need to know."
    )

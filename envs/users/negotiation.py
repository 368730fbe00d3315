"""Negotiation: two seats split a pool of items they value differently (PettingZoo).

=================  ===========================================================
id                 ``agentgym/Negotiation-v0`` (multi-agent: ``agentgym.make_multi``)
seats              ``assistant`` (moves first) and ``user``
action             one tool call per turn: ``talk`` / ``propose`` / ``accept``
observation        text: the partner's last move (and at reset the pool and your values)
turn budget        10 turns in all (5 each), then truncated with no deal
reward range       0 .. 1 per seat (share of own pool value), -0.1 per invalid turn
=================  ===========================================================

Observations
    At reset each seat reads the pool and its own private values (the pool is worth 10 to
    each). Then each turn, the seat whose turn it is next reads the partner's message or
    proposal; the other reads a waiting line. ``info["turn"]`` names whose turn it is and
    ``info["standing"]`` the proposal on the table (``{"by": seat, "keep": {...}}``).

Actions
    ``talk(message)`` (cheap talk), ``propose(books, hats, balls)`` (what you keep; the
    partner gets the rest), ``accept()`` (the partner's standing proposal; ends the game).
    Actions of the seat whose turn it is not are ignored.

Rewards (component: default weight)
    * ``outcome`` (1.0): at a deal, the value of your share / 10; no deal, 0.
    * ``format`` (0.1): -1 for an invalid action on your turn.

Tasks
    Seeded pools and values: task ``negotiation-<seed>``; train 0..99,999, test
    100,000..100,999. ``scripted_negotiator`` (in the simulator) is a fair scripted
    counterpart for either seat: ``env.scripted_policy(seat)``.

Version History
    * v0: first release.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from agentgym.simulators.users.negotiation import KINDS, NegotiationGame, scripted_negotiator
from agentgym.simulators.users.text import MAX_READ_CHARS
from pettingzoo import ParallelEnv

from agentgym.error import InvalidConfigError
from agentgym.parsing import Tool, parse_action, render_tool_call
from agentgym.spaces import action_space, observation_space
from agentgym.tasks import SeededTaskSet, seeded_splits

ASSISTANT, USER = "assistant", "user"
WEIGHTS = {"format": 0.1, "outcome": 1.0}

TOOLS = (
    Tool(
        "talk",
        "Say something to your partner.",
        {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
            "additionalProperties": False,
        },
    ),
    Tool(
        "propose",
        "Propose a split: how many of each item YOU keep; the partner gets the rest.",
        {
            "type": "object",
            "properties": {k: {"type": "integer", "minimum": 0, "maximum": 10} for k in KINDS},
            "required": list(KINDS),
            "additionalProperties": False,
        },
    ),
    Tool(
        "accept",
        "Accept the partner's standing proposal (ends the game).",
        {"type": "object", "properties": {}, "additionalProperties": False},
    ),
)


class NegotiationParallelEnv(ParallelEnv):
    """Two-seat negotiation; see the module docstring for the card."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "agentgym_negotiation",
        "render_modes": [],
        "family": "users",
        "is_parallelizable": True,
    }

    def __init__(self, *, split: str = "train", max_turns: int = 10):
        if max_turns < 2:
            raise InvalidConfigError(f"max_turns must be at least 2, got {max_turns}.")
        self.split = split
        self.max_turns = max_turns
        self.tasks = seeded_splits("negotiation")[split]
        self.possible_agents = [ASSISTANT, USER]
        self.agents: list[str] = []
        self.render_mode = None
        self._obs_spaces = {a: observation_space() for a in self.possible_agents}
        self._act_spaces = {a: action_space() for a in self.possible_agents}
        self.np_random = np.random.default_rng()
        self.game: NegotiationGame | None = None
        self.turn_of = ASSISTANT
        self.turns = 0
        self.task_id = ""

    @functools.cache  # noqa: B019 - PettingZoo wants the same object
    def observation_space(self, agent: str) -> gym.Space:
        return self._obs_spaces[agent]

    @functools.cache  # noqa: B019
    def action_space(self, agent: str) -> gym.Space:
        return self._act_spaces[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        task = (options or {}).get("task_id")
        if task is None or task not in self.tasks:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self.task_id = task
        self.game = NegotiationGame.generate(SeededTaskSet.seed_of(task), (ASSISTANT, USER))
        self.turn_of = ASSISTANT
        self.turns = 0
        self.agents = list(self.possible_agents)
        example = render_tool_call("propose", {"books": 1, "hats": 0, "balls": 2})
        obs = {}
        for a in self.possible_agents:
            first = "You move first." if a == ASSISTANT else "Your partner moves first."
            obs[a] = self._obs(f"{self.game.describe(a)} {first} Example: {example}")
        return obs, {a: self._info(a) for a in self.possible_agents}

    @staticmethod
    def _obs(text: str) -> dict[str, Any]:
        return {"text": text, "images": ()}

    def _info(self, seat: str, **extra: Any) -> dict[str, Any]:
        assert self.game is not None
        standing = self.game.standing
        return {
            "seat": seat,
            "turn": self.turn_of,
            "task_id": self.task_id,
            "standing": None if standing is None else {"by": standing[0], "keep": standing[1]},
            "tools": [t.to_openai() for t in TOOLS],
            "values": dict(self.game.values[seat]),
            "counts": dict(self.game.counts),
            "state_key": self.state_key(),
            **extra,
        }

    def state_key(self) -> str:
        assert self.game is not None
        blob = json.dumps([self.task_id, self.turn_of, self.game.state()], sort_keys=True)
        return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()

    def step(
        self, actions: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict]:
        if not self.agents or self.game is None:
            raise gym.error.ResetNeeded("Call reset() before step(): the episode has ended.")
        game = self.game
        seat, other = self.turn_of, game.other(self.turn_of)
        action = actions.get(seat, "")
        parsed = parse_action(action if isinstance(action, str) else "", TOOLS)
        components = {seat: {"format": 0.0, "outcome": 0.0}, other: {"format": 0.0, "outcome": 0.0}}
        problem = parsed.error_text() if not parsed.valid else None
        if problem is None and len(parsed.tool_calls) != 1:
            problem = f"expected exactly one tool call, got {len(parsed.tool_calls)}."
        seen_by_other = "(Your partner said nothing useful.)"
        seen_by_seat = ""
        deal = False
        if problem is None:
            call = parsed.tool_calls[0]
            if call.name == "talk":
                msg = str(call.arguments["message"])[:MAX_READ_CHARS]
                seen_by_other = f"Partner: {msg}"
                seen_by_seat = "You spoke."
            elif call.name == "propose":
                keep = {k: call.arguments[k] for k in KINDS}
                why = game.check_keep(keep)
                if why:
                    problem = why
                else:
                    game.propose(seat, keep)
                    give = {k: game.counts[k] - keep[k] for k in KINDS}
                    seen_by_other = (
                        "Partner proposes: you get "
                        + ", ".join(f"{give[k]} {k}" for k in KINDS)
                        + "."
                    )
                    seen_by_seat = "Proposal made."
            elif not game.accept(seat):
                problem = "there is no proposal from your partner to accept."
            else:
                deal = True
                seen_by_other = seen_by_seat = "Deal accepted."
        if problem is not None:
            components[seat]["format"] = -1.0
            seen_by_seat = f"Invalid action: {problem}"
            seen_by_other = "(Your partner's move was invalid; your turn.)"
        self.turns += 1
        truncated = not deal and self.turns >= self.max_turns
        if deal:
            for a in self.possible_agents:
                components[a]["outcome"] = game.score(a)
        rewards = {
            a: float(sum(WEIGHTS[k] * v for k, v in components[a].items()))
            for a in self.possible_agents
        }
        self.turn_of = other
        obs = {
            seat: self._obs(seen_by_seat + " " + _turn_line(False)),
            other: self._obs(seen_by_other + " " + _turn_line(True)),
        }
        if deal or truncated:
            obs = {
                a: self._obs(
                    o["text"].split(" Your turn")[0].split(" Wait")[0]
                    + (" The game is over." if deal else " No deal: out of turns.")
                )
                for a, o in obs.items()
            }
        infos = {
            a: self._info(
                a,
                reward_components=components[a],
                action_valid=(a != seat or problem is None),
                error=problem if a == seat else None,
            )
            for a in self.possible_agents
        }
        if deal or truncated:
            for a in self.possible_agents:
                infos[a]["success"] = deal
            self.agents = []
        terms = {a: deal for a in self.possible_agents}
        truncs = {a: truncated for a in self.possible_agents}
        return obs, rewards, terms, truncs, infos

    def scripted_policy(
        self, seat: str, *, accept_share: float = 0.5, ask_share: float = 0.6
    ) -> Callable[[Any, Any], str]:
        """A seat policy playing :func:`scripted_negotiator` for ``seat`` in this env.

        It reads only that seat's own values (through the game), never the partner's.
        """

        def policy(obs: Any, info: Any) -> str:
            if self.game is None:
                return render_tool_call("talk", {"message": "Let's make a deal."})
            name, args = scripted_negotiator(
                self.game, seat, accept_share=accept_share, ask_share=ask_share
            )
            return render_tool_call(name, args)

        return policy

    def close(self) -> None:
        self.agents = []


def _turn_line(mine: bool) -> str:
    return "Your turn." if mine else "Wait for your partner."

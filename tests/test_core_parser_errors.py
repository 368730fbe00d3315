"""The parser's explanation of a bad turn always reaches the observation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agentgym.core import AgentEnv, ResetOutcome, StepOutcome
from agentgym.parsing import ParsedAction, Tool

PING = Tool(
    "ping",
    "ping a host",
    {
        "type": "object",
        "properties": {"host": {"type": "string"}},
        "required": ["host"],
        "additionalProperties": False,
    },
)


class QuietEnv(AgentEnv):
    """An env that acts on the valid calls and never mentions what was wrong."""

    metadata = {"family": "test", "render_modes": ["ansi"]}

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return ["only"]

    @property
    def tools(self) -> Sequence[Tool]:
        return (PING,)

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        return ResetOutcome(text="Ping hosts.", instruction="Ping hosts.")

    def _step(self, action: ParsedAction) -> StepOutcome:
        return StepOutcome(text="".join(f"pong {c.arguments['host']}\n" for c in action.tool_calls))

    def state_key(self) -> str:
        return "s"


def _call(args: str) -> str:
    return f'<tool_call>{{"name": "ping", "arguments": {args}}}</tool_call>'


def test_a_schema_error_reaches_the_observation_when_the_env_leaves_it_out():
    env = QuietEnv()
    env.reset(seed=0)
    obs, _, _, _, info = env.step(_call('{"host": "a"}') + _call('{"hots": "b"}'))
    assert obs["text"].startswith("pong a\n")
    assert "Invalid action: tool call 2 (ping):" in obs["text"]
    assert "'host' is a required property" in obs["text"]
    assert info["action_valid"] is False and info["reward_components"]["format"] == -1.0


def test_an_all_invalid_turn_is_explained_and_a_valid_turn_is_left_alone():
    env = QuietEnv()
    env.reset(seed=0)
    obs, *_ = env.step("<tool_call>{not json</tool_call>")
    assert obs["text"].startswith("Invalid action: tool call 1: invalid JSON")
    obs, *_ = env.step(_call('{"host": "c"}'))
    assert obs["text"] == "pong c\n"


def test_an_env_that_already_shows_the_error_does_not_get_it_twice():
    import gymnasium as gym

    import agentgym  # noqa: F401

    env = gym.make("agentgym/Sokoban-Tiny-v0")
    env.reset(seed=0)
    obs, *_ = env.step(
        '<tool_call>{"name": "move", "arguments": {"direction": "north"}}</tool_call>'
    )
    assert obs["text"].count("is not one of") == 1

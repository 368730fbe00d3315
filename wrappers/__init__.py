"""Composable wrappers: each changes one thing, named for what it changes."""

from agentgym.wrappers.chat import ChatHistory
from agentgym.wrappers.limits import LimitTurns
from agentgym.wrappers.record import Record
from agentgym.wrappers.rewards import ReweightReward
from agentgym.wrappers.seats import AsParallelEnv, SeatAsEnv

__all__ = ["AsParallelEnv", "ChatHistory", "LimitTurns", "Record", "ReweightReward", "SeatAsEnv"]

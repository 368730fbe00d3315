"""A household text world in the manner of ALFWorld: seeded rooms, receptacles that open and
close, objects that get cleaned, heated, cooled and sliced, lamps, the six ALFWorld task
types, and an oracle planner. No Gymnasium here; ``agentgym.envs.household`` wraps it."""

from agentgym.simulators.household.generate import (
    UNSEEN_FROM,
    Task,
    feasible_types,
    generate_home,
    generate_task,
    object_set_is_unseen,
)
from agentgym.simulators.household.goals import ALFWORLD_NAMES, TASK_TYPES, Goal
from agentgym.simulators.household.planner import next_command
from agentgym.simulators.household.world import COMMANDS, Home, Outcome, State, World

__all__ = [
    "ALFWORLD_NAMES",
    "COMMANDS",
    "TASK_TYPES",
    "UNSEEN_FROM",
    "Goal",
    "Home",
    "Outcome",
    "State",
    "Task",
    "World",
    "feasible_types",
    "generate_home",
    "generate_task",
    "next_command",
    "object_set_is_unseen",
]

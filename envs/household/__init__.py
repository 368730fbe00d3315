"""Household: ALFWorld in kind - find, clean, heat, cool and place objects in seeded homes."""

from agentgym.registry import register

register(
    "agentgym/Household-v0",
    "agentgym.envs.household.env:HouseholdEnv",
    family="household",
    description="ALFWorld-style household text world: six task types, admissible commands, "
    "50 turns; train / test_seen / test_unseen layouts",
)

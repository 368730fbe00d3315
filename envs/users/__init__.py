"""Simulated-user envs (UserRL / tau-bench style): ask, clarify, persuade, act through tools."""

from agentgym.registry import register

_SINGLE = {
    "UserTravel-v0": ("travel:UserTravelEnv", "elicit hidden hotel preferences, search, book"),
}

for _id, (_entry, _desc) in _SINGLE.items():
    register(
        f"agentgym/{_id}",
        f"agentgym.envs.users.{_entry}",
        family="users",
        description=_desc,
    )

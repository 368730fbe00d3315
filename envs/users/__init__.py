"""Simulated-user envs (UserRL / tau-bench style): ask, clarify, persuade, act through tools."""

from agentgym.registry import register

_SINGLE = {
    "UserTravel-v0": ("travel:UserTravelEnv", "elicit hidden hotel preferences, search, book"),
    "UserIntention-v0": (
        "intention:UserIntentionEnv",
        "clarify a vague request, answer with its details",
    ),
    "UserTwentyQuestions-v0": (
        "twenty_questions:UserTwentyQuestionsEnv",
        "yes/no questions to find a secret thing",
    ),
    "UserFunction-v0": ("function:UserFunctionEnv", "probe a hidden function, answer f(target)"),
    "UserPersuade-v0": (
        "persuade:UserPersuadeEnv",
        "move a sceptical stance with arguments and evidence",
    ),
    "UserService-v0": ("service:UserServiceEnv", "tau-bench style customer service over SQLite"),
}

for _id, (_entry, _desc) in _SINGLE.items():
    register(
        f"agentgym/{_id}",
        f"agentgym.envs.users.{_entry}",
        family="users",
        description=_desc,
    )

for _id in _SINGLE:
    _name = _id.removesuffix("-v0")
    register(
        f"agentgym/{_name}Seats-v0",
        "agentgym.envs.users.seats:UserSeatsParallelEnv",
        family="users",
        kwargs={"env_id": f"agentgym/{_id}"},
        multi_agent=True,
        description=f"{_name} with open assistant and user seats (PettingZoo)",
    )

register(
    "agentgym/Negotiation-v0",
    "agentgym.envs.users.negotiation:NegotiationParallelEnv",
    family="users",
    multi_agent=True,
    description="two seats split a pool of items they value differently (PettingZoo)",
)

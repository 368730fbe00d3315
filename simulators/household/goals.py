"""ALFWorld's six task types: their goal predicates and the ways an instruction says them.

A goal names kinds, not instances, as ALFWorld's do: "put a clean mug in coffeemachine" is
met by any mug that is clean and in any coffeemachine.

Examples:
    >>> goal = Goal("heat", "apple", target="countertop")
    >>> goal.instruction(0)
    'heat some apple and put it in countertop.'
    >>> goal.instruction(1)
    'put a hot apple in countertop.'
    >>> goal.instruction(2)
    'warm up an apple and place it on the countertop.'
"""

from __future__ import annotations

from dataclasses import dataclass

from agentgym.simulators.household.catalog import RECEPTACLE_KINDS
from agentgym.simulators.household.world import Home, State, article

#: The six task types, in ALFWorld's order, with the short names task ids and tests use.
TASK_TYPES = ("pick", "light", "clean", "heat", "cool", "two")

#: ALFWorld's names for them (its game folders start with these).
ALFWORLD_NAMES = {
    "pick": "pick_and_place_simple",
    "light": "look_at_obj_in_light",
    "clean": "pick_clean_then_place_in_recep",
    "heat": "pick_heat_then_place_in_recep",
    "cool": "pick_cool_then_place_in_recep",
    "two": "pick_two_obj_and_place",
}

#: The state an object must have for the processing task types.
NEEDS = {"clean": "clean", "heat": "hot", "cool": "cool"}

PHRASINGS: dict[str, tuple[str, ...]] = {
    "pick": (
        "put {a_obj} in {target}.",
        "put some {obj} on {target}.",
        "find {a_obj} and put it in {target}.",
        "move {a_obj} to the {target}.",
    ),
    "light": (
        "look at {obj} under the {lamp}.",
        "examine the {obj} with the {lamp}.",
        "hold {a_obj} and turn on the {lamp}.",
    ),
    "clean": (
        "clean some {obj} and put it in {target}.",
        "put a clean {obj} in {target}.",
        "wash {a_obj}, then put it {prep} the {target}.",
    ),
    "heat": (
        "heat some {obj} and put it in {target}.",
        "put a hot {obj} in {target}.",
        "warm up {a_obj} and place it {prep} the {target}.",
    ),
    "cool": (
        "cool some {obj} and put it in {target}.",
        "put a cool {obj} in {target}.",
        "chill {a_obj}, then put it {prep} the {target}.",
    ),
    "two": (
        "put two {obj} in {target}.",
        "find two {obj} and put them in {target}.",
        "place two {obj} {prep} the {target}.",
    ),
}


@dataclass(frozen=True)
class Goal:
    """One task: its type, the object kind, and the target receptacle kind or lamp kind."""

    type: str
    obj: str
    target: str | None = None
    lamp: str | None = None

    def instruction(self, phrasing: int) -> str:
        """The instruction in phrasing number ``phrasing`` (taken modulo how many there are)."""
        forms = PHRASINGS[self.type]
        target = RECEPTACLE_KINDS.get(self.target or "")
        prep = target.preposition if target is not None else ""
        return forms[phrasing % len(forms)].format(
            obj=self.obj, a_obj=article(self.obj), target=self.target, lamp=self.lamp, prep=prep
        )

    def counted(self, home: Home, state: State, obj: str) -> bool:
        """Whether ``obj`` has what this goal asks of an object (its kind and state)."""
        if home.kind_of(obj) != self.obj:
            return False
        need = NEEDS.get(self.type)
        return need is None or need in state.marks.get(obj, frozenset())

    def placed(self, home: Home, state: State) -> dict[str, int]:
        """Target receptacle -> how many counted objects lie in it."""
        out: dict[str, int] = {}
        for obj, rec in state.where.items():
            if home.kind_of(rec) == self.target and self.counted(home, state, obj):
                out[rec] = out.get(rec, 0) + 1
        return out

    def satisfied(self, home: Home, state: State) -> bool:
        """The goal predicate."""
        if self.type == "light":
            held = state.holding
            return (
                held is not None
                and home.kind_of(held) == self.obj
                and any(
                    kind == self.lamp and name in state.lamps_on and at == state.location
                    for name, kind, at in home.lamps
                )
            )
        need = 2 if self.type == "two" else 1
        return any(n >= need for n in self.placed(home, state).values())

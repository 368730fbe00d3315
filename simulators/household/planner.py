"""The oracle: the next command of a short plan that reaches the goal from any state.

It reads the whole state (where every object lies, even in closed cabinets), so it is a
privileged reference, not an agent. It re-plans from the current state at every call, so it
also finishes tasks after someone else's detours (noisy demonstrations).

Examples:
    >>> from agentgym.simulators.household.generate import generate_home, generate_task
    >>> task = generate_task(generate_home(0), 0)
    >>> world = World(task.home, task.start_state())
    >>> for _ in range(50):
    ...     command = next_command(world, task.goal)
    ...     if command is None:
    ...         break
    ...     _ = world.act(command)
    >>> task.goal.satisfied(world.home, world.state)
    True
"""

from __future__ import annotations

from agentgym.simulators.household.catalog import RECEPTACLE_KINDS
from agentgym.simulators.household.generate import APPLIANCE
from agentgym.simulators.household.goals import NEEDS, Goal
from agentgym.simulators.household.world import World


def next_command(world: World, goal: Goal) -> str | None:
    """The next command towards ``goal``, or None when it already holds."""
    home, st = world.home, world.state
    if goal.satisfied(home, st):
        return None
    held = st.holding
    if goal.type == "light":
        if held is not None and home.kind_of(held) == goal.obj:
            lamp, _, at = next(x for x in home.lamps if x[1] == goal.lamp)
            if st.location != at:
                return f"go to {at}"
            return f"use {lamp}"  # the lamp is off, or the goal would hold
        return _free_hands(world) or _fetch(world, goal, exclude=None)
    target = _target(world, goal)
    if held is not None and home.kind_of(held) == goal.obj:
        need = NEEDS.get(goal.type)
        if need is not None and need not in st.marks.get(held, frozenset()):
            appliance = home.receptacles_of(APPLIANCE[goal.type])[0]
            if st.location != appliance:
                return f"go to {appliance}"
            return f"{goal.type} {held} with {appliance}"
        return _reach(world, target) or f"put {held} in/on {target}"
    return _free_hands(world) or _fetch(world, goal, exclude=target)


def _target(world: World, goal: Goal) -> str:
    """The receptacle to fill: for two objects, the one already holding the most."""
    placed = goal.placed(world.home, world.state)
    options = world.home.receptacles_of(goal.target or "")
    return max(options, key=lambda r: (placed.get(r, 0), -options.index(r)))


def _reach(world: World, receptacle: str) -> str | None:
    """Go to ``receptacle`` and open it if needed; None once it can be used."""
    if world.state.location != receptacle:
        return f"go to {receptacle}"
    if not world.accessible(receptacle):
        return f"open {receptacle}"
    return None


def _free_hands(world: World) -> str | None:
    """Put down whatever is carried, here if possible; None when the hands are empty."""
    st = world.state
    if st.holding is None:
        return None
    here = st.location
    if here is not None and RECEPTACLE_KINDS[world.home.kind_of(here)].holds:
        return _reach(world, here) or f"put {st.holding} in/on {here}"
    spot = next(
        name
        for name, kind in world.home.receptacles
        if RECEPTACLE_KINDS[kind].holds and not RECEPTACLE_KINDS[kind].openable
    )
    return f"go to {spot}"


def _fetch(world: World, goal: Goal, exclude: str | None) -> str:
    """Go and pick up the handiest object the goal can use (not one already in place)."""
    st = world.state
    options = [
        (obj, rec)
        for obj, rec in st.where.items()
        if world.home.kind_of(obj) == goal.obj
        and not (rec == exclude and goal.counted(world.home, st, obj))
    ]

    def cost(item: tuple[str, str]) -> tuple[int, int, str]:
        obj, rec = item
        moves = (rec != st.location) + (not world.accessible(rec))
        # prefer objects that already have the state the goal needs
        need = NEEDS.get(goal.type)
        ready = need is None or need in st.marks.get(obj, frozenset())
        return (moves + (0 if ready else 2), world.home.object_order[obj], rec)

    obj, rec = min(options, key=cost)
    return _reach(world, rec) or f"take {obj} from {rec}"

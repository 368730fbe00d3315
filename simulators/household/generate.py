"""Seeded homes and tasks.

A *layout* (a number) fixes a room: its kind, its receptacles, its lamp and which objects
it holds. A *task* (a layout and a slot number) fixes what to do there and where every
object starts. Both come from ``numpy.random.default_rng`` seeded with the numbers alone, so
the same numbers always give the same home and task on any machine.

Layouts split in two families by their *object set* (the set of object kinds in the room):
a fixed hash of the set puts one in ten sets in the "unseen" family. Layout numbers below
:data:`UNSEEN_FROM` draw (by rejection) only from the seen family, the others only from the
unseen family, so an unseen layout's object set - and hence the layout itself - never occurs
among the seen ones, by construction.

Examples:
    >>> home = generate_home(6)
    >>> home.room, home == generate_home.__wrapped__(6)  # rebuilt, not cached
    ('livingroom', True)
    >>> task = generate_task(home, 3)
    >>> task.goal.type in TASK_TYPES and not task.goal.satisfied(home, task.start_state())
    True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from itertools import count

import numpy as np
from agentgym.simulators.household.catalog import (
    DESKLAMP_STANDS,
    LAMPS,
    OBJECT_KIND_COUNT,
    OBJECT_KINDS,
    RECEPTACLE_KINDS,
    ROOMS,
)
from agentgym.simulators.household.goals import NEEDS, PHRASINGS, TASK_TYPES, Goal
from agentgym.simulators.household.world import Home, State

#: Layout numbers from here on are drawn from the unseen family of object sets.
UNSEEN_FROM = 1_000_000
#: Room kind of layout ``n`` is ``ROOM_CYCLE[n % 5]``: kitchens twice as often, as in ALFRED.
ROOM_CYCLE = ("kitchen", "livingroom", "kitchen", "bedroom", "bathroom")
_LAYOUT_SALT = 0x5EED_4011
_TASK_SALT = 0x5EED_7A5C
#: Object kinds a room holds, with the chance of 1, 2 or 3 of each.
_COPIES = (1, 2, 3)
_COPY_P = (0.45, 0.35, 0.2)
#: The appliance kind a processing task type uses (the target is never that appliance).
APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
#: How often each task type is drawn, relative to the others a home can pose; types only
#: kitchens or lit rooms can pose weigh more, so the six come out roughly as often as in
#: ALFWorld's training games.
TYPE_WEIGHTS = {"pick": 1.0, "light": 2.0, "clean": 1.5, "heat": 2.0, "cool": 2.0, "two": 1.0}


def object_set_is_unseen(kinds: frozenset[str] | set[str]) -> bool:
    """Whether a set of object kinds belongs to the unseen family (one set in ten)."""
    digest = hashlib.blake2b(",".join(sorted(kinds)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % 10 == 0


@lru_cache(maxsize=4096)
def generate_home(layout: int) -> Home:
    """The home of layout number ``layout`` (seen family below :data:`UNSEEN_FROM`)."""
    if layout < 0:
        raise ValueError(f"layout numbers are >= 0, got {layout}")
    room = ROOM_CYCLE[layout % len(ROOM_CYCLE)]
    unseen = layout >= UNSEEN_FROM
    for attempt in count():
        rng = np.random.default_rng([_LAYOUT_SALT, layout, attempt])
        home = _draw_home(rng, layout, room)
        kinds = {kind for _, kind in home.objects}
        if object_set_is_unseen(kinds) == unseen and feasible_types(home):
            return home
    raise AssertionError("unreachable")


def _draw_home(rng: np.random.Generator, layout: int, room: str) -> Home:
    receptacles: list[tuple[str, str]] = []
    for kind, (lo, hi) in ROOMS[room].items():
        n = int(rng.integers(lo, hi + 1))
        receptacles += [(f"{kind} {i}", kind) for i in range(1, n + 1)]
    lamps: tuple[tuple[str, str, str], ...] = ()
    if room in LAMPS:
        lamp_kind = str(rng.choice(LAMPS[room]))
        if lamp_kind == "floorlamp":
            receptacles.append(("floorlamp 1", "floorlamp"))
            lamps = (("floorlamp 1", "floorlamp", "floorlamp 1"),)
        else:
            stands = [name for name, kind in receptacles if kind in DESKLAMP_STANDS]
            lamps = (("desklamp 1", "desklamp", stands[int(rng.integers(len(stands)))]),)
    order = rng.permutation(len(receptacles))
    receptacles = [receptacles[i] for i in order]

    present = {kind for _, kind in receptacles}
    candidates = sorted(
        k.name
        for k in OBJECT_KINDS.values()
        if room in k.rooms and any(p in present for p in k.places)
    )
    lo, hi = OBJECT_KIND_COUNT[room]
    n_kinds = min(len(candidates), int(rng.integers(lo, hi + 1)))
    chosen = rng.choice(candidates, size=n_kinds, replace=False)
    objects: list[tuple[str, str]] = []
    for kind in chosen:
        copies = int(rng.choice(_COPIES, p=_COPY_P))
        objects += [(f"{kind} {i}", str(kind)) for i in range(1, copies + 1)]
    return Home(layout, room, tuple(receptacles), tuple(objects), lamps)


def targets_for(home: Home, task_type: str, obj_kind: str) -> list[str]:
    """Receptacle kinds of ``home`` a task of ``task_type`` may send ``obj_kind`` to."""
    present = {kind for _, kind in home.receptacles}
    banned = APPLIANCE.get(task_type)
    return [p for p in OBJECT_KINDS[obj_kind].places if p in present and p != banned]


def eligible_objects(home: Home, task_type: str) -> list[str]:
    """Object kinds of ``home`` a task of ``task_type`` can be about."""
    present = {kind for _, kind in home.receptacles}
    copies: dict[str, int] = {}
    for _, kind in home.objects:
        copies[kind] = copies.get(kind, 0) + 1
    out = []
    for kind, n in copies.items():
        can = OBJECT_KINDS[kind].can
        if task_type == "light":
            ok = bool(home.lamps) and "light" in can
        else:
            ok = bool(targets_for(home, task_type, kind))
            if task_type in APPLIANCE:
                ok = ok and APPLIANCE[task_type] in present and task_type in can
            if task_type == "two":
                ok = ok and n >= 2
        if ok:
            out.append(kind)
    return out


def feasible_types(home: Home) -> list[str]:
    """The task types ``home`` can pose, in :data:`TASK_TYPES` order."""
    return [t for t in TASK_TYPES if eligible_objects(home, t)]


@dataclass(frozen=True)
class Task:
    """One episode's task: the home, the goal, its wording and the start state."""

    home: Home
    slot: int
    goal: Goal
    instruction: str
    placement: tuple[tuple[str, str], ...]
    """Object -> the receptacle it starts in, in the home's object order."""

    def start_state(self) -> State:
        return State.start(self.home, dict(self.placement))


def generate_task(home: Home, slot: int) -> Task:
    """Task number ``slot`` in ``home``: a type drawn among the feasible ones by
    :data:`TYPE_WEIGHTS`, then its object, target, wording and every object's start."""
    rng = np.random.default_rng([_TASK_SALT, home.layout, slot])
    types = feasible_types(home)
    weights = np.array([TYPE_WEIGHTS[t] for t in types])
    task_type = types[int(rng.choice(len(types), p=weights / weights.sum()))]
    kinds = eligible_objects(home, task_type)
    obj = kinds[int(rng.integers(len(kinds)))]
    target = lamp = None
    if task_type == "light":
        lamp = home.lamps[0][1]
    else:
        options = targets_for(home, task_type, obj)
        target = options[int(rng.integers(len(options)))]
    goal = Goal(task_type, obj, target=target, lamp=lamp)
    phrasing = int(rng.integers(len(PHRASINGS[task_type])))
    placement = []
    holders = [name for name, kind in home.receptacles if RECEPTACLE_KINDS[kind].holds]
    for name, kind in home.objects:
        places = [r for r in holders if home.kind_of(r) in OBJECT_KINDS[kind].places]
        if kind == obj and target is not None:
            # the goal must not hold at the start: its objects start away from the target
            places = [r for r in places if home.kind_of(r) != target] or [
                r for r in holders if home.kind_of(r) != target
            ]
        placement.append((name, places[int(rng.integers(len(places)))]))
    task = Task(home, slot, goal, goal.instruction(phrasing), tuple(placement))
    assert not goal.satisfied(home, task.start_state())
    assert not NEEDS.get(task_type) or task_type in OBJECT_KINDS[obj].can
    return task

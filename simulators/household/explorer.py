"""An explorer that acts only on what it has read: a demonstrator a clone can imitate.

The planner of :mod:`.planner` reads the whole state, the contents of closed drawers included,
so a model cloned from it learns to guess where things are. The :class:`Explorer` sees what
an agent sees - the task and room overview, its own commands and what each one did, and the
commands admissible now - and keeps a memory of what it has read: which receptacles it has
looked into and what lay there, what it carries, which lamps it has seen where. It then

1. takes an object the task names wherever it has seen one (here first, else the receptacle
   it saw it in first);
2. otherwise visits the receptacles it has not looked into, in the overview's order (or, with
   ``order="likely"``, the kinds the object kind usually lies in first), opening closed ones;
3. once it carries the object: cleans, heats or cools it at the appliance the task needs,
   then goes to the target (opening it if closed) and puts it there; for a light task it
   takes the object to the lamp it has seen and turns the lamp on.

It is a function of the text alone (:meth:`Explorer.decide`), so it can never read hidden
state: change what lies in a receptacle it has not opened and its commands up to that point
do not change. Parsing relies on the world's fixed phrasing (``You arrive at ...``, ``In it,
you see ...``) and on the vocabulary of the catalog, which any agent of this world knows.

Examples:
    >>> from agentgym.simulators.household.generate import generate_home, generate_task
    >>> task = generate_task(generate_home(0), 0)
    >>> world = World(task.home, task.start_state())
    >>> texts = [f"Your task is to: {task.instruction}\\n\\n{world.overview()}"]
    >>> commands = []
    >>> for _ in range(60):
    ...     command = Explorer().decide(texts, commands, world.admissible())
    ...     commands.append(command)
    ...     texts.append(world.act(command).text)
    ...     if task.goal.satisfied(world.home, world.state):
    ...         break
    >>> task.goal.satisfied(world.home, world.state)
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentgym.simulators.household.catalog import OBJECT_KINDS, RECEPTACLE_KINDS
from agentgym.simulators.household.generate import APPLIANCE
from agentgym.simulators.household.goals import NEEDS, PHRASINGS, Goal
from agentgym.simulators.household.world import World

__all__ = ["Explorer", "Memory", "parse_goal", "parse_listing"]

_WORD = r"([a-z]+)"
_SLOTS = {
    "{a_obj}": r"(?:a|an) " + _WORD.replace("(", "(?P<obj>", 1),
    "{obj}": _WORD.replace("(", "(?P<obj>", 1),
    "{target}": _WORD.replace("(", "(?P<target>", 1),
    "{lamp}": _WORD.replace("(", "(?P<lamp>", 1),
    "{prep}": r"(?:in|on)",
}


def _phrasing_regex(form: str) -> re.Pattern[str]:
    pattern = re.escape(form)
    for slot, regex in _SLOTS.items():
        pattern = pattern.replace(re.escape(slot), regex)
    return re.compile(f"^{pattern}$")


_GOAL_FORMS = [(t, _phrasing_regex(f)) for t, forms in PHRASINGS.items() for f in forms]
_TASK_LINE = re.compile(r"Your task is to: (.+?)\n")
_OVERVIEW = re.compile(r"Looking quickly around you, you see (.+)\.")
_ARRIVE = re.compile(r"^You arrive at (.+?)\. (.*)$", re.DOTALL)
_OPENED = re.compile(r"^You open the (.+?)\. (.*)$", re.DOTALL)
_CLOSED = re.compile(r"^The (.+?) is closed\.")
_SEEN = re.compile(r"(?:On|In) the (.+?), you see (.+?)\.(?: |$)")
_SEEN_OPEN = re.compile(r"^The (.+?) is open\. In it, you see (.+?)\.(?: |$)")
_TAKE = re.compile(r"^You pick up the (.+?) from the (.+?)\.")
_PUT = re.compile(r"^You put the (.+?) (?:in|on) the (.+?)\.")
_PROCESS = re.compile(r"^You (clean|heat|cool) the (.+?) using the (.+?)\.")
_AT = re.compile(r"^You are at the (.+?)\. (.*)$", re.DOTALL)


def parse_goal(instruction: str) -> Goal | None:
    """The goal an instruction states (None if it is in no known phrasing)."""
    text = instruction.strip()
    for task_type, regex in _GOAL_FORMS:
        m = regex.match(text)
        if m is None:
            continue
        groups = m.groupdict()
        if task_type == "light":
            return Goal("light", groups["obj"], lamp=groups["lamp"])
        return Goal(task_type, groups["obj"], target=groups["target"])
    return None


def parse_listing(text: str) -> list[str]:
    """``"a mug 1, and an apple 2"`` -> ``["mug 1", "apple 2"]``; ``"nothing"`` -> []."""
    if text.strip() == "nothing":
        return []
    out = []
    for part in text.split(", "):
        part = part.strip()
        part = part[4:] if part.startswith("and ") else part
        for art in ("a ", "an "):
            if part.startswith(art):
                part = part[len(art) :]
                break
        if part:
            out.append(part)
    return out


def _kind(name: str) -> str:
    return name.rsplit(" ", 1)[0]


def _likely_rank(receptacle: str, places: Sequence[str]) -> tuple[int, int]:
    """Where to look first: the kinds an object usually lies in, in the catalog's order,
    then the rest; lower numbers first within a kind."""
    kind, _, number = receptacle.rpartition(" ")
    rank = places.index(kind) if kind in places else len(places)
    return rank, int(number) if number.isdigit() else 0


@dataclass
class Memory:
    """What the explorer has read so far (rebuilt from the text at every decision)."""

    goal: Goal | None
    receptacles: list[str]
    location: str | None = None
    holding: str | None = None
    contents: dict[str, list[str]] = field(default_factory=dict)
    """Receptacle -> what it last showed (absent: never looked into)."""
    closed: set[str] = field(default_factory=set)
    lamps: dict[str, str] = field(default_factory=dict)
    """Lamp -> the receptacle it stands at."""
    marks: dict[str, set[str]] = field(default_factory=dict)
    placed: dict[str, str] = field(default_factory=dict)
    """Object -> the receptacle the explorer put it in."""

    @classmethod
    def read(cls, texts: Sequence[str], commands: Sequence[str]) -> Memory:
        """Replay the observations: ``texts[0]`` the reset text, ``texts[i+1]`` what
        ``commands[i]`` did."""
        first = texts[0] if texts else ""
        task = _TASK_LINE.search(first + "\n")
        over = _OVERVIEW.search(first)
        mem = cls(
            goal=parse_goal(task.group(1)) if task else None,
            receptacles=parse_listing(over.group(1)) if over else [],
        )
        for command, text in zip(commands, texts[1:]):
            mem._update(command.strip().lower(), text)
        return mem

    def _see(self, receptacle: str, listing: str) -> None:
        items = parse_listing(listing)
        self.contents[receptacle] = [i for i in items if not _kind(i).endswith("lamp")]
        for lamp in (i for i in items if _kind(i).endswith("lamp")):
            self.lamps[lamp] = receptacle
        self.closed.discard(receptacle)

    def _view(self, text: str) -> None:
        """A receptacle's view (after arriving, opening, examining or looking)."""
        m = _SEEN_OPEN.match(text) or _SEEN.match(text)
        if m:
            self._see(m.group(1), m.group(2))
            return
        m = _CLOSED.match(text)
        if m:
            self.closed.add(m.group(1))

    def _update(self, command: str, text: str) -> None:
        if text.startswith("Nothing happens"):
            return
        for regex in (_ARRIVE, _AT):
            m = regex.match(text)
            if m:
                self.location = m.group(1)
                if m.group(1).startswith("floorlamp"):
                    self.lamps.setdefault(m.group(1), m.group(1))
                self._view(m.group(2))
                return
        m = _OPENED.match(text)
        if m:
            self._view(m.group(2))
            return
        if text.startswith("You close the "):
            self.closed.add(text[len("You close the ") :].rstrip("."))
            return
        m = _TAKE.match(text)
        if m:
            obj, rec = m.group(1), m.group(2)
            self.holding = obj
            if obj in self.contents.get(rec, []):
                self.contents[rec].remove(obj)
            self.placed.pop(obj, None)
            return
        m = _PUT.match(text)
        if m:
            obj, rec = m.group(1), m.group(2)
            self.holding = None
            self.contents.setdefault(rec, []).append(obj)
            self.placed[obj] = rec
            return
        m = _PROCESS.match(text)
        if m:
            verb, obj = m.group(1), m.group(2)
            marks = self.marks.setdefault(obj, set())
            marks.add({"clean": "clean", "heat": "hot", "cool": "cool"}[verb])
            if verb in ("heat", "cool"):
                marks.discard("cool" if verb == "heat" else "hot")
            return
        if command.startswith("examine "):
            self._view(text)


class Explorer:
    """The observation-only demonstrator; see the module docstring.

    ``order``: ``"listed"`` visits unexplored receptacles in the overview's order;
    ``"likely"`` first those whose kind the task's object kind usually lies in.
    """

    def __init__(self, order: str = "likely"):
        if order not in ("listed", "likely"):
            raise ValueError(f"order must be 'listed' or 'likely', got {order!r}")
        self.order = order

    def decide(
        self, texts: Sequence[str], commands: Sequence[str], admissible: Sequence[str]
    ) -> str:
        """The next command, from the observations (``texts``), the commands issued so far
        and the commands admissible now (the last is returned as written there)."""
        mem = Memory.read(texts, commands)
        allowed = {c.strip().lower(): c for c in admissible}
        want = self._plan(mem) if mem.goal is not None else None
        if want is not None and want in allowed:
            return allowed[want]
        return self._fallback(mem, allowed)

    # ---- the plan ---------------------------------------------------------------------------

    def _plan(self, mem: Memory) -> str | None:
        goal = mem.goal
        assert goal is not None
        held = mem.holding
        if held is not None and _kind(held) != goal.obj:
            return self._put_down(mem)
        if goal.type == "light":
            if held is None:
                return self._fetch(mem, exclude=None)
            lamp = next((lp for lp in mem.lamps if _kind(lp) == goal.lamp), None)
            lamp = lamp or next((r for r in mem.receptacles if _kind(r) == goal.lamp), None)
            if lamp is not None and lamp not in mem.lamps:
                mem.lamps[lamp] = lamp  # a floor lamp stands at itself
            if lamp is None:
                return self._explore(mem)
            return self._go(mem, mem.lamps[lamp]) or f"use {lamp}"
        target = self._target(mem, goal)
        if held is None:
            return self._fetch(mem, exclude=target)
        need = NEEDS.get(goal.type)
        if need is not None and need not in mem.marks.get(held, set()):
            appliance = next((r for r in mem.receptacles if _kind(r) == APPLIANCE[goal.type]), None)
            if appliance is None:
                return self._explore(mem)
            return self._go(mem, appliance) or f"{goal.type} {held} with {appliance}"
        if target is None:
            return self._explore(mem)
        return self._reach(mem, target) or f"put {held} in/on {target}"

    def _target(self, mem: Memory, goal: Goal) -> str | None:
        """The target receptacle: where the explorer already put one (two objects), else
        the first of the target kind in the overview."""
        options = [r for r in mem.receptacles if _kind(r) == goal.target]
        for obj, rec in mem.placed.items():
            if rec in options and _kind(obj) == goal.obj:
                return rec
        return options[0] if options else None

    def _go(self, mem: Memory, receptacle: str) -> str | None:
        return None if mem.location == receptacle else f"go to {receptacle}"

    def _reach(self, mem: Memory, receptacle: str) -> str | None:
        """Go to ``receptacle`` and open it if it is closed; None once it can be used."""
        step = self._go(mem, receptacle)
        if step is None and self._openable(receptacle) and receptacle not in mem.contents:
            return f"open {receptacle}"
        if step is None and receptacle in mem.closed:
            return f"open {receptacle}"
        return step

    def _openable(self, receptacle: str) -> bool:
        kind = RECEPTACLE_KINDS.get(_kind(receptacle))
        return kind is not None and kind.openable

    def _fetch(self, mem: Memory, exclude: str | None) -> str | None:
        """Take a seen object of the goal's kind (here first), else explore."""
        goal = mem.goal
        assert goal is not None
        spots = [
            (obj, rec)
            for rec in mem.receptacles
            for obj in mem.contents.get(rec, [])
            if _kind(obj) == goal.obj and not (rec == exclude and mem.placed.get(obj) == rec)
        ]
        if not spots:
            return self._explore(mem)
        spots.sort(key=lambda s: s[1] != mem.location)
        obj, rec = spots[0]
        return self._reach(mem, rec) or f"take {obj} from {rec}"

    def _explore(self, mem: Memory) -> str | None:
        """Look into the next receptacle not looked into yet (opening it if closed)."""
        here = mem.location
        unseen_here = here is not None and here not in mem.contents and self._holds(here)
        if unseen_here and (here in mem.closed or self._openable(str(here))):
            return f"open {here}"
        todo = [r for r in mem.receptacles if r not in mem.contents and self._holds(r)]
        if self.order == "likely" and mem.goal is not None and mem.goal.obj in OBJECT_KINDS:
            places = OBJECT_KINDS[mem.goal.obj].places
            todo.sort(key=lambda r: _likely_rank(r, places))
        if mem.goal is not None and mem.goal.type == "light" and mem.holding is not None:
            todo = [r for r in mem.receptacles if r not in mem.contents]
        return f"go to {todo[0]}" if todo else None

    def _holds(self, receptacle: str) -> bool:
        kind = RECEPTACLE_KINDS.get(_kind(receptacle))
        return kind is None or kind.holds

    def _put_down(self, mem: Memory) -> str | None:
        """Put down what is carried that the task does not need: here if possible."""
        here = mem.location
        held = mem.holding
        if here is not None and self._holds(here) and here not in mem.closed:
            return f"put {held} in/on {here}"
        spot = next((r for r in mem.receptacles if self._holds(r) and not self._openable(r)), None)
        return None if spot is None else f"go to {spot}"

    def _fallback(self, mem: Memory, allowed: dict[str, str]) -> str:
        """When the plan is not admissible (a parse the world's text defeated): the first
        unexplored receptacle, else ``look``."""
        for rec in mem.receptacles:
            if rec not in mem.contents and f"go to {rec}" in allowed:
                return allowed[f"go to {rec}"]
        return allowed.get("look", "look")


# World is imported for the doctest's namespace only.
_ = World

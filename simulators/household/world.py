"""The household world: a home's fixed layout, its changing state, and the commands.

A :class:`Home` is what never changes in an episode (the room, its receptacles, its objects
and lamps). A :class:`State` is everything a command can change: where the agent stands,
what it carries, where each object lies and what has been done to it, which receptacles are
open and which lamps are on. :class:`World` pairs the two and applies commands.

The command set is closed: :meth:`World.admissible` lists every command that does something
in the current state, and :meth:`World.act` accepts exactly those (after normalising case,
spaces and a trailing full stop, and reading ``put X in Y`` / ``put X on Y`` as
``put X in/on Y``). Anything else is "Nothing happens." and changes nothing, as in ALFWorld.

Examples:
    >>> home = Home(
    ...     layout=0, room="kitchen",
    ...     receptacles=(("countertop 1", "countertop"), ("fridge 1", "fridge")),
    ...     objects=(("apple 1", "apple"),), lamps=())
    >>> world = World(home, State.start(home, {"apple 1": "countertop 1"}))
    >>> world.act("go to countertop 1").text
    'You arrive at countertop 1. On the countertop 1, you see an apple 1.'
    >>> world.act("take apple 1 from countertop 1").text
    'You pick up the apple 1 from the countertop 1.'
    >>> world.act("go to fridge 1").text
    'You arrive at fridge 1. The fridge 1 is closed.'
    >>> world.act("cool apple 1 with fridge 1").text
    'You cool the apple 1 using the fridge 1.'
    >>> world.act("examine apple 1").text
    'This is a cool apple 1.'
    >>> world.act("fly away").valid
    False
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from agentgym.simulators.household.catalog import OBJECT_KINDS, RECEPTACLE_KINDS

#: The command forms, in the order the system prompt and the docs list them.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("go to {receptacle}", "walk to a receptacle and see what is on or in it"),
    ("open {receptacle}", "open a cabinet, drawer, fridge, microwave or safe you stand at"),
    ("close {receptacle}", "close it again"),
    ("take {object} from {receptacle}", "pick up an object you see (one at a time)"),
    ("put {object} in/on {receptacle}", "put what you carry in or on the receptacle here"),
    ("clean {object} with {receptacle}", "wash what you carry at a sinkbasin"),
    ("heat {object} with {receptacle}", "heat what you carry with a microwave"),
    ("cool {object} with {receptacle}", "cool what you carry with a fridge"),
    ("slice {object} with {object}", "slice food you see with the knife you carry"),
    ("use {lamp}", "turn a desklamp or floorlamp here on or off"),
    ("examine {object or receptacle}", "look closely at something here or in your hands"),
    ("look", "say where you are and what is here"),
    ("inventory", "say what you carry"),
)

NOTHING_HAPPENS = "Nothing happens."

#: Object states, in the order ``examine`` names them.
STATES = ("hot", "cool", "clean", "sliced")


@dataclass(frozen=True)
class Home:
    """A room's fixed layout.

    ``receptacles`` and ``objects`` are ``(name, kind)`` pairs (``("cabinet 2", "cabinet")``)
    in the order the room lists them; ``lamps`` are ``(name, kind, stands_at)`` where
    ``stands_at`` is the receptacle a lamp is used from (a floor lamp stands at itself).
    """

    layout: int
    room: str
    receptacles: tuple[tuple[str, str], ...]
    objects: tuple[tuple[str, str], ...]
    lamps: tuple[tuple[str, str, str], ...]

    def kind_of(self, name: str) -> str:
        """The kind of a receptacle, object or lamp by its name (``"cabinet 2"`` -> cabinet)."""
        return name.rsplit(" ", 1)[0]

    def receptacles_of(self, kind: str) -> list[str]:
        return [name for name, k in self.receptacles if k == kind]

    def objects_of(self, kind: str) -> list[str]:
        return [name for name, k in self.objects if k == kind]

    @property
    def object_order(self) -> dict[str, int]:
        return {name: i for i, (name, _) in enumerate(self.objects)}


@dataclass
class State:
    """Everything a command can change. ``location`` None is the middle of the room."""

    location: str | None
    holding: str | None
    where: dict[str, str]
    """Object -> the receptacle it lies on or in (a carried object is absent)."""
    opened: set[str] = field(default_factory=set)
    lamps_on: set[str] = field(default_factory=set)
    marks: dict[str, frozenset[str]] = field(default_factory=dict)
    """Object -> its states among :data:`STATES` (absent: none)."""

    @classmethod
    def start(cls, home: Home, where: Mapping[str, str]) -> State:
        """The start of an episode: in the middle of the room, everything closed and off."""
        missing = {name for name, _ in home.objects} - set(where)
        if missing:
            raise ValueError(f"objects without a place: {sorted(missing)}")
        return cls(location=None, holding=None, where=dict(where))

    def copy(self) -> State:
        return State(
            self.location,
            self.holding,
            dict(self.where),
            set(self.opened),
            set(self.lamps_on),
            dict(self.marks),
        )

    def canonical(self) -> str:
        """A text that two states share exactly when they are equal (sorted, no history)."""
        objects = sorted(self.where.items())
        marks = sorted((o, ",".join(sorted(m))) for o, m in self.marks.items() if m)
        return "|".join(
            (
                f"at={self.location or '-'}",
                f"hold={self.holding or '-'}",
                ";".join(f"{o}@{r}" for o, r in objects),
                "open=" + ",".join(sorted(self.opened)),
                "on=" + ",".join(sorted(self.lamps_on)),
                "marks=" + ";".join(f"{o}:{m}" for o, m in marks),
            )
        )

    def key(self) -> str:
        """A short digest of :meth:`canonical` (GiGPO's anchor-state key)."""
        return hashlib.blake2b(self.canonical().encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class Outcome:
    """What one command did: the text the agent reads and whether it was admissible."""

    text: str
    valid: bool


def article(name: str) -> str:
    """``"an apple 1"``, ``"a mug 2"``."""
    return ("an " if name[:1] in "aeiou" else "a ") + name


def listing(names: Iterable[str]) -> str:
    """``"nothing"``, ``"a mug 1"``, ``"a mug 1, and an apple 2"``, ``"a, b, and c"``."""
    items = [article(n) for n in names]
    if not items:
        return "nothing"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + ", and " + items[-1]


_SPACES = re.compile(r"\s+")
_PUT = re.compile(r"^put (.+?) (?:in|on|into|onto|in/on|to) (.+)$")


def normalise(command: str) -> str:
    """Lower-case, single spaces, no trailing full stop; ``put X in Y`` -> ``put X in/on Y``."""
    text = _SPACES.sub(" ", command.strip().lower()).rstrip(".!").strip()
    m = _PUT.match(text)
    if m:
        text = f"put {m.group(1)} in/on {m.group(2)}"
    return text


class World:
    """A home and its state, and the commands that change it."""

    def __init__(self, home: Home, state: State):
        self.home = home
        self.state = state
        self._receptacle_kind = dict(home.receptacles)
        self._object_kind = dict(home.objects)
        self._lamp_at = {name: at for name, _, at in home.lamps}
        self._order = home.object_order

    # ---- what the agent sees ----------------------------------------------------------------

    def overview(self) -> str:
        """The first thing the agent reads: the room and every receptacle in it."""
        names = [name for name, _ in self.home.receptacles]
        return (
            "You are in the middle of a room. Looking quickly around you, you see "
            f"{listing(names)}."
        )

    def accessible(self, receptacle: str) -> bool:
        """Whether what lies in or on ``receptacle`` can be seen and reached."""
        kind = RECEPTACLE_KINDS[self._receptacle_kind[receptacle]]
        return not kind.openable or receptacle in self.state.opened

    def contents(self, receptacle: str) -> list[str]:
        """Lamps standing at ``receptacle``, then its objects, in the room's order."""
        lamps = [name for name, at in self._lamp_at.items() if at == receptacle and name != at]
        things = sorted(
            (o for o, r in self.state.where.items() if r == receptacle), key=self._order.__getitem__
        )
        return lamps + things

    def view(self, receptacle: str) -> str:
        """What the agent sees at ``receptacle``."""
        kind = RECEPTACLE_KINDS[self._receptacle_kind[receptacle]]
        if not kind.holds:
            lamp = "on" if receptacle in self.state.lamps_on else "off"
            return f"The {receptacle} is {lamp}."
        seen = listing(self.contents(receptacle))
        if kind.openable:
            if receptacle not in self.state.opened:
                return f"The {receptacle} is closed."
            return f"The {receptacle} is open. In it, you see {seen}."
        return f"{'In' if kind.inside else 'On'} the {receptacle}, you see {seen}."

    def describe(self, obj: str) -> str:
        marks = [m for m in STATES if m in self.state.marks.get(obj, frozenset())]
        return f"This is a {', '.join(marks) if marks else 'normal'} {obj}."

    # ---- the command set --------------------------------------------------------------------

    def admissible(self) -> list[str]:
        """Every command that does something now, in a stable order."""
        return list(self._effects())

    def _effects(self) -> dict[str, tuple[str, ...]]:
        """Admissible command -> what it does (a verb and its arguments)."""
        st = self.state
        out: dict[str, tuple[str, ...]] = {}
        for name, _ in self.home.receptacles:
            if name != st.location:
                out[f"go to {name}"] = ("go", name)
        here = st.location
        if here is not None:
            kind = RECEPTACLE_KINDS[self._receptacle_kind[here]]
            if kind.openable:
                if here in st.opened:
                    out[f"close {here}"] = ("close", here)
                else:
                    out[f"open {here}"] = ("open", here)
            visible = self.contents(here) if kind.holds and self.accessible(here) else []
            objects = [v for v in visible if v in st.where]
            if st.holding is None:
                for obj in objects:
                    out[f"take {obj} from {here}"] = ("take", obj, here)
            else:
                held = st.holding
                can = OBJECT_KINDS[self._object_kind[held]].can
                if kind.holds and self.accessible(here):
                    out[f"put {held} in/on {here}"] = ("put", held, here)
                if kind.job is not None and kind.job in can:
                    out[f"{kind.job} {held} with {here}"] = (kind.job, held, here)
                if "cut" in can:
                    for obj in objects:
                        if "slice" in OBJECT_KINDS[self._object_kind[obj]].can and "sliced" not in (
                            st.marks.get(obj, frozenset())
                        ):
                            out[f"slice {obj} with {held}"] = ("slice", obj, held)
            for lamp, at in self._lamp_at.items():
                if at == here:
                    out[f"use {lamp}"] = ("use", lamp)
            if kind.holds:
                out[f"examine {here}"] = ("examine", here)
            for obj in objects:
                out[f"examine {obj}"] = ("describe", obj)
        if st.holding is not None:
            out[f"examine {st.holding}"] = ("describe", st.holding)
        out["look"] = ("look",)
        out["inventory"] = ("inventory",)
        return out

    def act(self, command: str) -> Outcome:
        """Apply one command; an inadmissible one changes nothing."""
        effect = self._effects().get(normalise(command))
        if effect is None:
            return Outcome(NOTHING_HAPPENS, False)
        return Outcome(self._apply(effect), True)

    def _apply(self, effect: tuple[str, ...]) -> str:
        st = self.state
        verb, args = effect[0], effect[1:]
        if verb == "go":
            st.location = args[0]
            return f"You arrive at {args[0]}. {self.view(args[0])}"
        if verb == "open":
            st.opened.add(args[0])
            return f"You open the {args[0]}. {self.view(args[0])}"
        if verb == "close":
            st.opened.discard(args[0])
            return f"You close the {args[0]}."
        if verb == "take":
            obj, rec = args
            del st.where[obj]
            st.holding = obj
            return f"You pick up the {obj} from the {rec}."
        if verb == "put":
            obj, rec = args
            st.where[obj] = rec
            st.holding = None
            prep = RECEPTACLE_KINDS[self._receptacle_kind[rec]].preposition
            return f"You put the {obj} {prep} the {rec}."
        if verb in ("clean", "heat", "cool"):
            obj, rec = args
            marks = set(st.marks.get(obj, frozenset()))
            if verb == "clean":
                marks.add("clean")
            else:
                marks.discard("cool" if verb == "heat" else "hot")
                marks.add("hot" if verb == "heat" else "cool")
            st.marks[obj] = frozenset(marks)
            return f"You {verb} the {obj} using the {rec}."
        if verb == "slice":
            obj, knife = args
            st.marks[obj] = st.marks.get(obj, frozenset()) | {"sliced"}
            return f"You slice the {obj} with the {knife}."
        if verb == "use":
            lamp = args[0]
            if lamp in st.lamps_on:
                st.lamps_on.discard(lamp)
                return f"You turn off the {lamp}."
            st.lamps_on.add(lamp)
            return f"You turn on the {lamp}."
        if verb == "examine":
            return self.view(args[0])
        if verb == "describe":
            return self.describe(args[0])
        if verb == "look":
            if st.location is None:
                return self.overview()
            return f"You are at the {st.location}. {self.view(st.location)}"
        assert verb == "inventory", verb
        if st.holding is None:
            return "You are not carrying anything."
        return f"You are carrying: {article(st.holding)}."

"""What a home can hold: room kinds, receptacle kinds and object kinds, with their properties.

The vocabulary follows ALFWorld's (lower-case one-word names numbered per kind, ``cabinet 3``,
``apple 1``); the tables are this project's own. A receptacle kind says whether it opens,
which preposition ``put`` uses, and which appliance job it does (the sink cleans, the
microwave heats, the fridge cools). An object kind says where it plausibly lies and what can
be done to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ReceptacleKind:
    """A kind of furniture or appliance the agent can go to."""

    name: str
    openable: bool = False
    inside: bool = False
    """``put X in`` (True) or ``put X on`` (False), for observation text."""
    job: str | None = None
    """``"clean"``, ``"heat"`` or ``"cool"`` for the appliances that do one."""
    holds: bool = True
    """False for fixtures nothing can be put on (a floor lamp)."""

    @property
    def preposition(self) -> str:
        return "in" if self.inside else "on"


def _kinds(*kinds: ReceptacleKind) -> dict[str, ReceptacleKind]:
    return {k.name: k for k in kinds}


RECEPTACLE_KINDS: Mapping[str, ReceptacleKind] = _kinds(
    ReceptacleKind("cabinet", openable=True, inside=True),
    ReceptacleKind("drawer", openable=True, inside=True),
    ReceptacleKind("safe", openable=True, inside=True),
    ReceptacleKind("fridge", openable=True, inside=True, job="cool"),
    ReceptacleKind("microwave", openable=True, inside=True, job="heat"),
    ReceptacleKind("sinkbasin", inside=True, job="clean"),
    ReceptacleKind("bathtubbasin", inside=True),
    ReceptacleKind("garbagecan", inside=True),
    ReceptacleKind("laundryhamper", inside=True),
    ReceptacleKind("countertop"),
    ReceptacleKind("shelf"),
    ReceptacleKind("stoveburner"),
    ReceptacleKind("coffeemachine"),
    ReceptacleKind("toaster"),
    ReceptacleKind("diningtable"),
    ReceptacleKind("coffeetable"),
    ReceptacleKind("sidetable"),
    ReceptacleKind("desk"),
    ReceptacleKind("dresser"),
    ReceptacleKind("bed"),
    ReceptacleKind("sofa"),
    ReceptacleKind("armchair"),
    ReceptacleKind("ottoman"),
    ReceptacleKind("tvstand"),
    ReceptacleKind("toilet"),
    ReceptacleKind("towelholder"),
    ReceptacleKind("handtowelholder"),
    ReceptacleKind("toiletpaperhanger"),
    ReceptacleKind("floorlamp", holds=False),
)

#: Room kind -> receptacle kind -> (fewest, most) of it. Kinds with a minimum of 1 are in
#: every room of that kind.
ROOMS: Mapping[str, Mapping[str, tuple[int, int]]] = {
    "kitchen": {
        "cabinet": (3, 9),
        "countertop": (1, 3),
        "drawer": (1, 6),
        "fridge": (1, 1),
        "microwave": (1, 1),
        "sinkbasin": (1, 1),
        "stoveburner": (2, 4),
        "garbagecan": (1, 1),
        "coffeemachine": (1, 1),
        "shelf": (0, 3),
        "diningtable": (0, 1),
        "toaster": (0, 1),
    },
    "livingroom": {
        "sofa": (1, 1),
        "coffeetable": (1, 1),
        "sidetable": (1, 2),
        "shelf": (1, 4),
        "drawer": (1, 4),
        "garbagecan": (1, 1),
        "armchair": (0, 2),
        "tvstand": (0, 1),
        "cabinet": (0, 3),
        "dresser": (0, 1),
        "diningtable": (0, 1),
        "ottoman": (0, 1),
        "safe": (0, 1),
    },
    "bedroom": {
        "bed": (1, 1),
        "sidetable": (1, 2),
        "drawer": (2, 6),
        "shelf": (1, 4),
        "garbagecan": (1, 1),
        "desk": (0, 1),
        "dresser": (0, 1),
        "laundryhamper": (0, 1),
        "armchair": (0, 1),
        "cabinet": (0, 2),
        "safe": (0, 1),
    },
    "bathroom": {
        "toilet": (1, 1),
        "sinkbasin": (1, 2),
        "countertop": (1, 1),
        "cabinet": (2, 4),
        "garbagecan": (1, 1),
        "handtowelholder": (1, 1),
        "toiletpaperhanger": (1, 1),
        "bathtubbasin": (0, 1),
        "towelholder": (0, 1),
        "drawer": (0, 3),
        "shelf": (0, 2),
    },
}

#: Lamps per room kind: (lamp kind, receptacle kinds a desk lamp stands on). A floor lamp is
#: its own fixture (a receptacle kind that holds nothing); rooms without a lamp have none.
LAMPS: Mapping[str, tuple[str, ...]] = {
    "livingroom": ("desklamp", "floorlamp"),
    "bedroom": ("desklamp", "floorlamp"),
}
DESKLAMP_STANDS = ("desk", "sidetable", "dresser")


@dataclass(frozen=True)
class ObjectKind:
    """A kind of small object the agent can carry."""

    name: str
    rooms: tuple[str, ...]
    places: tuple[str, ...]
    """Receptacle kinds it plausibly lies on or in (where it spawns; where tasks send it)."""
    can: frozenset[str] = frozenset()
    """What can be done to it: ``clean``, ``heat``, ``cool``, ``slice``, ``light`` (examined
    under a lamp), ``cut`` (it slices other things)."""


K, L, B, T = "kitchen", "livingroom", "bedroom", "bathroom"
_FOOD = frozenset({"clean", "heat", "cool", "slice"})
_WARE = frozenset({"clean", "heat", "cool"})
_TABLE = ("countertop", "diningtable")


def _objects(*kinds: ObjectKind) -> dict[str, ObjectKind]:
    return {k.name: k for k in kinds}


OBJECT_KINDS: Mapping[str, ObjectKind] = _objects(
    # kitchen food
    ObjectKind("apple", (K,), (*_TABLE, "fridge", "garbagecan", "sinkbasin"), _FOOD),
    ObjectKind("bread", (K,), (*_TABLE, "fridge", "cabinet"), frozenset({"heat", "cool", "slice"})),
    ObjectKind("lettuce", (K,), (*_TABLE, "fridge", "sinkbasin"), _FOOD),
    ObjectKind("potato", (K,), (*_TABLE, "fridge", "garbagecan", "sinkbasin", "microwave"), _FOOD),
    ObjectKind("tomato", (K,), (*_TABLE, "fridge", "garbagecan", "sinkbasin"), _FOOD),
    ObjectKind("egg", (K,), (*_TABLE, "fridge", "garbagecan", "sinkbasin"), _WARE),
    # kitchen ware
    ObjectKind(
        "mug",
        (K, B),
        (*_TABLE, "cabinet", "coffeemachine", "shelf", "sinkbasin", "desk", "sidetable"),
        _WARE | {"light"},
    ),
    ObjectKind(
        "cup", (K,), (*_TABLE, "cabinet", "fridge", "sinkbasin", "shelf", "microwave"), _WARE
    ),
    ObjectKind(
        "bowl",
        (K, L),
        (*_TABLE, "cabinet", "fridge", "shelf", "sinkbasin", "coffeetable", "sidetable"),
        frozenset({"clean", "cool", "light"}),
    ),
    ObjectKind("plate", (K,), (*_TABLE, "cabinet", "fridge", "shelf", "sinkbasin"), _WARE),
    ObjectKind(
        "pan",
        (K,),
        ("stoveburner", "countertop", "cabinet", "sinkbasin"),
        frozenset({"clean", "cool"}),
    ),
    ObjectKind(
        "pot",
        (K,),
        ("stoveburner", "countertop", "cabinet", "fridge", "sinkbasin"),
        frozenset({"clean", "cool"}),
    ),
    ObjectKind(
        "kettle", (K,), ("stoveburner", "countertop", "cabinet", "shelf"), frozenset({"clean"})
    ),
    ObjectKind("knife", (K,), (*_TABLE, "drawer", "sinkbasin"), frozenset({"clean", "cut"})),
    ObjectKind("butterknife", (K,), (*_TABLE, "drawer"), frozenset({"clean", "cut"})),
    ObjectKind("fork", (K,), (*_TABLE, "drawer", "sinkbasin"), frozenset({"clean"})),
    ObjectKind("spoon", (K,), (*_TABLE, "drawer", "sinkbasin"), frozenset({"clean"})),
    ObjectKind("spatula", (K,), (*_TABLE, "drawer", "sinkbasin"), frozenset({"clean"})),
    ObjectKind("ladle", (K,), ("countertop", "drawer", "sinkbasin"), frozenset({"clean"})),
    ObjectKind("saltshaker", (K,), (*_TABLE, "cabinet", "shelf", "drawer")),
    ObjectKind("peppershaker", (K,), (*_TABLE, "cabinet", "shelf", "drawer")),
    ObjectKind("winebottle", (K,), (*_TABLE, "fridge", "cabinet", "shelf"), frozenset({"cool"})),
    ObjectKind(
        "dishsponge",
        (K, T),
        ("countertop", "sinkbasin", "cabinet", "drawer", "toilet"),
        frozenset({"clean"}),
    ),
    ObjectKind("soapbottle", (K, T), ("countertop", "cabinet", "shelf", "toilet", "garbagecan")),
    # living room and bedroom things, examined under a lamp
    ObjectKind(
        "book",
        (L, B),
        ("bed", "desk", "sidetable", "shelf", "coffeetable", "sofa", "dresser", "drawer"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "cd",
        (L, B),
        ("desk", "sidetable", "shelf", "drawer", "dresser", "garbagecan", "safe"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "cellphone",
        (L, B),
        ("bed", "desk", "sidetable", "sofa", "dresser", "drawer", "armchair"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "creditcard",
        (L, B),
        (
            "desk",
            "sidetable",
            "shelf",
            "drawer",
            "dresser",
            "sofa",
            "armchair",
            "coffeetable",
            "safe",
        ),
        frozenset({"light"}),
    ),
    ObjectKind(
        "keychain",
        (L, B),
        ("sidetable", "shelf", "drawer", "dresser", "coffeetable", "safe", "sofa", "armchair"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "pen",
        (L, B),
        ("desk", "sidetable", "shelf", "drawer", "dresser", "garbagecan"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "pencil", (L, B), ("desk", "sidetable", "shelf", "drawer", "dresser"), frozenset({"light"})
    ),
    ObjectKind("alarmclock", (B,), ("desk", "sidetable", "shelf", "dresser"), frozenset({"light"})),
    ObjectKind(
        "remotecontrol",
        (L,),
        ("sofa", "armchair", "coffeetable", "sidetable", "tvstand", "ottoman", "dresser"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "laptop",
        (L, B),
        ("bed", "desk", "sofa", "coffeetable", "diningtable", "dresser"),
        frozenset({"light"}),
    ),
    ObjectKind("pillow", (L, B), ("bed", "sofa", "armchair", "ottoman")),
    ObjectKind(
        "statue",
        (L,),
        ("shelf", "coffeetable", "sidetable", "dresser", "diningtable", "tvstand"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "vase",
        (L,),
        ("shelf", "coffeetable", "sidetable", "diningtable", "tvstand", "dresser"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "watch",
        (L, B),
        ("sidetable", "shelf", "dresser", "drawer", "coffeetable", "safe"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "newspaper",
        (L,),
        ("sofa", "armchair", "coffeetable", "sidetable", "ottoman", "garbagecan"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "box",
        (L,),
        ("coffeetable", "sidetable", "shelf", "sofa", "dresser", "diningtable"),
        frozenset({"light"}),
    ),
    ObjectKind(
        "tissuebox",
        (L, B, T),
        ("coffeetable", "sidetable", "shelf", "dresser", "toilet", "countertop"),
    ),
    ObjectKind(
        "cloth",
        (B, T),
        (
            "drawer",
            "laundryhamper",
            "countertop",
            "cabinet",
            "bathtubbasin",
            "sinkbasin",
            "garbagecan",
        ),
        frozenset({"clean"}),
    ),
    # bathroom things
    ObjectKind(
        "soapbar",
        (T,),
        ("countertop", "sinkbasin", "bathtubbasin", "toilet", "cabinet", "garbagecan"),
        frozenset({"clean"}),
    ),
    ObjectKind(
        "toiletpaper",
        (T,),
        ("toilet", "toiletpaperhanger", "cabinet", "countertop", "drawer", "shelf", "garbagecan"),
    ),
    ObjectKind("towel", (T,), ("towelholder", "countertop", "cabinet", "bathtubbasin")),
    ObjectKind("handtowel", (T,), ("handtowelholder", "countertop", "cabinet")),
    ObjectKind(
        "candle", (T,), ("countertop", "toilet", "shelf", "cabinet", "bathtubbasin", "drawer")
    ),
    ObjectKind(
        "spraybottle", (T,), ("countertop", "toilet", "cabinet", "shelf", "garbagecan", "drawer")
    ),
    ObjectKind("scrubbrush", (T,), ("toilet", "cabinet", "countertop")),
)

#: How many object kinds a room of each kind holds (fewest, most).
OBJECT_KIND_COUNT: Mapping[str, tuple[int, int]] = {
    "kitchen": (10, 16),
    "livingroom": (7, 11),
    "bedroom": (7, 11),
    "bathroom": (6, 9),
}

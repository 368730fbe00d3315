"""The household world's receptacle rules, each pinned so that a small slip fails (issue 38).

What the rules are (simulators/household/world.py): you act only at the receptacle you stand
at; cabinets, drawers, safes, fridges and microwaves open and close, and while closed they
hide what is in them (it can be neither seen, taken, nor added to); you carry one object
at a time, take it from where you see it and put it in or on any receptacle that holds
things and is reachable; a floor lamp holds nothing; lamps standing at a receptacle are
listed before its objects, and objects come in the room's order. Every admissible command
list below is exact: a command offered too many or too few fails it.
"""

from __future__ import annotations

import pytest
from agentgym.simulators.household import Home, State, World
from agentgym.simulators.household.world import NOTHING_HAPPENS, normalise

HOME = Home(
    layout=0,
    room="kitchen",
    receptacles=(
        ("countertop 1", "countertop"),  # things lie on it
        ("cabinet 1", "cabinet"),  # opens; things lie in it
        ("fridge 1", "fridge"),  # opens; cools
        ("sinkbasin 1", "sinkbasin"),  # things lie in it, always open; cleans
        ("sidetable 1", "sidetable"),  # a desk lamp stands on it
        ("floorlamp 1", "floorlamp"),  # holds nothing
    ),
    objects=(("mug 1", "mug"), ("potato 1", "potato"), ("knife 1", "knife"), ("bread 1", "bread")),
    lamps=(("desklamp 1", "desklamp", "sidetable 1"), ("floorlamp 1", "floorlamp", "floorlamp 1")),
)
START = {
    "mug 1": "cabinet 1",
    "potato 1": "countertop 1",
    "knife 1": "sidetable 1",
    "bread 1": "countertop 1",
}
RECEPTACLES = [name for name, _ in HOME.receptacles]


def world() -> World:
    return World(HOME, State.start(HOME, START))


def run(w: World, *commands: str) -> list[str]:
    out = []
    for command in commands:
        outcome = w.act(command)
        assert outcome.valid, (command, outcome.text, w.admissible())
        out.append(outcome.text)
    return out


def refused(w: World, command: str) -> None:
    """``command`` is not admissible: "Nothing happens." and the state is unchanged."""
    before = w.state.canonical()
    assert command not in w.admissible()
    outcome = w.act(command)
    assert (outcome.valid, outcome.text) == (False, NOTHING_HAPPENS)
    assert w.state.canonical() == before


def go_elsewhere(here: str | None) -> list[str]:
    return [f"go to {name}" for name in RECEPTACLES if name != here]


def test_in_the_middle_of_the_room_you_can_only_walk_look_and_take_stock():
    w = world()
    assert w.admissible() == [*go_elsewhere(None), "look", "inventory"]
    assert run(w, "look", "inventory") == [
        "You are in the middle of a room. Looking quickly around you, you see a countertop 1, "
        "a cabinet 1, a fridge 1, a sinkbasin 1, a sidetable 1, and a floorlamp 1.",
        "You are not carrying anything.",
    ]
    for command in ("open cabinet 1", "take potato 1 from countertop 1", "examine countertop 1"):
        refused(w, command)  # only at the receptacle you stand at


def test_a_closed_receptacle_hides_its_contents_and_opening_shows_them():
    w = world()
    assert run(w, "go to cabinet 1") == ["You arrive at cabinet 1. The cabinet 1 is closed."]
    assert w.admissible() == [
        *go_elsewhere("cabinet 1"),
        "open cabinet 1",
        "examine cabinet 1",
        "look",
        "inventory",
    ]
    assert not w.accessible("cabinet 1")
    assert run(w, "examine cabinet 1", "look") == [
        "The cabinet 1 is closed.",
        "You are at the cabinet 1. The cabinet 1 is closed.",
    ]
    refused(w, "take mug 1 from cabinet 1")
    refused(w, "examine mug 1")
    refused(w, "close cabinet 1")  # already closed
    assert run(w, "open cabinet 1") == [
        "You open the cabinet 1. The cabinet 1 is open. In it, you see a mug 1."
    ]
    assert w.state.opened == {"cabinet 1"} and w.accessible("cabinet 1")
    refused(w, "open cabinet 1")  # already open
    assert w.admissible() == [
        *go_elsewhere("cabinet 1"),
        "close cabinet 1",
        "take mug 1 from cabinet 1",
        "examine cabinet 1",
        "examine mug 1",
        "look",
        "inventory",
    ]
    assert run(w, "close cabinet 1") == ["You close the cabinet 1."]
    assert w.state.opened == set() and not w.accessible("cabinet 1")
    refused(w, "take mug 1 from cabinet 1")
    assert w.state.where["mug 1"] == "cabinet 1"  # hidden, not gone


def test_receptacles_that_do_not_open_are_always_reachable():
    w = world()
    for name in ("countertop 1", "sinkbasin 1", "sidetable 1"):
        assert w.accessible(name)
    run(w, "go to countertop 1")
    refused(w, "open countertop 1")
    refused(w, "close countertop 1")
    assert w.admissible() == [
        *go_elsewhere("countertop 1"),
        "take potato 1 from countertop 1",
        "take bread 1 from countertop 1",
        "examine countertop 1",
        "examine potato 1",
        "examine bread 1",
        "look",
        "inventory",
    ]


def test_take_carries_one_object_and_put_places_it_where_you_stand():
    w = world()
    assert run(w, "go to cabinet 1", "open cabinet 1", "take mug 1 from cabinet 1") == [
        "You arrive at cabinet 1. The cabinet 1 is closed.",
        "You open the cabinet 1. The cabinet 1 is open. In it, you see a mug 1.",
        "You pick up the mug 1 from the cabinet 1.",
    ]
    assert w.state.holding == "mug 1" and "mug 1" not in w.state.where
    assert run(w, "examine cabinet 1", "inventory") == [
        "The cabinet 1 is open. In it, you see nothing.",
        "You are carrying: a mug 1.",
    ]
    assert w.admissible() == [
        *go_elsewhere("cabinet 1"),
        "close cabinet 1",
        "put mug 1 in/on cabinet 1",
        "examine cabinet 1",
        "examine mug 1",
        "look",
        "inventory",
    ]
    run(w, "go to countertop 1")
    refused(w, "take potato 1 from countertop 1")  # hands full
    refused(w, "put mug 1 in/on cabinet 1")  # not where you stand
    assert run(w, "put mug 1 on countertop 1") == ["You put the mug 1 on the countertop 1."]
    assert w.state.holding is None and w.state.where["mug 1"] == "countertop 1"
    assert run(w, "examine countertop 1") == [
        "On the countertop 1, you see a mug 1, a potato 1, and a bread 1."  # the room's order
    ]
    refused(w, "put mug 1 in/on countertop 1")  # nothing in hand
    assert run(w, "take bread 1 from countertop 1", "go to sinkbasin 1") == [
        "You pick up the bread 1 from the countertop 1.",
        "You arrive at sinkbasin 1. In the sinkbasin 1, you see nothing.",
    ]
    assert run(w, "put bread 1 in sinkbasin 1", "look") == [
        "You put the bread 1 in the sinkbasin 1.",
        "You are at the sinkbasin 1. In the sinkbasin 1, you see a bread 1.",
    ]


def test_a_closed_receptacle_takes_nothing_in_until_opened():
    w = world()
    run(w, "go to countertop 1", "take potato 1 from countertop 1", "go to fridge 1")
    # an appliance works closed; putting in needs it open
    assert w.admissible() == [
        *go_elsewhere("fridge 1"),
        "open fridge 1",
        "cool potato 1 with fridge 1",
        "examine fridge 1",
        "examine potato 1",
        "look",
        "inventory",
    ]
    refused(w, "put potato 1 in/on fridge 1")
    assert run(w, "open fridge 1", "put potato 1 in fridge 1", "close fridge 1") == [
        "You open the fridge 1. The fridge 1 is open. In it, you see nothing.",
        "You put the potato 1 in the fridge 1.",
        "You close the fridge 1.",
    ]
    assert w.state.where["potato 1"] == "fridge 1" and w.state.holding is None
    assert run(w, "examine fridge 1") == ["The fridge 1 is closed."]
    refused(w, "take potato 1 from fridge 1")
    refused(w, "examine potato 1")
    assert run(w, "open fridge 1") == [
        "You open the fridge 1. The fridge 1 is open. In it, you see a potato 1."
    ]


def test_lamps_come_first_and_are_not_objects_and_a_floor_lamp_holds_nothing():
    w = world()
    assert w.contents("sidetable 1") == ["desklamp 1", "knife 1"]
    assert w.contents("floorlamp 1") == []  # a floor lamp stands at itself, not on itself
    assert w.contents("countertop 1") == ["potato 1", "bread 1"]  # room order, not a-z
    assert run(w, "go to sidetable 1") == [
        "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1, and a knife 1."
    ]
    assert w.admissible() == [
        *go_elsewhere("sidetable 1"),
        "take knife 1 from sidetable 1",
        "use desklamp 1",
        "examine sidetable 1",
        "examine knife 1",
        "look",
        "inventory",
    ]
    refused(w, "take desklamp 1 from sidetable 1")
    run(w, "take knife 1 from sidetable 1", "go to floorlamp 1")
    assert w.admissible() == [
        *go_elsewhere("floorlamp 1"),
        "use floorlamp 1",
        "examine knife 1",
        "look",
        "inventory",
    ]
    refused(w, "put knife 1 in/on floorlamp 1")
    refused(w, "examine floorlamp 1")
    assert run(w, "look", "use floorlamp 1", "look", "use floorlamp 1") == [
        "You are at the floorlamp 1. The floorlamp 1 is off.",
        "You turn on the floorlamp 1.",
        "You are at the floorlamp 1. The floorlamp 1 is on.",
        "You turn off the floorlamp 1.",
    ]
    assert w.state.lamps_on == set()


def test_a_knife_slices_what_you_see_here_and_appliances_need_you_at_them():
    w = world()
    run(w, "go to sidetable 1", "take knife 1 from sidetable 1", "go to countertop 1")
    assert w.admissible() == [
        *go_elsewhere("countertop 1"),
        "put knife 1 in/on countertop 1",
        "slice potato 1 with knife 1",
        "slice bread 1 with knife 1",
        "examine countertop 1",
        "examine potato 1",
        "examine bread 1",
        "examine knife 1",
        "look",
        "inventory",
    ]
    assert run(w, "slice bread 1 with knife 1") == ["You slice the bread 1 with the knife 1."]
    assert w.state.marks["bread 1"] == {"sliced"} and w.state.where["bread 1"] == "countertop 1"
    refused(w, "slice bread 1 with knife 1")
    refused(w, "clean knife 1 with sinkbasin 1")  # the sink is elsewhere
    run(w, "go to sinkbasin 1")
    assert "clean knife 1 with sinkbasin 1" in w.admissible()
    refused(w, "slice potato 1 with knife 1")  # the potato is not here
    # an appliance offers its job only for what can take it: a knife is not cooled
    run(w, "go to fridge 1")
    assert w.admissible() == [
        *go_elsewhere("fridge 1"),
        "open fridge 1",
        "examine fridge 1",
        "examine knife 1",
        "look",
        "inventory",
    ]
    refused(w, "cool knife 1 with fridge 1")


def test_go_to_moves_you_and_shows_the_receptacle():
    w = world()
    assert run(w, "go to sinkbasin 1") == [
        "You arrive at sinkbasin 1. In the sinkbasin 1, you see nothing."
    ]
    assert w.state.location == "sinkbasin 1"
    refused(w, "go to sinkbasin 1")  # already here
    refused(w, "go to cupboard 9")  # not in this room


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("put mug 1 in cabinet 1", "put mug 1 in/on cabinet 1"),
        ("put mug 1 on cabinet 1", "put mug 1 in/on cabinet 1"),
        ("Put Mug 1 Into Cabinet 1!", "put mug 1 in/on cabinet 1"),
        ("put mug 1 onto cabinet 1", "put mug 1 in/on cabinet 1"),
        ("put mug 1 to cabinet 1", "put mug 1 in/on cabinet 1"),
        ("  go   to cabinet 1 . ", "go to cabinet 1"),
        ("take mug 1 from cabinet 1", "take mug 1 from cabinet 1"),
        ("put mug 1 under cabinet 1", "put mug 1 under cabinet 1"),
    ],
)
def test_normalise_reads_every_put_preposition_as_in_on(typed: str, meant: str):
    assert normalise(typed) == meant


def test_an_inadmissible_command_is_reported_as_such():
    w = world()
    outcome = w.act("go to countertop 1")
    assert outcome.valid is True and outcome.text.startswith("You arrive at countertop 1.")
    outcome = w.act("take mug 1 from cabinet 1")
    assert outcome.valid is False and outcome.text == NOTHING_HAPPENS

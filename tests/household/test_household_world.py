"""The household simulator: commands, object states, goals and the generator's guarantees."""

from __future__ import annotations

import pytest
from agentgym.simulators.household import (
    TASK_TYPES,
    Goal,
    Home,
    State,
    World,
    generate_home,
    generate_task,
)
from agentgym.simulators.household.world import listing, normalise

HOME = Home(
    layout=0,
    room="kitchen",
    receptacles=(
        ("countertop 1", "countertop"),
        ("cabinet 1", "cabinet"),
        ("fridge 1", "fridge"),
        ("microwave 1", "microwave"),
        ("sinkbasin 1", "sinkbasin"),
        ("sidetable 1", "sidetable"),
    ),
    objects=(("apple 1", "apple"), ("knife 1", "knife"), ("mug 1", "mug"), ("mug 2", "mug")),
    lamps=(("desklamp 1", "desklamp", "sidetable 1"),),
)
START = {
    "apple 1": "countertop 1",
    "knife 1": "countertop 1",
    "mug 1": "cabinet 1",
    "mug 2": "sidetable 1",
}


def world() -> World:
    return World(HOME, State.start(HOME, START))


def run(w: World, *commands: str) -> list[str]:
    out = []
    for c in commands:
        outcome = w.act(c)
        assert outcome.valid, (c, outcome.text, w.admissible())
        out.append(outcome.text)
    return out


def test_closed_receptacles_hide_their_contents_until_opened():
    w = world()
    assert run(w, "go to cabinet 1") == ["You arrive at cabinet 1. The cabinet 1 is closed."]
    assert "take mug 1 from cabinet 1" not in w.admissible()
    assert w.act("take mug 1 from cabinet 1").text == "Nothing happens."
    assert run(w, "open cabinet 1") == [
        "You open the cabinet 1. The cabinet 1 is open. In it, you see a mug 1."
    ]
    assert "take mug 1 from cabinet 1" in w.admissible()
    run(w, "close cabinet 1")
    assert "cabinet 1" not in w.state.opened and "open cabinet 1" in w.admissible()


def test_one_object_at_a_time_and_put_uses_the_right_preposition():
    w = world()
    run(w, "go to countertop 1", "take apple 1 from countertop 1")
    assert w.state.holding == "apple 1" and "apple 1" not in w.state.where
    assert not any(c.startswith("take ") for c in w.admissible())  # hands full
    assert run(w, "go to fridge 1", "open fridge 1", "put apple 1 in fridge 1") == [
        "You arrive at fridge 1. The fridge 1 is closed.",
        "You open the fridge 1. The fridge 1 is open. In it, you see nothing.",
        "You put the apple 1 in the fridge 1.",
    ]
    run(w, "take apple 1 from fridge 1", "go to countertop 1")
    assert run(w, "Put  Apple 1 ON countertop 1.") == ["You put the apple 1 on the countertop 1."]
    assert w.state.where["apple 1"] == "countertop 1" and w.state.holding is None


def test_appliances_set_states_and_heat_and_cool_undo_each_other():
    w = world()
    run(w, "go to countertop 1", "take apple 1 from countertop 1", "go to sinkbasin 1")
    assert run(w, "clean apple 1 with sinkbasin 1") == [
        "You clean the apple 1 using the sinkbasin 1."
    ]
    run(w, "go to microwave 1", "heat apple 1 with microwave 1")
    assert w.state.marks["apple 1"] == {"clean", "hot"}
    run(w, "go to fridge 1", "cool apple 1 with fridge 1")
    assert w.state.marks["apple 1"] == {"clean", "cool"}
    assert run(w, "examine apple 1") == ["This is a cool, clean apple 1."]
    # an appliance only offers its own job, and only for objects that can take it
    assert "heat apple 1 with fridge 1" not in w.admissible()
    assert w.act("clean apple 1 with fridge 1").valid is False


def test_knives_slice_food_and_lamps_toggle():
    w = world()
    run(w, "go to countertop 1", "take knife 1 from countertop 1")
    assert "slice apple 1 with knife 1" in w.admissible()
    run(w, "slice apple 1 with knife 1")
    assert "sliced" in w.state.marks["apple 1"]
    assert "slice apple 1 with knife 1" not in w.admissible()  # once is enough
    assert run(w, "go to sidetable 1") == [
        "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1, and a mug 2."
    ]
    assert run(w, "use desklamp 1", "use desklamp 1") == [
        "You turn on the desklamp 1.",
        "You turn off the desklamp 1.",
    ]
    assert "use desklamp 1" not in World(HOME, State.start(HOME, START)).admissible()


@pytest.mark.parametrize(
    "command", ["", "go to", "go to cabinet 9", "take apple 1", "dance", "go to countertop 1 now"]
)
def test_inadmissible_commands_change_nothing(command):
    w = world()
    before = w.state.canonical()
    outcome = w.act(command)
    assert (outcome.valid, outcome.text) == (False, "Nothing happens.")
    assert w.state.canonical() == before


def test_every_admissible_command_is_accepted_and_nothing_else_is():
    w = world()
    run(w, "go to countertop 1")
    for command in w.admissible():
        assert World(HOME, w.state.copy()).act(command).valid, command
    assert not World(HOME, w.state.copy()).act("go to countertop 1").valid  # already here


def test_normalise_and_listing():
    assert normalise("  PUT mug 1   into cabinet 2. ") == "put mug 1 in/on cabinet 2"
    assert normalise("put mug 1 in/on cabinet 2") == "put mug 1 in/on cabinet 2"
    assert listing([]) == "nothing"
    assert listing(["egg 1"]) == "an egg 1"
    assert listing(["egg 1", "cup 2", "mug 1"]) == "an egg 1, a cup 2, and a mug 1"


MUG_TO_COUNTERTOP = [
    "go to sidetable 1",
    "take mug 2 from sidetable 1",
    "go to countertop 1",
    "put mug 2 in/on countertop 1",
]
HEAT_APPLE_AND_PLACE = [
    "go to countertop 1",
    "take apple 1 from countertop 1",
    "go to microwave 1",
    "heat apple 1 with microwave 1",
    "go to countertop 1",
    "put apple 1 in/on countertop 1",
]


@pytest.mark.parametrize(
    ("goal", "commands", "holds"),
    [
        (
            Goal("pick", "mug", target="countertop"),
            MUG_TO_COUNTERTOP,
            True,
        ),
        (
            Goal("clean", "mug", target="countertop"),
            MUG_TO_COUNTERTOP,
            False,
        ),
        (
            Goal("two", "mug", target="countertop"),
            MUG_TO_COUNTERTOP,
            False,
        ),
        (
            Goal("light", "mug", lamp="desklamp"),
            ["go to sidetable 1", "take mug 2 from sidetable 1", "use desklamp 1"],
            True,
        ),
        (Goal("light", "mug", lamp="desklamp"), ["go to sidetable 1", "use desklamp 1"], False),
        (
            Goal("light", "mug", lamp="desklamp"),
            [
                "go to sidetable 1",
                "take mug 2 from sidetable 1",
                "use desklamp 1",
                "go to countertop 1",
            ],
            False,
        ),
        (
            Goal("heat", "apple", target="countertop"),
            HEAT_APPLE_AND_PLACE,
            True,
        ),
        (
            Goal("cool", "apple", target="countertop"),
            HEAT_APPLE_AND_PLACE,
            False,
        ),
    ],
)
def test_goal_predicates(goal, commands, holds):
    w = world()
    run(w, *commands)
    assert goal.satisfied(HOME, w.state) is holds


def test_two_objects_must_share_one_receptacle():
    home = Home(
        0,
        "kitchen",
        (("shelf 1", "shelf"), ("shelf 2", "shelf"), ("countertop 1", "countertop")),
        (("cup 1", "cup"), ("cup 2", "cup")),
        (),
    )
    goal = Goal("two", "cup", target="shelf")
    apart = State.start(home, {"cup 1": "shelf 1", "cup 2": "shelf 2"})
    together = State.start(home, {"cup 1": "shelf 2", "cup 2": "shelf 2"})
    assert not goal.satisfied(home, apart) and goal.satisfied(home, together)


def test_generated_tasks_are_deterministic_and_start_unsolved():
    for layout in (0, 1, 3, 4, 17):
        home = generate_home(layout)
        assert home == generate_home.__wrapped__(layout)
        for slot in range(5):
            task = generate_task(home, slot)
            assert task == generate_task(home, slot)
            assert not task.goal.satisfied(home, task.start_state())
    assert generate_task(generate_home(0), 0) != generate_task(generate_home(0), 1)


def test_instructions_come_in_several_phrasings_per_type():
    seen: dict[str, set[str]] = {t: set() for t in TASK_TYPES}
    for layout in range(25):
        home = generate_home(layout)
        for slot in range(12):
            task = generate_task(home, slot)
            first_words = " ".join(task.instruction.split()[:2])
            seen[task.goal.type].add(first_words)
    assert all(len(forms) >= 2 for forms in seen.values()), seen

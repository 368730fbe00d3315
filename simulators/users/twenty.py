"""Twenty questions: the user thinks of a thing; the agent asks yes/no questions and guesses.

The secret is one of 26 things described by 18 yes/no attributes (every thing has a
distinct attribute vector). A question earns an answer about at most one attribute (or one
named thing); two or more at once is question-stuffing. The core tracks which things are
still consistent with the answers given and rewards the information each answer gives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from agentgym.simulators.users.core import Decision, Dialogue, Opening, ScriptedUser, ToolResult
from agentgym.simulators.users.text import mentioned
from agentgym.simulators.users.wording import WordingBackend

#: attribute -> (keywords, the question an oracle asks)
ATTRIBUTES: dict[str, tuple[tuple[str, ...], str]] = {
    "alive": (("alive", "living", "organism", "grow"), "Is it a living thing?"),
    "animal": (("animal", "creature"), "Is it an animal?"),
    "mammal": (("mammal",), "Is it a mammal?"),
    "bird": (("bird", "feather"), "Is it a bird?"),
    "water": (("water", "sea", "ocean", "swim", "aquatic"), "Does it live in water?"),
    "flies": (("fly", "flies", "flie", "flying", "wing"), "Can it fly?"),
    "pet": (("pet", "domestic", "tame"), "Is it kept as a pet?"),
    "big": (("big", "large", "huge", "bigger", "larger"), "Is it bigger than a person?"),
    "wild": (("wild",), "Is it found in the wild?"),
    "food": (("eat", "edible", "food", "eaten"), "Do people eat it?"),
    "electronic": (
        ("electronic", "electric", "electricity", "battery", "plug", "device"),
        "Is it electronic?",
    ),
    "metal": (("metal", "metallic", "steel", "iron"), "Is it made of metal?"),
    "household": (("home", "house", "household", "kitchen"), "Is it found in most homes?"),
    "wheels": (("wheel",), "Does it have wheels?"),
    "round": (("round", "circular", "sphere", "spherical"), "Is it round?"),
    "sport": (("sport", "game", "play", "exercise"), "Is it used for sport?"),
    "pocket": (("pocket", "tiny"), "Does it fit in a pocket?"),
    "wood": (("wood", "wooden", "timber"), "Is it made of wood?"),
}

THINGS: dict[str, frozenset[str]] = {
    name: frozenset(attrs.split())
    for name, attrs in {
        "dog": "alive animal mammal pet household",
        "elephant": "alive animal mammal big wild",
        "eagle": "alive animal bird flies wild",
        "penguin": "alive animal bird water wild",
        "shark": "alive animal water big wild",
        "goldfish": "alive animal water pet household",
        "parrot": "alive animal bird flies pet",
        "cow": "alive animal mammal big food",
        "whale": "alive animal mammal water big wild",
        "bee": "alive animal flies wild",
        "apple": "alive food round",
        "oak tree": "alive big wild wood",
        "carrot": "alive food",
        "laptop": "electronic household",
        "phone": "electronic household pocket",
        "bicycle": "metal wheels sport",
        "car": "metal wheels big",
        "airplane": "metal wheels big flies",
        "football": "round sport",
        "spoon": "metal household",
        "coin": "metal round pocket",
        "key": "metal pocket household",
        "television": "electronic household big",
        "chair": "wood household",
        "pencil": "wood pocket",
        "skateboard": "wood wheels sport",
    }.items()
}
assert len(set(THINGS.values())) == len(THINGS), "attribute vectors must be distinct"

NAMES = tuple(THINGS)

#: The user's opening line, the same for every task (it must not reveal the secret).
OPENING = "I'm thinking of something. Ask me yes-or-no questions!"


class GuessingUser(ScriptedUser):
    """Answers yes/no questions about a secret thing, one attribute per question."""

    def __init__(self, secret: str, *, wording: WordingBackend | None = None, patience: int = 8):
        super().__init__(
            "Someone playing twenty questions; answers only yes or no.",
            wording=wording,
            patience=patience,
        )
        self.secret = secret
        self.asked: dict[str, bool] = {}
        self.named: set[str] = set()

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.asked = {}
        self.named = set()

    def candidates(self) -> list[str]:
        """Things consistent with every answer given so far."""
        out = []
        for name, attrs in THINGS.items():
            if all((a in attrs) == v for a, v in self.asked.items()) and not (
                name in self.named and name != self.secret
            ):
                out.append(name)
        return out

    def _decide(self, message: str, toks: list[str]) -> Decision:
        words = set(toks)
        names = mentioned(message, NAMES)
        attrs = [a for a, (kw, _) in ATTRIBUTES.items() if words.intersection(kw)]
        if len(names) + len(attrs) > 1:
            return Decision(
                "One question at a time, please. I can only answer yes or no.",
                scores={"penalty": -1.0},
                flags=("stuffing",),
            )
        if not names and not attrs:
            return Decision(
                self.choose(
                    (
                        "Maybe. Ask me a yes-or-no question about it.",
                        "I'm not sure. I can only answer yes or no.",
                    )
                ),
                flags=("no_topic",),
            )
        before = len(self.candidates())
        if names:
            name = names[0]
            yes = name == self.secret
            key = f"name:{name}"
            repeat = name in self.named
            self.named.add(name)
            text = f"Yes! It is the {name}." if yes else "No."
        else:
            attr = attrs[0]
            yes = attr in THINGS[self.secret]
            key = f"attr:{attr}"
            repeat = attr in self.asked
            self.asked[attr] = yes
            text = (
                self.choose(("Yes.", "Yes, it is."))
                if yes
                else self.choose(("No.", "No, it isn't."))
            )
        if repeat:
            return Decision(
                "I already told you: " + text, scores={"penalty": -0.25}, flags=("repeat",)
            )
        after = len(self.candidates())
        gain = math.log2(before / max(after, 1)) / math.log2(len(THINGS))
        return Decision(text, revealed=(key,), scores={"info": gain})

    def hidden_values(self) -> tuple[str, ...]:
        return () if self.secret in self.named else (self.secret,)

    def released_values(self) -> tuple[str, ...]:
        return (self.secret,) if self.secret in self.named else ()

    def state(self) -> Any:
        return {
            "stopped": self.stopped,
            "asked": sorted(self.asked.items()),
            "named": sorted(self.named),
        }


class TwentyQuestionsDialogue(Dialogue):
    """Guess the secret thing with yes/no questions."""

    search_help = "search(query): list the things the secret may be (optionally filtered)."
    answer_help = "answer(answer): your final guess, the name of one thing. Ends the game."

    def start(self, task_seed: int, user_seed: int) -> Opening:
        rng = np.random.default_rng(task_seed)
        self.secret = NAMES[int(rng.integers(len(NAMES)))]
        self.user = GuessingUser(self.secret, wording=self.wording, patience=10)
        self.user.reset(seed=user_seed)
        self.searched = False
        self.guess: str | None = None
        self.success = self.done = False
        # One wording for every task: a wording drawn per episode would come from the reset
        # seed, and on a few training seeds it would tell the tasks (and secrets) apart.
        text = OPENING
        instruction = (
            "The user is thinking of a thing. Ask yes/no questions (one per turn) "
            "and answer with its name."
        )
        return Opening(instruction, text)

    def search(self, query: str) -> ToolResult:
        first = not self.searched
        self.searched = True
        hits = mentioned(query, NAMES) or list(NAMES)
        return ToolResult(
            "Possible things: " + ", ".join(hits) + ".", scores={"search": 1.0 if first else 0.0}
        )

    def answer(self, answer: str) -> ToolResult:
        if self.done:  # one guess per game: a later one neither scores nor changes the verdict
            return ToolResult(
                "User: The game is over.",
                scores={"outcome": 0.0},
                stop=True,
                success=self.success,
                valid=False,
            )
        named = mentioned(answer, NAMES)
        self.guess = named[0] if len(named) == 1 else answer[:40]
        self.success = named == [self.secret]
        self.done = True
        self.user.stopped = True
        if self.success:
            text = f"User: Yes! It was the {self.secret}. Well played."
        elif len(named) > 1:
            text = "User: You can only guess one thing. Game over - you lose."
        else:
            text = "User: No, that's not it. Game over - you lose."
        return ToolResult(
            text, scores={"outcome": 1.0 if self.success else 0.0}, stop=True, success=self.success
        )

    def oracle(self) -> tuple[str, dict[str, Any]]:
        user = self.user
        assert isinstance(user, GuessingUser)
        cands = user.candidates()
        if len(cands) == 1:
            return "answer", {"answer": cands[0]}
        best, best_split = None, -1
        for attr in ATTRIBUTES:
            if attr in user.asked:
                continue
            yes = sum(1 for c in cands if attr in THINGS[c])
            split = min(yes, len(cands) - yes)
            if split > best_split:
                best, best_split = attr, split
        if best is None or best_split == 0:
            return "answer", {"answer": self.secret}
        return "talk", {"message": ATTRIBUTES[best][1]}

    def admissible(self) -> list[tuple[str, dict[str, Any]]] | None:
        """Every attribute question not asked yet, then a guess of each thing."""
        user = self.user
        assert isinstance(user, GuessingUser)
        moves: list[tuple[str, dict[str, Any]]] = [
            ("talk", {"message": question})
            for attr, (_, question) in ATTRIBUTES.items()
            if attr not in user.asked
        ]
        moves += [("answer", {"answer": name}) for name in NAMES]
        return moves

    def user_profile(self) -> str:
        attrs = ", ".join(sorted(THINGS[self.secret])) or "none"
        return f"You are thinking of: {self.secret} (true attributes: {attrs})."

    def state(self) -> Any:
        return {**self.user.state(), "searched": self.searched, "guess": self.guess}

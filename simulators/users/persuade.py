"""Persuasion: a scripted stance model that moves on argument types and evidence.

The user holds a stance on a proposal, from -1 (firmly against) to +1 (convinced), and a
hidden sensitivity to five argument types (evidence, expert, benefit, emotion, social). A
message's argument types are read from cue words; each moves the stance by
``step * sensitivity * decay**uses`` (the same type persuades less each time it is reused),
and citing a relevant evidence card found with ``search`` (``[E2]``) multiplies the move by
1.5. Pressure or insults push the stance back. Asked what worries them, the user names the
concern that points to their most effective argument type. Asked for a decision
(``answer``), the user agrees when the stance has reached the threshold.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from agentgym.simulators.users.core import Decision, Dialogue, Opening, ScriptedUser, ToolResult
from agentgym.simulators.users.wording import WordingBackend

ARG_TYPES = ("evidence", "expert", "benefit", "emotion", "social")

#: argument type -> cue stems
CUES: dict[str, tuple[str, ...]] = {
    "evidence": (
        "study",
        "studie",
        "data",
        "research",
        "percent",
        "statistic",
        "survey",
        "evidence",
        "trial",
    ),
    "expert": ("expert", "doctor", "scientist", "professor", "specialist", "recommend"),
    "benefit": ("save", "saving", "benefit", "cheaper", "money", "healthier", "advantage"),
    "emotion": ("feel", "happy", "imagine", "love", "joy", "proud", "relief"),
    "social": ("everyone", "friend", "neighbor", "neighbour", "popular", "others", "community"),
}
PRESSURE = ("must", "stupid", "idiot", "obviously", "dumb", "ridiculous", "now", "shut")
CONCERN_CUES = (
    "why",
    "concern",
    "worry",
    "worrie",
    "worried",
    "hesitant",
    "hesitate",
    "doubt",
    "change",
    "convince",
    "stop",
    "hold",
)

#: what the user says when asked about their concern, per most effective argument type
CONCERNS = {
    "evidence": "I'd need to see real numbers that it actually works.",
    "expert": "I'd trust it more if a professional recommended it.",
    "benefit": "I don't see what's in it for me personally.",
    "emotion": "I just can't picture myself enjoying it.",
    "social": "Nobody I know does it, so it feels strange.",
}

PROPOSALS = (
    ("switch to an electric car", "car"),
    ("start running three times a week", "running"),
    ("adopt a dog from a shelter", "dog"),
    ("move savings into an index fund", "fund"),
    ("learn a second language", "language"),
)

STEP = 0.4
DECAY = 0.6
THRESHOLD = 0.5
_CITE_RE = re.compile(r"\[?\bE(\d)\b\]?")


class PersuadeeUser(ScriptedUser):
    """A user whose stance moves on argument types, evidence and pressure."""

    def __init__(
        self,
        stance: float,
        sensitivity: dict[str, float],
        evidence: dict[str, str],
        *,
        wording: WordingBackend | None = None,
        patience: int = 8,
    ):
        super().__init__(
            "A sceptical person being persuaded; polite but hard to move.",
            wording=wording,
            patience=patience,
        )
        self.start_stance = stance
        self.stance = stance
        self.sensitivity = sensitivity
        self.evidence = evidence  # card id -> argument type
        self.uses = {t: 0 for t in ARG_TYPES}
        self.concern_told = False

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.stance = self.start_stance
        self.uses = {t: 0 for t in ARG_TYPES}
        self.concern_told = False

    @property
    def top_type(self) -> str:
        return max(ARG_TYPES, key=lambda t: (self.sensitivity[t], t))

    def predict_gain(self, arg_type: str, cited: bool) -> float:
        """How far an argument of this type would move the stance now (the oracle reads it)."""
        boost = 1.5 if cited else 1.0
        return STEP * self.sensitivity[arg_type] * DECAY ** self.uses[arg_type] * boost

    def _decide(self, message: str, toks: list[str]) -> Decision:
        words = set(toks)
        if words.intersection(PRESSURE):
            self.stance = max(-1.0, self.stance - 0.2)
            return Decision(
                "I don't like being pushed around. That makes me less keen.",
                scores={"progress": -0.2},
                flags=("pressure",),
            )
        types = [t for t in ARG_TYPES if words.intersection(CUES[t])]
        cited = {
            self.evidence[f"E{m}"] for m in _CITE_RE.findall(message) if f"E{m}" in self.evidence
        }
        if not types and words.intersection(CONCERN_CUES):
            first = not self.concern_told
            self.concern_told = True
            return Decision(
                CONCERNS[self.top_type],
                revealed=("concern",) if first else (),
                scores={"info": 1.0 if first else 0.0},
            )
        if not types:
            return Decision(
                self.choose(
                    (
                        "I hear you, but why should I?",
                        "Okay... and? That doesn't change much for me.",
                    )
                ),
                flags=("no_argument",),
            )
        if len(types) > 2:
            return Decision(
                "That's a lot of reasons at once; it sounds like a sales pitch.",
                scores={"penalty": -1.0},
                flags=("stuffing",),
            )
        before = self.stance
        for t in types:
            self.stance = min(1.0, self.stance + self.predict_gain(t, t in cited))
            self.uses[t] += 1
        delta = self.stance - before
        if delta > 0.15:
            text = self.choose(
                (
                    "That's a good point. I'm warming up to it.",
                    "Hm, that actually makes sense to me.",
                )
            )
        elif delta > 0.03:
            text = self.choose(("Maybe. I'm not fully convinced.", "I suppose that's something."))
        else:
            text = "That doesn't really speak to me."
        return Decision(text, revealed=("moved",) if delta > 0 else (), scores={"progress": delta})

    def state(self) -> Any:
        return {
            "stopped": self.stopped,
            "stance": round(self.stance, 6),
            "uses": sorted(self.uses.items()),
            "concern": self.concern_told,
        }


class PersuadeDialogue(Dialogue):
    """Persuade a sceptical user, then ask for their decision."""

    search_help = "search(query): find evidence cards (each with an id like E2) to cite."
    answer_help = (
        "answer(answer): ask the user for their final decision. Ends the "
        "conversation; they agree only if convinced."
    )

    def start(self, task_seed: int, user_seed: int) -> Opening:
        rng = np.random.default_rng(task_seed)
        self.proposal, self.topic = PROPOSALS[int(rng.integers(len(PROPOSALS)))]
        raw = rng.dirichlet(np.ones(len(ARG_TYPES)) * 0.6)
        sens = {t: float(round(0.1 + 0.9 * v / raw.max(), 3)) for t, v in zip(ARG_TYPES, raw)}
        stance = float(round(rng.uniform(-0.7, -0.3), 3))
        order = rng.permutation(len(ARG_TYPES))
        self.cards = {f"E{i + 1}": ARG_TYPES[int(j)] for i, j in enumerate(order)}
        self.user = PersuadeeUser(stance, sens, self.cards, wording=self.wording, patience=8)
        self.user.reset(seed=user_seed)
        self.searched = False
        self.success = self.done = False
        text = self.user.choose(
            (
                f"My friend says I should {self.proposal}. I'm not so sure.",
                f"I keep hearing I should {self.proposal}. Not convinced.",
            )
        )
        instruction = (
            f"Persuade the user to {self.proposal}. Find out what holds them back, "
            "argue well (cite evidence cards from search), then ask for a decision."
        )
        return Opening(instruction, text)

    def _card_text(self, card: str, arg_type: str) -> str:
        return {
            "evidence": f"[{card}] (data) A survey of 2,000 people found 78 percent were glad "
            f"they chose to {self.proposal}.",
            "expert": f"[{card}] (expert) Specialists and doctors recommend that people "
            f"{self.proposal}.",
            "benefit": f"[{card}] (benefit) People who {self.proposal} save money and time "
            "within a year.",
            "emotion": f"[{card}] (emotion) Many say they feel happy and proud after they "
            f"{self.proposal}.",
            "social": f"[{card}] (social) Your neighbours and friends increasingly "
            f"{self.proposal}; it's popular in the community.",
        }[arg_type]

    def search(self, query: str) -> ToolResult:
        first = not self.searched
        self.searched = True
        lines = [self._card_text(c, t) for c, t in self.cards.items()]
        return ToolResult(
            "Evidence cards:\n" + "\n".join(lines), scores={"search": 1.0 if first else 0.0}
        )

    def answer(self, answer: str) -> ToolResult:
        user = self.user
        assert isinstance(user, PersuadeeUser)
        self.success = user.stance >= THRESHOLD
        self.done = True
        user.stopped = True
        text = (
            f"User: Alright, you've convinced me. I'll {self.proposal}."
            if self.success
            else "User: No, I'm still not convinced. Thanks anyway."
        )
        return ToolResult(
            text, scores={"outcome": 1.0 if self.success else 0.0}, stop=True, success=self.success
        )

    def oracle(self) -> tuple[str, dict[str, Any]]:
        user = self.user
        assert isinstance(user, PersuadeeUser)
        if not user.concern_told:
            return "talk", {"message": "What worries you about it?"}
        if not self.searched:
            return "search", {"query": self.topic}
        if user.stance >= THRESHOLD:
            return "answer", {"answer": f"So, will you {self.proposal}?"}
        best = max(ARG_TYPES, key=lambda t: (user.predict_gain(t, True), t))
        card = next(c for c, t in self.cards.items() if t == best)
        cue = CUES[best][0]
        return "talk", {"message": f"Think about this ({cue}): {self._card_text(card, best)}"}

    def user_profile(self) -> str:
        user = self.user
        assert isinstance(user, PersuadeeUser)
        return (
            f"You are unsure whether to {self.proposal} (stance {user.stance:+.2f}). "
            f"What would move you most: {user.top_type} arguments."
        )

    def state(self) -> Any:
        return {**self.user.state(), "searched": self.searched}

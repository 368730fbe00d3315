"""Intention clarification: a vague request whose details the user holds back.

The user asks for something vague ("plan a birthday party"). Each task type has six
possible details (guest count, budget, date...), of which four are hidden in an episode,
each with an importance (3 high, 2 medium, 1 low). The agent asks, then answers with a plan;
the plan is scored by the importance-weighted share of the hidden details it states.
``search`` returns a checklist of the topics such requests usually involve (never values).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from agentgym.simulators.users.core import Dialogue, Fact, FactUser, Opening, ToolResult
from agentgym.simulators.users.text import mentions

#: task type -> (vague request, [(detail id, keywords, topic, question, values, phrase)])
TASKS: dict[str, tuple[str, list[tuple[str, tuple[str, ...], str, str, tuple[str, ...], str]]]] = {
    "party": (
        "Can you help me plan a birthday party?",
        [
            (
                "guests",
                ("guest", "people", "many", "invite", "attend", "size"),
                "the number of guests",
                "How many guests will come?",
                ("12", "20", "35"),
                "About {v} people will come.",
            ),
            (
                "budget",
                ("budget", "cost", "spend", "money", "afford", "price"),
                "the budget",
                "What budget do you have?",
                ("300", "500", "800"),
                "I can spend around {v} dollars.",
            ),
            (
                "day",
                ("day", "date", "when", "weekend", "time"),
                "the date",
                "Which day should the party be?",
                ("saturday", "sunday", "friday"),
                "It should be on {v}.",
            ),
            (
                "theme",
                ("theme", "style", "decoration", "decor", "idea"),
                "the theme",
                "Should the party have a theme?",
                ("pirates", "space", "dinosaurs"),
                "The theme should be {v}.",
            ),
            (
                "venue",
                ("venue", "place", "location", "where", "host", "home"),
                "the venue",
                "Where would you like to hold it?",
                ("garden", "bowling alley", "community hall"),
                "I'd like it at the {v}.",
            ),
            (
                "diet",
                ("diet", "dietary", "allergy", "allergie", "food", "eat", "vegetarian"),
                "food restrictions",
                "Are there any food restrictions?",
                ("vegetarian", "nut free", "gluten free"),
                "The food has to be {v}.",
            ),
        ],
    ),
    "laptop": (
        "I need a new laptop. What should I get?",
        [
            (
                "use",
                ("use", "purpose", "work", "task", "mainly"),
                "what it's for",
                "What will you mainly use it for?",
                ("video editing", "programming", "gaming"),
                "I'll mostly use it for {v}.",
            ),
            (
                "budget",
                ("budget", "cost", "spend", "money", "afford", "price"),
                "the budget",
                "What's your budget?",
                ("900", "1400", "2000"),
                "I can spend up to {v} dollars.",
            ),
            (
                "size",
                ("size", "screen", "inch", "display", "big", "small"),
                "the screen size",
                "What screen size do you prefer?",
                ("13", "15", "16"),
                "I want a {v} inch screen.",
            ),
            (
                "os",
                ("os", "system", "windows", "mac", "linux", "operating"),
                "the operating system",
                "Which operating system do you want?",
                ("linux", "windows", "macos"),
                "It has to run {v}.",
            ),
            (
                "weight",
                ("weight", "light", "heavy", "carry", "portable", "travel"),
                "portability",
                "Does it need to be light to carry around?",
                ("under 1.5 kg", "under 2 kg"),
                "It should weigh {v}.",
            ),
            (
                "battery",
                ("battery", "charge", "hour", "unplugged"),
                "battery life",
                "How long should the battery last?",
                ("10 hours", "15 hours"),
                "The battery must last {v}.",
            ),
        ],
    ),
    "email": (
        "Please write an email for me.",
        [
            (
                "recipient",
                ("who", "recipient", "whom", "send", "addressed"),
                "who it's for",
                "Who is the email for?",
                ("my landlord", "my manager", "the school"),
                "It's for {v}.",
            ),
            (
                "topic",
                ("about", "topic", "subject", "purpose", "why", "regarding"),
                "what it's about",
                "What is the email about?",
                ("a broken heater", "a day off", "a schedule change"),
                "It's about {v}.",
            ),
            (
                "tone",
                ("tone", "formal", "casual", "polite", "style"),
                "the tone",
                "What tone should it have?",
                ("formal", "friendly", "firm"),
                "The tone should be {v}.",
            ),
            (
                "deadline",
                ("deadline", "when", "date", "soon", "urgent"),
                "the deadline",
                "Is there a deadline to mention?",
                ("friday", "next monday", "tomorrow"),
                "Mention that I need a reply by {v}.",
            ),
            (
                "length",
                ("length", "long", "short", "word"),
                "the length",
                "How long should it be?",
                ("short", "detailed"),
                "Keep it {v}.",
            ),
            (
                "signoff",
                ("sign", "signature", "name", "signed", "close", "closing"),
                "the sign-off",
                "How should I sign it?",
                ("alex", "sam", "jordan"),
                "Sign it with my name, {v}.",
            ),
        ],
    ),
}

CHECKLISTS = {
    kind: "Things people usually specify for this kind of request: "
    + ", ".join(d[2] for d in details)
    + "."
    for kind, (_, details) in TASKS.items()
}


class IntentionDialogue(Dialogue):
    """A vague request; the plan must state the hidden details, weighted by importance."""

    search_help = "search(query): look up which details requests like this usually need."
    answer_help = (
        "answer(answer): your final plan or draft, stating every detail the user asked for."
    )
    success_threshold = 0.99

    def start(self, task_seed: int, user_seed: int) -> Opening:
        rng = np.random.default_rng(task_seed)
        kinds = sorted(TASKS)
        self.kind = kinds[int(rng.integers(len(kinds)))]
        request, details = TASKS[self.kind]
        picks = sorted(rng.choice(len(details), size=4, replace=False))
        facts = []
        for i in picks:
            did, kw, topic, question, values, phrase = details[int(i)]
            value = values[int(rng.integers(len(values)))]
            importance = float(rng.integers(1, 4))
            text = phrase.format(v=value)
            facts.append(Fact(did, value, kw, (text,), (), importance, question, topic))
        self.user = FactUser(
            "Someone with a vague request who answers clearly when asked.",
            facts,
            wording=self.wording,
        )
        self.user.reset(seed=user_seed)
        self.searched = False
        self.score: float | None = None
        self.success = self.done = False
        instruction = (
            f"The user says: {request!r}. Ask what they need (one question at a time), then "
            "answer with a plan or draft stating every detail they gave."
        )
        return Opening(instruction, request)

    def search(self, query: str) -> ToolResult:
        first = not self.searched
        self.searched = True
        return ToolResult(CHECKLISTS[self.kind], scores={"search": 1.0 if first else 0.0})

    def answer(self, answer: str) -> ToolResult:
        user = self.user
        assert isinstance(user, FactUser)
        covered = [f for f in user.facts.values() if mentions(answer, f.value)]
        self.score = sum(f.importance for f in covered) / user.total_importance
        self.success = self.score >= self.success_threshold
        self.done = True
        user.stopped = True
        missing = [f.topic for f in user.facts.values() if f not in covered]
        if self.success:
            text = "User: That's exactly what I wanted, thanks!"
        else:
            text = "User: That's not quite it" + (
                f" - you left out {', '.join(missing)}." if missing else "."
            )
        return ToolResult(
            text,
            scores={"outcome": 1.0 if self.success else 0.0, "coverage": self.score},
            stop=True,
            success=self.success,
        )

    def oracle(self) -> tuple[str, dict[str, Any]]:
        user = self.user
        assert isinstance(user, FactUser)
        for fact in user.facts.values():
            if fact.id not in user.revealed:
                return "talk", {"message": fact.question}
        plan = " ".join(f.direct[0] for f in user.facts.values())
        return "answer", {"answer": f"Here is the plan: {plan}"}

    def state(self) -> Any:
        return {**self.user.state(), "searched": self.searched, "score": self.score}

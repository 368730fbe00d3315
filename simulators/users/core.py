"""The scripted user core: hidden facts, what a question earns, when the user stops.

A :class:`ScriptedUser` is deterministic given its scenario and seed. For every agent message
it decides, by rule, which hidden facts the message has *earned* (at most those it asks
about), how the reply is phrased (seeded direct or indirect phrasings), whether the user
gives up, and the reward components of the turn. A wording backend
(:mod:`agentgym.simulators.users.wording`) may re-phrase the reply afterwards; it cannot
change what is revealed.

Every message first passes the same screens: empty, too long, another language, or a
prompt-injection attempt each get an in-character reply that reveals nothing.

A :class:`Dialogue` is the world of one episode (a user plus whatever the conversation is
about: a hotel catalogue, a database...). Envs map their ``talk`` / ``search`` / ``answer``
tools (and any domain tools) onto a dialogue's methods.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from agentgym.simulators.users.text import MAX_READ_CHARS, is_foreign, is_injection, tokens
from agentgym.simulators.users.wording import (
    Guard,
    WordingBackend,
    WordingRequest,
    word_reply,
)

from agentgym.error import InvalidConfigError
from agentgym.parsing import Tool


@dataclass(frozen=True)
class Fact:
    """One hidden fact of a user.

    Attributes:
        id: Stable name (``"budget"``).
        value: The canonical value the guard protects and answers are checked against.
        keywords: Word stems a question must contain to earn the fact.
        direct: Phrasings that state it plainly.
        indirect: Phrasings that imply it (still naming the value).
        importance: Weight in rewards (intention envs weigh details).
        question: A question that earns it (what oracle policies ask).
        topic: A short human name of the topic, used in hints (``"the budget"``).
        hint: Whether a nudge may name the topic. False where naming the topic gives the
            value away (a yes/no preference such as "parking").
    """

    id: str
    value: str
    keywords: tuple[str, ...]
    direct: tuple[str, ...]
    indirect: tuple[str, ...] = ()
    importance: float = 1.0
    question: str = ""
    topic: str = ""
    hint: bool = True


@dataclass(frozen=True)
class UserScenario:
    """What a :class:`FactUser` hides: a persona and its facts."""

    persona: str
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class UserTurn:
    """One user reply and what the core decided about it.

    Attributes:
        text: The reply as the agent reads it.
        revealed: Ids of facts released by this reply.
        stop: The user ended the conversation.
        sim_error: A simulator-side failure (a wording backend error, a replay miss); the
            reply fell back to the template. Reported so trainers can drop the episode
            instead of scoring it as an agent failure.
        scores: Reward components the core assigns to this turn.
        flags: What the screens noticed (``"stuffing"``, ``"injection"``, ``"repeat"``...).
        template: The core's own reply before wording.
    """

    text: str
    revealed: tuple[str, ...] = ()
    stop: bool = False
    sim_error: str | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    template: str = ""


@dataclass
class Decision:
    """What a user subclass decides for one message, before wording."""

    text: str
    revealed: tuple[str, ...] = ()
    stop: bool = False
    scores: dict[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolResult:
    """The result of a non-talk tool (search, a database tool, an answer)."""

    text: str
    scores: Mapping[str, float] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    stop: bool = False
    success: bool = False
    valid: bool = True
    user_turn: UserTurn | None = None


class ScriptedUser:
    """Base class of the scripted users: screens, patience, wording and the guard.

    Subclasses implement :meth:`_decide` (and usually :meth:`hidden_values`).

    Args:
        persona: One line describing the user (given to wording backends).
        wording: A wording backend; ``None`` keeps the template replies.
        patience: Consecutive turns without progress before the user gives up.
        guard: The reply guard.
    """

    def __init__(
        self,
        persona: str,
        *,
        wording: WordingBackend | None = None,
        patience: int = 8,
        guard: Guard | None = None,
    ):
        self.persona = persona
        self.wording = wording
        self.patience = patience
        self.guard = guard or Guard()
        self.rng = np.random.default_rng(0)
        self.stopped = False
        self.idle = 0

    def reset(self, scenario: Any = None, seed: int = 0) -> None:
        """Start a conversation: load ``scenario`` (if given) and seed the phrasing.

        What a scenario is depends on the user (:class:`FactUser` takes a
        :class:`UserScenario`); ``None`` keeps the one given to the constructor.
        """
        if scenario is not None:
            self.load(scenario)
        self.seed(seed)

    def load(self, scenario: Any) -> None:
        """Replace the hidden scenario (users that support it override this)."""
        raise InvalidConfigError(
            f"{type(self).__name__} takes its scenario in the constructor; "
            "call reset(seed=...) without a scenario."
        )

    def seed(self, seed: int) -> None:
        """Reset the user's phrasing generator and per-conversation state."""
        self.rng = np.random.default_rng(seed)
        self.stopped = False
        self.idle = 0

    def choose(self, options: Sequence[str]) -> str:
        """A seeded choice among phrasings."""
        return options[int(self.rng.integers(len(options)))]

    # ---- to override -----------------------------------------------------------------------

    def _decide(self, message: str, toks: list[str]) -> Decision:
        raise NotImplementedError

    def hidden_values(self) -> tuple[str, ...]:
        """Values the user has not released (the guard forbids them)."""
        return ()

    def released_values(self) -> tuple[str, ...]:
        """Values already released (wording may repeat them)."""
        return ()

    def state(self) -> Any:
        """A JSON-able, history-free summary of what the user has decided so far."""
        return {"stopped": self.stopped}

    # ---- the turn ----------------------------------------------------------------------------

    def respond(self, message: Any) -> UserTurn:
        """The user's reply to one agent message. Never raises."""
        if self.stopped:
            return UserTurn("(The user has left the conversation.)", stop=True, flags=("left",))
        if not isinstance(message, str):
            message = ""
        text = message.strip()
        if not text:
            decision = Decision(
                "Sorry, I didn't catch that. What did you want to ask?", flags=("empty",)
            )
        elif len(text) > MAX_READ_CHARS:
            decision = Decision(
                "That's a lot of text. Could you keep it short and ask me one thing at a time?",
                scores={"penalty": -1.0},
                flags=("too_long",),
            )
        elif is_injection(text):
            decision = Decision(
                self.choose(
                    (
                        "I'm not sure what you mean. I'm just here to get some help; "
                        "ask me what you need to know.",
                        "Huh? I'm a regular person, not a computer. What do you need from me?",
                    )
                ),
                scores={"penalty": -1.0},
                flags=("injection",),
            )
        elif is_foreign(text):
            decision = Decision(
                "Sorry, I only speak English. Could you say that in English?", flags=("foreign",)
            )
        else:
            decision = self._decide(text, tokens(text))
        return self._finish(text, decision)

    def _finish(self, message: str, decision: Decision) -> UserTurn:
        text = decision.text
        stop = decision.stop
        flags = tuple(decision.flags)
        self.idle = 0 if decision.revealed else self.idle + 1
        if not stop and self.idle >= self.patience:
            stop = True
            text += " I don't think this is going anywhere. Goodbye."
            flags += ("gave_up",)
        if stop:
            self.stopped = True
        request = WordingRequest(
            persona=self.persona,
            message=message[:MAX_READ_CHARS],
            template=text,
            allowed=self.released_values(),
            forbidden=self.hidden_values(),
        )
        worded = word_reply(self.wording, self.guard, request)
        if worded.guarded:
            flags += ("guarded",)
        return UserTurn(
            text=worded.text,
            revealed=decision.revealed,
            stop=stop,
            sim_error=worded.sim_error,
            scores=dict(decision.scores),
            flags=flags,
            template=text,
        )


class FactUser(ScriptedUser):
    """A user holding hidden :class:`Fact` s, released one question at a time.

    A message earns the facts whose keywords it contains. More than ``max_topics`` topics in
    one message is question-stuffing: nothing is revealed and the turn is penalised. A
    message matching no topic gets a nudge that may name a topic (never a value). Asking
    again about a released fact repeats it with a small penalty.

    Args:
        facts: The hidden facts.
        classifier: Optional object with ``classify(message, {id: topic}) -> [ids]`` (an LLM
            deciding which topics a message asks about); any failure falls back to keywords.
    """

    def __init__(
        self,
        persona: str,
        facts: Sequence[Fact],
        *,
        max_topics: int = 2,
        classifier: Any = None,
        wording: WordingBackend | None = None,
        patience: int = 8,
        guard: Guard | None = None,
    ):
        super().__init__(persona, wording=wording, patience=patience, guard=guard)
        self.facts = {f.id: f for f in facts}
        self.max_topics = max_topics
        self.classifier = classifier
        self.revealed: list[str] = []
        self.total_importance = float(sum(f.importance for f in facts)) or 1.0
        self.classifier_errors = 0

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.revealed = []

    def load(self, scenario: Any) -> None:
        """Take a new :class:`UserScenario` (persona and facts)."""
        if not isinstance(scenario, UserScenario):
            raise InvalidConfigError(
                f"FactUser.reset needs a UserScenario, got {type(scenario).__name__}."
            )
        self.persona = scenario.persona
        self.facts = {f.id: f for f in scenario.facts}
        self.total_importance = float(sum(f.importance for f in scenario.facts)) or 1.0

    def match(self, message: str, toks: Sequence[str]) -> list[str]:
        """Ids of the facts a message asks about, in the facts' order."""
        if self.classifier is not None:
            try:
                ids = self.classifier.classify(
                    message, {f.id: f.topic or f.id for f in self.facts.values()}
                )
                return [i for i in self.facts if i in set(ids)]
            except Exception:
                self.classifier_errors += 1
        words = set(toks)
        return [f.id for f in self.facts.values() if words.intersection(f.keywords)]

    def phrase(self, fact: Fact) -> str:
        """A seeded phrasing of a fact: direct or, when it has some, indirect."""
        pool = fact.direct + fact.indirect
        return self.choose(pool)

    def _decide(self, message: str, toks: list[str]) -> Decision:
        matched = self.match(message, toks)
        if len(matched) > self.max_topics:
            return Decision(
                self.choose(
                    (
                        "Whoa, that's a lot of questions at once. One thing at a time, please?",
                        "Slow down, that's too many questions in one go. Ask me one at a time.",
                    )
                ),
                scores={"penalty": -1.0},
                flags=("stuffing",),
            )
        new = [i for i in matched if i not in self.revealed]
        if new:
            self.revealed.extend(new)
            gain = sum(self.facts[i].importance for i in new) / self.total_importance
            lead = self.choose(("", "", "Sure. ", "Well, ", "Good question. "))
            body = " ".join(self.phrase(self.facts[i]) for i in new)
            if lead == "Well, ":
                body = body[:1].lower() + body[1:] if not body.startswith("I ") else body
            return Decision(
                lead + body,
                revealed=tuple(new),
                scores={"info": gain},
            )
        if matched:
            return Decision(
                "As I said, " + self.phrase(self.facts[matched[0]]).rstrip(".") + ".",
                scores={"penalty": -0.25},
                flags=("repeat",),
            )
        return Decision(self.nudge(), flags=("no_topic",))

    def nudge(self) -> str:
        """A reply to a message that asks about nothing the user holds."""
        hidden = [f for f in self.facts.values() if f.id not in self.revealed and f.hint]
        if hidden and self.rng.random() < 0.5:
            topic = self.choose([f.topic or f.id for f in hidden])
            return f"Hmm, I'm not sure what you're asking. I do care about {topic}, though."
        return self.choose(
            (
                "I'm not sure what you mean. Could you ask more specifically?",
                "Sorry, what exactly would you like to know?",
            )
        )

    def hidden_values(self) -> tuple[str, ...]:
        return tuple(f.value for f in self.facts.values() if f.id not in self.revealed)

    def released_values(self) -> tuple[str, ...]:
        return tuple(self.facts[i].value for i in self.revealed)

    def state(self) -> Any:
        return {"stopped": self.stopped, "revealed": sorted(self.revealed)}

    def coverage(self) -> float:
        """Importance-weighted fraction of the facts released so far."""
        return sum(self.facts[i].importance for i in self.revealed) / self.total_importance


@dataclass(frozen=True)
class Opening:
    """How an episode starts: the task for the agent and the user's first message."""

    instruction: str
    text: str


class Dialogue:
    """The world of one episode: a scripted user plus what the conversation is about.

    Subclasses build everything in :meth:`start` from the two seeds: ``task_seed`` fixes the
    scenario (hidden facts, catalogue, database) and ``user_seed`` only the user's phrasing,
    so repeated evaluations of one task can use independent users.
    """

    #: Extra domain tools beyond talk/search/answer.
    extra_tools: tuple[Tool, ...] = ()
    #: One line for the system prompt about what search looks up.
    search_help: str = "Search the knowledge base."
    #: One line about what the answer should contain.
    answer_help: str = "Give your final answer."

    def __init__(self, wording: WordingBackend | None = None):
        self.wording = wording
        self.user: ScriptedUser
        self.success = False
        self.done = False

    def start(self, task_seed: int, user_seed: int) -> Opening:
        raise NotImplementedError

    def talk(self, message: str) -> UserTurn:
        """The user's reply to a message (the base passes it to the user)."""
        return self.user.respond(message)

    def search(self, query: str) -> ToolResult:
        raise NotImplementedError

    def answer(self, answer: str) -> ToolResult:
        raise NotImplementedError

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """A domain tool (only dialogues with ``extra_tools``)."""
        return ToolResult(f"Unknown tool {name!r}.", valid=False)

    def oracle(self) -> tuple[str, dict[str, Any]]:
        """The privileged scripted policy's next move: (tool name, arguments)."""
        raise NotImplementedError

    def admissible(self) -> list[tuple[str, dict[str, Any]]] | None:
        """The useful moves as (tool, arguments) when they form a finite set, else None.

        Computed from public information only (never the hidden facts).
        """
        return None

    def state(self) -> Any:
        """A JSON-able, history-free state (digested into the env's state_key)."""
        return self.user.state()

    def state_digest(self) -> str:
        blob = json.dumps(self.state(), sort_keys=True, default=str)
        return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()

    def close(self) -> None:
        """Release what the dialogue holds (a database connection...)."""

    def user_profile(self) -> str:
        """The user's hidden profile as text (what a policy playing the user seat reads)."""
        user = self.user
        if isinstance(user, FactUser):
            return "\n".join(f"- {f.topic or f.id}: {f.direct[0]}" for f in user.facts.values())
        return user.persona

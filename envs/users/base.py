"""``UserDialogueEnv``: the shared env over a scripted-user :class:`Dialogue`.

Every user env is this class plus a dialogue class, a task prefix and reward weights. It
maps the ``talk`` / ``search`` / ``answer`` tools (and a dialogue's domain tools) onto the
dialogue, puts the core's reward components in ``info`` (never in text), and reports the
credited per-turn rewards and the trajectory score when an episode ends
(:mod:`agentgym.envs.users.credit`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

import numpy as np
from agentgym.envs.users.credit import check_options, credit_turns, score_trajectory
from agentgym.simulators.users.core import Dialogue, ToolResult, UserTurn
from agentgym.simulators.users.wording import WordingBackend

from agentgym.core import AgentEnv, BaseOptions, ResetOutcome, StepOutcome
from agentgym.parsing import ParsedAction, Tool, render_tool_call
from agentgym.tasks import SeededTaskSet, seeded_splits


def _text_tool(name: str, description: str, arg: str, arg_help: str) -> Tool:
    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {arg: {"type": "string", "description": arg_help}},
            "required": [arg],
            "additionalProperties": False,
        },
    )


@functools.lru_cache(maxsize=8192)
def _render(name: str, args: tuple[tuple[str, Any], ...]) -> str:
    """``render_tool_call`` memoised: admissible lists repeat the same moves every step."""
    return render_tool_call(name, dict(args))


TALK_TOOL = _text_tool(
    "talk",
    "Say something to the user: ask one question or tell them something. They reply.",
    "message",
    "What you say to the user.",
)


class UserDialogueEnv(AgentEnv):
    """Base of the user envs; subclasses set ``dialogue_cls`` and ``task_prefix``.

    Args:
        wording: A wording backend for the user's replies (default: the templates).
        turn_credit: ``"raw"``, ``"equalized"``, ``"r2g"`` or ``"exact"``.
        credit_gamma: Discount of ``"r2g"`` credit and scoring.
        trajectory_score: ``"sum"``, ``"mean"`` or ``"r2g"``.
        **base: The options every env takes (:class:`agentgym.core.EnvOptions`).
    """

    metadata: ClassVar[dict[str, Any]] = {  # type: ignore[misc]  # same as AgentEnv
        "family": "users",
        "render_modes": ["ansi"],
        "blocking": False,  # the template users; with a wording backend __init__ says True
    }
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.1,
        "info": 1.0,
        "search": 0.2,
        "penalty": 0.1,
        "outcome": 1.0,
    }
    default_max_turns: ClassVar[int | None] = 20
    dialogue_cls: ClassVar[type[Dialogue]] = Dialogue
    task_prefix: ClassVar[str] = "users"
    system_intro: ClassVar[str] = "You are an assistant talking with a user."

    def __init__(
        self,
        *,
        wording: WordingBackend | None = None,
        turn_credit: str = "raw",
        credit_gamma: float = 0.8,
        trajectory_score: str = "sum",
        **base: Unpack[BaseOptions],
    ):
        super().__init__(**base)
        check_options(turn_credit, trajectory_score, credit_gamma)
        self.wording = wording
        self.metadata = {**self.metadata, "blocking": wording is not None}  # type: ignore[misc]
        self.turn_credit = turn_credit
        self.credit_gamma = float(credit_gamma)
        self.trajectory_score_mode = trajectory_score
        self._splits = seeded_splits(self.task_prefix)
        cls = self.dialogue_cls
        self._tools: tuple[Tool, ...] = (
            TALK_TOOL,
            _text_tool("search", cls.search_help, "query", "What to look up."),
            _text_tool("answer", cls.answer_help, "answer", "Your final answer."),
            *cls.extra_tools,
        )
        self.dialogue: Dialogue | None = None
        self._raw_rewards: list[float] = []
        self.user_seed = 0
        self._next_user_seed = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Start an episode; ``options["user_seed"]`` fixes the user's phrasing.

        Without it the user seed derives from ``seed`` alone (so ``seed`` with or without
        ``options["task_id"]`` gives the same user), or, for unseeded resets, from the env's
        generator.
        """
        if seed is not None:
            state = np.random.SeedSequence([int(seed), 0x5EED]).generate_state(1)[0]
            self._next_user_seed = int(state) >> 1
        else:
            self._next_user_seed = int(self.np_random.integers(2**31 - 1))
        return super().reset(seed=seed, options=options)

    # ---- template ---------------------------------------------------------------------------

    def task_ids(self, split: str | None = None) -> Sequence[str]:
        return self._splits[split or self.split]

    @property
    def tools(self) -> Sequence[Tool]:
        return self._tools

    def system_prompt(self) -> str:
        names = ", ".join(t.name for t in self._tools)
        return (
            f"{self.system_intro} Each turn, call exactly one tool ({names}), for example:\n"
            + render_tool_call("talk", {"message": "Could you tell me more about what you need?"})
            + "\nAsk one question at a time; the user only answers what you ask about."
        )

    def _reset(self, task_id: str, options: Mapping[str, Any]) -> ResetOutcome:
        task_seed = SeededTaskSet.seed_of(task_id)
        if "user_seed" in options:
            self.user_seed = int(options["user_seed"])
        else:
            self.user_seed = self._next_user_seed
        # Keep the user seed with the episode's options so snapshot/restore (which replays
        # from the options) rebuilds the same user in any instance.
        self._options = {**options, "user_seed": self.user_seed}
        if self.dialogue is not None:
            self.dialogue.close()
        self.dialogue = self.dialogue_cls(wording=self.wording)
        opening = self.dialogue.start(task_seed, self.user_seed)
        self._raw_rewards = []
        return ResetOutcome(
            text=f"User: {opening.text}",
            instruction=opening.instruction,
            system_prompt=self.system_prompt() + "\nTask: " + opening.instruction,
            info={"user_seed": self.user_seed},
        )

    def _invalid(self, problem: str) -> StepOutcome:
        example = render_tool_call("talk", {"message": "..."})
        return StepOutcome(
            text=f"Invalid action: {problem} Call exactly one tool per turn, e.g. {example}",
            components={"format": -1.0},
            action_valid=False,
            error=problem,
        )

    def _step(self, action: ParsedAction) -> StepOutcome:
        dialogue = self.dialogue
        assert dialogue is not None
        if not action.valid:
            out = self._invalid(action.error_text())
        else:
            calls = [(c.name, c.arguments) for c in action.tool_calls]
            if action.answer is not None:
                calls.append(("answer", {"answer": action.answer}))
            if len(calls) != 1:
                out = self._invalid(f"expected exactly one tool call, got {len(calls)}.")
            else:
                out = self._dispatch(dialogue, *calls[0])
        if out.terminated or (self.max_turns is not None and self.turn >= self.max_turns):
            self._episode_ends(out)
        reward = sum(self.reward_weights.get(k, 0.0) * v for k, v in out.components.items())
        self._raw_rewards.append(float(reward))
        if (
            out.terminated
            or out.truncated
            or (self.max_turns is not None and self.turn >= self.max_turns)
        ):
            out.info["turn_rewards"] = credit_turns(
                self._raw_rewards, self.turn_credit, self.credit_gamma
            )
            out.info["trajectory_score"] = score_trajectory(
                self._raw_rewards, self.trajectory_score_mode, self.credit_gamma
            )
        return out

    def _episode_ends(self, out: StepOutcome) -> None:
        """Hook: this step ends the episode (the dialogue ended, or the turn budget is used
        up); an env may add reward components to ``out`` (e.g. a penalty for no answer)."""

    def _dispatch(self, dialogue: Dialogue, name: str, args: Mapping[str, Any]) -> StepOutcome:
        if name == "talk":
            turn = dialogue.talk(str(args["message"]))
            return self._from_turn(dialogue, turn)
        if name == "search":
            res = dialogue.search(str(args["query"]))
        elif name == "answer":
            res = dialogue.answer(str(args["answer"]))
        else:
            res = dialogue.call(name, args)
        return self._from_result(dialogue, res)

    def _from_turn(self, dialogue: Dialogue, turn: UserTurn) -> StepOutcome:
        text = f"User: {turn.text}"
        if turn.stop:
            text += "\n(The user has left the conversation.)"
        return StepOutcome(
            text=text,
            components={"format": 0.0, **turn.scores},
            terminated=turn.stop or dialogue.done,
            success=dialogue.success,
            info={
                "user": {
                    "revealed": list(turn.revealed),
                    "flags": list(turn.flags),
                    "template": turn.template,
                },
                "sim_error": turn.sim_error,
            },
        )

    def _from_result(self, dialogue: Dialogue, res: ToolResult) -> StepOutcome:
        info: dict[str, Any] = {"user": {"flags": list(res.flags)}, "sim_error": None}
        if res.user_turn is not None:
            info["user"]["revealed"] = list(res.user_turn.revealed)
            info["user"]["template"] = res.user_turn.template
            info["sim_error"] = res.user_turn.sim_error
        components = {"format": 0.0 if res.valid else -1.0, **res.scores}
        return StepOutcome(
            text=res.text,
            components=components,
            terminated=res.stop or dialogue.done,
            success=res.success or dialogue.success,
            action_valid=res.valid,
            error=None if res.valid else res.text,
            info=info,
        )

    def state_key(self) -> str:
        if self.dialogue is None:
            return ""
        blob = f"{self._task_id}|{self.dialogue.state_digest()}"
        return hashlib.blake2b(blob.encode(), digest_size=16).hexdigest()

    def admissible_actions(self) -> list[str] | None:
        """Ready action strings where the dialogue's useful moves are finite (else None)."""
        if self.dialogue is None:
            return None
        moves = self.dialogue.admissible()
        if moves is None:
            return None
        return [_render(name, tuple(sorted(args.items()))) for name, args in moves]

    def close(self) -> None:
        """Close the current dialogue (its database, if any). Safe to call twice."""
        if self.dialogue is not None:
            self.dialogue.close()
            self.dialogue = None
        super().close()

    def oracle_action(self) -> str:
        """The privileged scripted policy's move (it reads the hidden facts)."""
        assert self.dialogue is not None
        name, args = self.dialogue.oracle()
        return render_tool_call(name, args)

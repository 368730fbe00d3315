"""verl: an agent loop and an interaction for any agentgym env.

Two ways in, both over :class:`~agentgym.integrations.session.TextSession`:

* :class:`AgentGymAgentLoop` — a verl ``AgentLoopBase`` registered as ``"agentgym_agent"``.
  Each dataset row names its episode (``env_id``, ``seed`` or ``task_id``, optional
  ``env_kwargs`` and ``max_turns``; top level or under ``extra_info``). ``run`` plays the
  episode against verl's inference servers and returns an ``AgentLoopOutput``: prompt ids,
  response ids with env tokens masked (0), the sampled tokens' logprobs, the summed env
  reward as ``reward_score``, ``num_turns``, and per-turn rewards / success / the GiGPO
  state keys in ``extra_fields``. Turns are decoded with special tokens kept (a
  ``<tool_call>`` special token keeps its tags) and the chat is text-only (images become a
  note); see :mod:`agentgym.integrations.tokens`. Requires verl (import it from this module
  only when verl is installed: ``from agentgym.integrations.verl import AgentGymAgentLoop``).
* :class:`AgentGymInteraction` — verl's older ``BaseInteraction`` form (the multi-turn
  SGLang rollout of verl 0.5 and 0.6; its reward reaches the loss only from 0.6, whose
  stock reward managers pass the turn rewards to :func:`compute_score`; tested on 0.6.1,
  and on 0.5.0, where ``compute_score`` says why it cannot): ``start_interaction`` resets the env,
  ``generate_response`` steps it with the last assistant message and returns
  ``(done, reply, reward, info)``; the env is closed when its episode ends, because verl
  0.5's rollout never calls ``finalize_interaction``, and an episode the rollout cut short
  (turn or length limit) is closed once it has been idle ``idle_timeout_s``.
  :func:`interaction_rows` builds dataset rows whose prompts equal the env's opening
  messages and that verl's stock reward managers accept; :func:`compute_score` is the
  reward function that sums the per-turn env rewards verl 0.5's rollout collected.

See docs/integrations/verl.md for the verl config that selects the loop.
"""

from __future__ import annotations

import importlib.metadata as md
import math
import re
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgym.error import DependencyMissingError, InvalidConfigError
from agentgym.integrations.session import TextSession
from agentgym.integrations.tokens import (
    TokenEpisode,
    answer_tool_option,
    run_token_episode,
    text_only_messages,
)

AGENT_NAME = "agentgym_agent"

__all__ = [
    "AGENT_NAME",
    "AgentGymInteraction",
    "agent_loop_rows",
    "compute_score",
    "episode_spec",
    "interaction_rows",
    "play_verl_episode",
]


def episode_spec(row: Mapping[str, Any]) -> dict[str, Any]:
    """``env_id``, ``seed``, ``task_id``, ``env_kwargs``, ``max_turns``, ``answer_tool`` of a
    dataset row (``answer_tool``: offer the ``answer`` tool, see docs/contract.md).

    Keys are read at the top level, then from ``extra_info`` and ``agent_kwargs`` (where
    verl datasets keep per-row extras).
    """
    merged: dict[str, Any] = {}
    for key in ("agent_kwargs", "extra_info"):
        if isinstance(row.get(key), Mapping):
            merged.update(row[key])
    merged.update({k: v for k, v in row.items() if k not in ("agent_kwargs", "extra_info")})
    if not merged.get("env_id"):
        raise InvalidConfigError(
            "an agentgym verl row needs 'env_id' (top level or in extra_info), e.g. "
            "{'env_id': 'agentgym/Sokoban-Tiny-v0', 'seed': 3}; build rows with agent_loop_rows()."
        )
    seed = merged.get("seed")
    return {
        "env_id": str(merged["env_id"]),
        "seed": None if seed is None else int(seed),
        "task_id": merged.get("task_id"),
        "env_kwargs": dict(merged.get("env_kwargs") or {}),
        "max_turns": merged.get("max_turns"),
        "answer_tool": answer_tool_option(merged.get("answer_tool")),
    }


def agent_loop_rows(
    env_id: str, seeds: Sequence[int], *, data_source: str = "agentgym", **extra: Any
) -> list[dict[str, Any]]:
    """Dataset rows for the agent loop (one per seed); ``raw_prompt`` is a placeholder that
    verl's dataset needs, the real prompt comes from the env at reset."""
    return [
        {
            "data_source": data_source,
            "agent_name": AGENT_NAME,
            "prompt": [{"role": "user", "content": f"{env_id} seed {s}"}],
            "extra_info": {"env_id": env_id, "seed": int(s), **extra},
        }
        for s in seeds
    ]


async def play_verl_episode(
    row: Mapping[str, Any],
    generate: Any,
    tokenizer: Any,
    *,
    response_length: int | None = None,
) -> TokenEpisode:
    """The framework-free body of :meth:`AgentGymAgentLoop.run` (also usable on its own)."""
    spec = episode_spec(row)
    session = TextSession(
        spec["env_id"], env_kwargs=spec["env_kwargs"], answer_tool=spec["answer_tool"]
    )
    try:
        options = {"task_id": spec["task_id"]} if spec["task_id"] else None
        return await run_token_episode(
            session,
            generate,
            tokenizer,
            seed=spec["seed"],
            options=options,
            max_turns=spec["max_turns"],
            response_length=response_length,
        )
    finally:
        await session.aclose()


def _verl() -> tuple[Any, Any, Any, Any]:
    try:
        from verl.experimental.agent_loop.agent_loop import (
            AgentLoopBase,
            AgentLoopMetrics,
            AgentLoopOutput,
            register,
        )
    except ImportError as exc:
        raise DependencyMissingError(
            "verl (its agent loop)", "pip install verl  (see docs/integrations.md)"
        ) from exc
    return AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register


def _build_agent_loop() -> type:
    AgentLoopBase, AgentLoopMetrics, AgentLoopOutput, register = _verl()

    class AgentGymAgentLoop(AgentLoopBase):  # type: ignore[misc, valid-type]
        """verl agent loop over any agentgym env; see the module docstring."""

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
            request_id = uuid.uuid4().hex

            async def generate(ids: list[int]) -> tuple[list[int], list[float] | None]:
                out = await self.server_manager.generate(
                    request_id=request_id, prompt_ids=ids, sampling_params=sampling_params
                )
                return list(out.token_ids), (list(out.log_probs) if out.log_probs else None)

            length = int(self.rollout_config.response_length)
            ep = await play_verl_episode(kwargs, generate, self.tokenizer, response_length=length)
            return AgentLoopOutput(
                prompt_ids=ep.prompt_ids,
                response_ids=ep.response_ids,
                response_mask=ep.response_mask,
                response_logprobs=ep.response_logprobs,
                reward_score=ep.reward_score,
                num_turns=ep.num_turns,
                metrics=AgentLoopMetrics(),
                extra_fields={
                    "turn_scores": ep.turn_rewards,
                    "tool_rewards": [],
                    "success": ep.success,
                    "task_id": ep.info.get("task_id"),
                    "state_key": ep.info.get("state_key"),
                },
            )

    AgentGymAgentLoop.__module__ = __name__
    AgentGymAgentLoop.__qualname__ = "AgentGymAgentLoop"
    # registered under its importable name: agentgym.integrations.verl.AgentGymAgentLoop
    return register(AGENT_NAME)(AgentGymAgentLoop)


def __getattr__(name: str) -> Any:
    if name == "AgentGymAgentLoop":
        cls = _build_agent_loop()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- the BaseInteraction form ---------------------------------------------------------------


def _interaction_base() -> type:
    try:
        from verl.interactions.base import BaseInteraction  # verl <= 0.5

        return BaseInteraction
    except ImportError:
        return object


class AgentGymInteraction(_interaction_base()):  # type: ignore[misc]
    """verl ``BaseInteraction`` over an agentgym env (one session per ``instance_id``).

    ``config`` holds ``env_id`` (required), optional ``env_kwargs``, ``answer_tool``,
    ``name``, ``max_finished_scores`` and ``idle_timeout_s`` (default 600).
    ``start_interaction(instance_id, seed=..., task_id=...)`` resets; each
    ``generate_response`` steps with the latest assistant message and returns the env's
    reply as text (images replaced by a note: this path is text-only).

    verl's SGLang rollout (up to 0.5) never calls ``finalize_interaction``, so the env is
    closed as soon as its episode ends (``done``), and a ``start_interaction`` that reuses
    a live id closes the old env first; the episode's score stays readable through
    :meth:`calculate_score` until ``finalize_interaction`` (or until
    ``max_finished_scores`` later episodes have ended).

    Episodes cut short by the rollout's turn or length limit never reach ``done`` and get no
    further call, so every call first closes the envs idle for over ``idle_timeout_s``
    seconds (their score is kept like a finished one's); ``None`` turns that off. Set
    ``env_kwargs.max_turns`` to the rollout's ``max_user_turns`` so the turn limit itself
    ends the episode. :meth:`close` closes every env still open.
    """

    def __init__(self, config: Mapping[str, Any], *, clock: Callable[[], float] = time.monotonic):
        self.config = dict(config)
        self.name: str = self.config.get("name", "agentgym")
        if not self.config.get("env_id"):
            raise InvalidConfigError("AgentGymInteraction config needs 'env_id'.")
        self.max_finished_scores = int(self.config.get("max_finished_scores", 65536))
        idle = self.config.get("idle_timeout_s", 600.0)
        self.idle_timeout_s: float | None = None if idle is None else float(idle)
        self._clock = clock
        self._sessions: dict[str, TextSession] = {}
        self._last_used: dict[str, float] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()

    @property
    def live_sessions(self) -> int:
        """Envs currently open (episodes started and not yet ended)."""
        return len(self._sessions)

    async def start_interaction(
        self,
        instance_id: str | None = None,
        seed: int | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ) -> str:
        instance_id = instance_id or uuid.uuid4().hex
        await self._reap_idle()
        old = self._sessions.pop(instance_id, None)
        self._last_used.pop(instance_id, None)
        if old is not None:
            await old.aclose()
        self._finished.pop(instance_id, None)
        session = TextSession(
            self.config["env_id"],
            env_kwargs=self.config.get("env_kwargs"),
            answer_tool=answer_tool_option(self.config.get("answer_tool")),
        )
        try:
            await session.areset(
                None if seed is None else int(seed), {"task_id": task_id} if task_id else None
            )
        except BaseException:
            await session.aclose()
            raise
        self._sessions[instance_id] = session
        self._last_used[instance_id] = self._clock()
        return instance_id

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        await self._reap_idle(keep=instance_id)
        session = self._sessions.get(instance_id)
        if session is None:
            if instance_id in self._finished:
                return True, "The episode has already ended.", 0.0, {"already_done": True}
            raise InvalidConfigError(
                f"no interaction {instance_id!r}: call start_interaction first"
            )
        last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
        self._last_used[instance_id] = math.inf  # in flight: never idle
        try:
            turn = await session.astep(last if last is not None else "")
        finally:
            self._last_used[instance_id] = self._clock()
        reply = "\n".join(str(m["content"]) for m in text_only_messages(turn.messages))
        if turn.done:  # the rollout may never finalize: free the env now
            await self._retire(instance_id)
        return turn.done, reply, turn.reward, turn.info

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        session = self._sessions.get(instance_id)
        if session is not None:
            return session.total_reward
        if instance_id in self._finished:
            return self._finished[instance_id]
        raise InvalidConfigError(f"no interaction {instance_id!r}: call start_interaction first")

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        self._finished.pop(instance_id, None)
        self._last_used.pop(instance_id, None)
        session = self._sessions.pop(instance_id, None)
        if session is not None:
            await session.aclose()

    def close(self) -> None:
        """Close every env still open."""
        self._last_used.clear()
        while self._sessions:
            _, session = self._sessions.popitem()
            session.close()

    async def _retire(self, instance_id: str) -> None:
        """Close one episode's env and keep its score for :meth:`calculate_score`."""
        session = self._sessions.pop(instance_id, None)
        self._last_used.pop(instance_id, None)
        if session is None:
            return
        self._remember(instance_id, session.total_reward)
        await session.aclose()

    async def _reap_idle(self, keep: str | None = None) -> None:
        """Close the envs of episodes idle for over ``idle_timeout_s`` (cut short by the
        rollout, which will not call again)."""
        if self.idle_timeout_s is None:
            return
        now = self._clock()
        stale = [
            iid
            for iid, used in self._last_used.items()
            if iid != keep and now - used > self.idle_timeout_s
        ]
        for iid in stale:
            await self._retire(iid)

    def _remember(self, instance_id: str, score: float) -> None:
        self._finished[instance_id] = score
        while len(self._finished) > self.max_finished_scores:
            self._finished.popitem(last=False)


def compute_score(
    data_source: Any = None,
    solution_str: Any = None,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> float:
    """verl reward function for the interaction form: the episode's summed env rewards.

    verl's SGLang multi-turn rollout keeps the reward of every ``generate_response`` in the
    request's ``reward_scores["user_turn_rewards"]``, and from verl 0.6 on the stock reward
    managers (naive, dapo, batch) hand that dict to the reward function as
    ``extra_info["rollout_reward_scores"]`` (verl 0.5's never do: then this raises an error
    that says so). Select it with
    ``custom_reward_function.path=<this file> custom_reward_function.name=compute_score``
    (docs/integrations/verl.md); without it the per-turn rewards reach no loss.

    Example:
        >>> compute_score("agentgym/Sokoban-Tiny-v0", "", "t", {
        ...     "rollout_reward_scores": {"user_turn_rewards": [0.1, 1.0]}})
        1.1
    """
    scores = (extra_info or {}).get("rollout_reward_scores")
    turns = scores.get("user_turn_rewards") if isinstance(scores, Mapping) else None
    if turns is None:
        raise InvalidConfigError(_no_turn_rewards(scores is None))
    return float(sum(float(r) for r in turns))


#: The first verl release whose stock reward managers pass ``rollout_reward_scores``.
FIRST_VERL_WITH_ROLLOUT_SCORES = (0, 6)


def _installed_verl() -> tuple[str, tuple[int, ...]] | None:
    """The installed verl's version string and its leading numbers, or None."""
    try:
        text = md.version("verl")
    except md.PackageNotFoundError:
        return None
    return text, tuple(int(n) for n in re.findall(r"\d+", text)[:2])


def _no_turn_rewards(manager_passed_none: bool) -> str:
    """Why :func:`compute_score` got no turn rewards, naming the installed verl when it is
    one whose reward managers never pass them."""
    head = (
        "agentgym compute_score found no extra_info['rollout_reward_scores']['user_turn_rewards']"
    )
    found = _installed_verl()
    if manager_passed_none and found and found[1] < FIRST_VERL_WITH_ROLLOUT_SCORES:
        return (
            f"{head}: verl {found[0]}'s stock reward managers never pass the rollout's "
            "interaction rewards to a reward function (they do from verl 0.6 on), so no "
            "reward function can see the env reward there. Use verl >= 0.6 (tested: 0.6.1) "
            "for the interaction form, or verl 0.9's agent loop (AgentGymAgentLoop), whose "
            "env reward needs no reward function (docs/integrations/verl.md)."
        )
    return (
        f"{head}: the rollout recorded no interaction rewards, or this verl's reward "
        "manager does not pass them (use the naive, dapo or batch manager of verl >= 0.6 "
        "with the SGLang multi-turn rollout and AgentGymInteraction)."
    )


def interaction_rows(env_id: str, seeds: Sequence[int], name: str = "agentgym") -> list[dict]:
    """Rows whose ``prompt`` is the env's opening chat (as text: images become a note), with
    the interaction kwargs to match, ``data_source`` (the env id) and ``reward_model``
    (``ground_truth``: the task id), which verl's stock reward managers read."""
    rows = []
    for s in seeds:
        session = TextSession(env_id)
        try:
            start = session.reset(seed=int(s))
        finally:
            session.close()
        rows.append(
            {
                "data_source": env_id,
                "prompt": text_only_messages(start.messages),
                "reward_model": {"style": "rule", "ground_truth": start.info["task_id"]},
                "extra_info": {
                    "interaction_kwargs": {
                        "name": name,
                        "seed": int(s),
                        "task_id": start.info["task_id"],
                    },
                    "tools_kwargs": {},
                },
            }
        )
    return rows

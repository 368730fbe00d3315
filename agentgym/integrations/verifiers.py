"""verifiers: a ``MultiTurnEnv`` over any agentgym env id.

verifiers (the ``MultiTurnEnv`` API of the 0.1 series) runs rollouts as coroutines: the
dataset row's ``prompt`` opens the chat, ``setup_state`` prepares per-rollout state,
``env_response(messages, state)`` answers each model turn with new messages, and setting
``state["final_env_response"]`` ends the rollout. Rewards come from a ``Rubric``.

:func:`load_environment` builds :class:`AgentGymVerifiersEnv` for an id: a dataset whose
prompts are the env's opening chats (one per seed; ``info`` keeps the seed and task id),
a session per rollout reset to that task, and a rubric whose reward is the summed env
reward (plus ``success`` as a zero-weight metric). When verifiers is not installed the
class still exists with the same methods (on a plain base) so it can be driven directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym.integrations.session import TextSession

__all__ = ["AgentGymVerifiersEnv", "env_reward", "load_environment", "opening_rows", "success"]


def _vf() -> Any:
    try:
        import verifiers as vf

        vf.MultiTurnEnv  # noqa: B018  (lazy attribute: fails when verifiers[all] is missing)
        return vf
    except Exception:
        return None


_VF = _vf()
_Base: Any = _VF.MultiTurnEnv if _VF is not None else object


def opening_rows(env_id: str, seeds: Sequence[int], env_kwargs: dict | None = None) -> list[dict]:
    """``{"prompt": opening chat, "info": {"env_id", "seed", "task_id"}}`` per seed."""
    rows = []
    for s in seeds:
        session = TextSession(env_id, env_kwargs=env_kwargs)
        start = session.reset(seed=int(s))
        session.close()
        rows.append(
            {
                "prompt": start.messages,
                "info": {"env_id": env_id, "seed": int(s), "task_id": start.info["task_id"]},
            }
        )
    return rows


def env_reward(state: dict[str, Any], **kwargs: Any) -> float:
    """Rubric function: the summed env reward of the rollout."""
    session = state.get("agentgym_session")
    return float(session.total_reward) if session is not None else 0.0


def success(state: dict[str, Any], **kwargs: Any) -> float:
    """Rubric metric: 1.0 if the env reported success."""
    session = state.get("agentgym_session")
    return float(session.success) if session is not None else 0.0


class AgentGymVerifiersEnv(_Base):  # type: ignore[misc, valid-type]
    """verifiers ``MultiTurnEnv`` over an agentgym env (see the module docstring)."""

    def __init__(self, env_id: str, *, env_kwargs: dict | None = None, **kwargs: Any):
        self.agentgym_env_id = env_id
        self.agentgym_env_kwargs = dict(env_kwargs or {})
        if _Base is not object:
            super().__init__(**kwargs)

    async def setup_state(self, state: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        info = state.get("info") or {}
        session = TextSession(self.agentgym_env_id, env_kwargs=self.agentgym_env_kwargs)
        task = info.get("task_id")
        await session.areset(info.get("seed"), {"task_id": task} if task else None)
        state["agentgym_session"] = session
        return state

    async def env_response(
        self, messages: list[dict[str, Any]], state: dict[str, Any], **kwargs: Any
    ) -> list[dict[str, Any]]:
        session: TextSession = state["agentgym_session"]
        last = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
        turn = await session.astep(last if last is not None else "")
        state["agentgym_last_info"] = turn.info
        if turn.done:
            state["final_env_response"] = turn.messages
            await session.aclose()
        return turn.messages


def load_environment(
    env_id: str = "agentgym/Sokoban-Tiny-v0",
    num_examples: int = 64,
    seed: int = 0,
    max_turns: int = 20,
    **kwargs: Any,
) -> Any:
    """The verifiers entry point (``vf.load_environment`` convention)."""
    rows = opening_rows(env_id, range(seed, seed + num_examples))
    if _VF is None:
        env = AgentGymVerifiersEnv(env_id)
        env.dataset = rows  # type: ignore[attr-defined]
        return env
    from datasets import Dataset

    rubric = _VF.Rubric(funcs=[env_reward, success], weights=[1.0, 0.0])
    return AgentGymVerifiersEnv(
        env_id, dataset=Dataset.from_list(rows), rubric=rubric, max_turns=max_turns, **kwargs
    )

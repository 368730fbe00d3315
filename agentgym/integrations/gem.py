"""GEM / ROLL: every agentgym id as a GEM env (``reset(seed) -> (str, info)``, ``step(str)``).

GEM envs are text in, text out, with Gymnasium's 5-tuple; ROLL's agentic pipeline builds
its envs through GEM's registry. :class:`AgentGymGemEnv` gives an agentgym env that shape
(the observation is the env's new text; the reset observation is the system prompt and
the task), and :func:`register_all` registers ``agentgym:<id>`` for every single-agent id
(``gem.make("agentgym:agentgym/Sokoban-Tiny-v0")``).

GEM's ``make_vec`` builds each env with a ``seed`` keyword (``seed + index``); like GEM's own
envs, that seed drives the first ``reset()`` without a seed, later resets continue the
env's random stream (so autoresets give new tasks). GEM is text only: observation images
are left out with a note saying how many (never base64 text), the task text is kept.

GEM 0.1's ``SyncVectorEnv`` and ``AsyncVectorEnv`` have no ``close()``, so nothing closes
the envs ``make_vec`` built. Each :class:`AgentGymGemEnv` therefore releases its env when it
is garbage-collected (dropping the vector env is enough) or at interpreter exit;
``close_vec(vec)`` closes them at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentgym.error import DependencyMissingError
from agentgym.integrations.session import TextSession, message_text, release_with

__all__ = ["PREFIX", "AgentGymGemEnv", "close_vec", "register_all"]

PREFIX = "agentgym:"


def _gem_env_base() -> type:
    try:
        from gem.core import Env

        return Env
    except Exception:  # gem missing or its optional deps missing
        return object


class AgentGymGemEnv(_gem_env_base()):  # type: ignore[misc]
    """A GEM env over an agentgym id."""

    def __init__(self, env_id: str, seed: int | None = None, **env_kwargs: Any):
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        #: Seed of the first reset that passes none (GEM's ``make``/``make_vec`` set it).
        self.seed = seed
        self._seed_pending = seed is not None
        self.session = TextSession(env_id, env_kwargs=env_kwargs, image_format="none")
        self.tools: list[dict[str, Any]] = []
        # GEM 0.1's vector envs have no close(): release the env (a sandbox, a browser tab)
        # when this object is collected, e.g. with the vector env that holds it, or at exit
        self._release = release_with(self, self.session)

    def reset(self, seed: int | None = None, **kwargs: Any) -> tuple[str, dict[str, Any]]:
        if seed is None and self._seed_pending:
            seed = self.seed
        self._seed_pending = False
        options = {"task_id": kwargs["task_id"]} if kwargs.get("task_id") else None
        start = self.session.reset(seed, options)
        self.tools = start.tools
        text = "\n\n".join(message_text(m) for m in start.messages)
        return text, start.info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        turn = self.session.step(action)
        text = "\n".join(message_text(m) for m in turn.messages)
        return text, turn.reward, turn.terminated, turn.truncated, turn.info

    def sample_random_action(self) -> str:
        admissible = self.session.info.get("admissible_actions") or ["<answer></answer>"]
        rng = self.session.env.unwrapped.np_random
        return str(admissible[int(rng.integers(len(admissible)))])

    def spawn(self, same_state: bool = False, **kwargs: Any) -> AgentGymGemEnv:
        child = AgentGymGemEnv(self.env_id, **{**self.env_kwargs, **kwargs})
        if same_state and self.session.info:
            child.session.reset(None, {"task_id": self.session.info.get("task_id")})
            core: Any = self.session.env.unwrapped
            child_core: Any = child.session.env.unwrapped
            child_core.restore(core.snapshot())
        return child

    def close(self) -> None:
        self._release()


def close_vec(vec: Any) -> int:
    """Close every env of a GEM vector env (GEM 0.1's have no ``close()``); returns how many
    agentgym envs were closed. Envs that are not agentgym's are closed if they can be."""
    closed = 0
    for env in getattr(vec, "envs", []):
        core = env
        while not isinstance(core, AgentGymGemEnv) and hasattr(core, "env"):
            core = core.env  # GEM wrappers keep the wrapped env as .env
        if isinstance(core, AgentGymGemEnv):
            core.close()
            closed += 1
        elif callable(getattr(env, "close", None)):
            env.close()
    return closed


def _factory(env_id: str) -> Callable[..., AgentGymGemEnv]:
    def make(**kwargs: Any) -> AgentGymGemEnv:
        return AgentGymGemEnv(env_id, **kwargs)

    return make


def register_all(register: Callable[..., Any] | None = None) -> list[str]:
    """Register every single-agent agentgym id with GEM; returns the GEM ids.

    ``register`` defaults to ``gem.register``; ROLL and other GEM-compatible registries
    with the same ``register(env_id, entry_point, **kwargs)`` signature work too.
    """
    import agentgym

    known: set[str] = set()
    add: Callable[..., Any]
    if register is None:
        try:
            from gem.envs.registration import ENV_REGISTRY
            from gem.envs.registration import register as gem_register
        except Exception as exc:
            raise DependencyMissingError("gem (gem-llm)", "pip install gem-llm") from exc
        known = set(ENV_REGISTRY)
        add = gem_register
    else:
        add = register
    out = []
    for record in agentgym.list_envs(multi_agent=False):
        gem_id = PREFIX + record.id
        if gem_id not in known:
            add(gem_id, _factory(record.id))
        out.append(gem_id)
    return out

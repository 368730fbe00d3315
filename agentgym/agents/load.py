"""Build a policy from a CLI-style description: a name, a checkpoint or a model folder.

One place that knows every kind, so ``agentgym eval``, ``agentgym demos`` and the trainer's
``--init`` accept the same things:

* ``random`` / ``oracle``: the scripted baseline and the env's privileged oracle;
* ``noisy-oracle``: the oracle with probability ``epsilon`` of a random admissible action;
* ``checkpoint``: the policy of a ``checkpoint.pt`` written by ``agentgym train`` (the byte
  or word transformer, or the transformers model of a ``--policy hf`` run);
* ``hf``: a local transformers causal LM folder (``--model PATH``);
* ``openai``: a model behind any OpenAI-compatible chat-completions server (vLLM, SGLang,
  llama.cpp, a hosted API): ``base_url`` and ``model`` (the served name), through
  :class:`agentgym.agents.http.HTTPPolicy`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentgym.agents.base import Policy
from agentgym.error import InvalidConfigError

POLICY_KINDS = ("oracle", "random", "noisy-oracle", "checkpoint", "hf", "openai")


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """A training checkpoint (``checkpoint.pt`` or the run folder holding it), checked."""
    import torch

    p = Path(path)
    if p.is_dir():
        p = p / "checkpoint.pt"
    if not p.exists():
        raise InvalidConfigError(
            f"no checkpoint at {p}: expected a checkpoint.pt written by `agentgym train` "
            "(or the run folder holding it)."
        )
    try:
        state = torch.load(p, map_location="cpu", weights_only=False)
    except Exception as exc:  # torch raises pickle, zip and runtime errors alike
        raise InvalidConfigError(
            f"{p} is not a torch checkpoint ({type(exc).__name__}: {exc}); expected a "
            "checkpoint.pt written by `agentgym train`."
        ) from exc
    if not isinstance(state, dict) or "policy" not in state:
        found = sorted(state)[:8] if isinstance(state, dict) else type(state).__name__
        raise InvalidConfigError(
            f"{p} is not an agentgym training checkpoint (no 'policy' entry); found {found}."
        )
    return state


def load_checkpoint_state(path: str | Path) -> dict[str, Any]:
    """The policy state (``{"config", "model"}``) stored in a training checkpoint."""
    policy_state: dict[str, Any] = read_checkpoint(path)["policy"]
    return policy_state


def load_policy(
    kind: str,
    *,
    checkpoint: str | Path | None = None,
    model: str | None = None,
    epsilon: float = 0.2,
    seed: int = 0,
    device: str = "cpu",
    temperature: float = 1.0,
    max_new_tokens: int = 256,
    base_url: str | None = None,
    api_key: str | None = None,
    max_concurrency: int = 16,
    request_timeout: float = 120.0,
    http_options: Mapping[str, Any] | None = None,
) -> Policy:
    """A policy of ``kind`` (see :data:`POLICY_KINDS` and the module docstring).

    ``base_url``, ``api_key``, ``max_concurrency`` (requests in flight) and
    ``request_timeout`` (seconds) are for ``openai``; ``model`` is its served model name;
    ``http_options`` go to :class:`agentgym.agents.http.HTTPPolicy` as keyword arguments
    (``top_p``, ``extra_body``, ``tool_messages``, ``retries``).
    """
    from agentgym.agents.scripted import NoisyPolicy, OraclePolicy, RandomPolicy

    if kind == "oracle":
        return OraclePolicy()
    if kind == "random":
        return RandomPolicy(seed)
    if kind == "noisy-oracle":
        return NoisyPolicy(OraclePolicy(), epsilon, seed)
    if kind == "checkpoint":
        if checkpoint is None:
            raise InvalidConfigError("--policy checkpoint needs --checkpoint PATH (checkpoint.pt).")
        from agentgym.agents.transformer import TransformerPolicy

        state = load_checkpoint_state(checkpoint)
        if "hf_model" in state:  # a run trained with --policy hf
            from agentgym.agents.hf import HFPolicy

            hf = HFPolicy(
                state["hf_model"],
                device=device,
                temperature=temperature,
                seed=seed,
                max_new_tokens=max_new_tokens,
            )
            hf.load_state_dict(state)
            return hf
        if state.get("kind") == "word":  # a run trained with --policy word
            from agentgym.agents.wordmodel import WordPolicy

            word = WordPolicy.from_state_dict(state, device=device)
            word.generator.manual_seed(seed)
            word.config.temperature = temperature
            return word
        policy = TransformerPolicy.from_state_dict(state, device=device)
        policy.generator.manual_seed(seed)
        policy.config.temperature = temperature
        return policy
    if kind == "hf":
        if model is None:
            raise InvalidConfigError(
                "--policy hf needs --model PATH (a local transformers folder)."
            )
        from agentgym.agents.hf import HFPolicy

        return HFPolicy(
            model,
            device=device,
            temperature=temperature,
            seed=seed,
            max_new_tokens=max_new_tokens,
        )
    if kind == "openai":
        if not base_url:
            raise InvalidConfigError(
                "--policy openai needs --base-url URL: the server's OpenAI-compatible root, "
                "e.g. http://127.0.0.1:8000/v1 for vLLM or SGLang."
            )
        if not base_url.startswith(("http://", "https://")):
            raise InvalidConfigError(
                f"--base-url must start with http:// or https://, got {base_url!r} "
                "(e.g. http://127.0.0.1:8000/v1)."
            )
        if not model:
            raise InvalidConfigError(
                "--policy openai needs --model NAME: the model's name on the server "
                "(what GET <base-url>/models lists, e.g. Qwen/Qwen2.5-7B-Instruct)."
            )
        from agentgym.agents.http import HTTPPolicy

        return HTTPPolicy(
            base_url,
            model,
            api_key=api_key,
            temperature=temperature,
            max_tokens=max_new_tokens,
            timeout=request_timeout,
            max_concurrency=max_concurrency,
            **dict(http_options or {}),
        )
    raise InvalidConfigError(f"unknown policy {kind!r}; choose from {list(POLICY_KINDS)}.")

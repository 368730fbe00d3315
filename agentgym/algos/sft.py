"""Supervised fine-tuning on demonstrations (behaviour cloning) for the byte transformer.

Each demonstrated step becomes a :class:`~agentgym.agents.Generation` exactly like one the
policy would have sampled at that point, so SFT uses the same scoring and the same token
mask as the RL loss (:meth:`TransformerPolicy.evaluate`): only the model's own tokens carry
gradient, never the prompt or the env's text. When the env lists admissible actions and the
demonstrated action is one of them, the step is a *choice* over those candidates (one
"token": the candidate's log-probability under constrained decoding, what RL trains);
otherwise it is a free-form byte sequence ending in EOS. The loss is the token-mean
negative log-likelihood.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agentgym.agents.base import Generation
from agentgym.agents.transformer import EOS, _encode
from agentgym.algos.demos import DemoStep


def demo_generations(policy: Any, steps: Sequence[DemoStep]) -> list[Generation]:
    """The generations the policy would have to produce to repeat the demonstrations.

    The byte transformer gets choice or byte generations (see the module docstring); a
    policy with ``teacher_forced`` (the HF and word policies) builds its own. A policy that
    can only choose among admissible actions (the word policy) returns None for a step whose
    action is not among them, and that step is left out. Each generation's
    ``meta["episode"]`` names its demonstration episode.
    """
    if hasattr(policy, "teacher_forced"):
        forced = policy.teacher_forced([s.input for s in steps], [s.action for s in steps])
        kept = []
        for st, g in zip(steps, forced):
            if g is not None:
                g.meta["episode"] = st.episode_id
                kept.append(g)
        return kept
    gens = []
    for st in steps:
        prompt = policy._prompt_ids(st.input)
        cands = st.input.info.get("admissible_actions") or []
        if policy.config.constrained and cands and st.action in cands:
            choice = list(cands).index(st.action)
            gens.append(
                Generation(
                    text=st.action,
                    token_ids=np.array(_encode(st.action), dtype=np.int64),
                    logprobs=np.zeros(1, dtype=np.float32),
                    meta={
                        "mode": "choice",
                        "prompt_ids": prompt,
                        "candidates": policy.candidate_views(st.input, list(cands)),
                        "choice": choice,
                    },
                )
            )
        else:
            budget = max(1, min(policy.config.max_new_tokens, policy.config.max_len // 2))
            ids = [*_encode(st.action)[: budget - 1], EOS]
            gens.append(
                Generation(
                    text=st.action,
                    token_ids=np.array(ids, dtype=np.int64),
                    logprobs=np.zeros(len(ids), dtype=np.float32),
                    meta={"mode": "free", "prompt_ids": prompt},
                )
            )
    return gens


def nll_loss(policy: Any, gens: Sequence[Generation]) -> torch.Tensor:
    """Token-mean negative log-likelihood of ``gens`` (differentiable)."""
    logp, _, mask = policy.evaluate(gens)
    return -(logp * mask).sum() / mask.sum().clamp_min(1.0)


@torch.no_grad()
def demo_nll(policy: Any, gens: Sequence[Generation], batch: int = 256) -> float:
    """Token-mean NLL of all ``gens`` (no gradient; dropout-free forward)."""
    total, tokens = 0.0, 0.0
    for i in range(0, len(gens), batch):
        logp, _, mask = policy.evaluate(gens[i : i + batch])
        total += float(-(logp * mask).sum())
        tokens += float(mask.sum())
    policy.model.eval()
    return total / max(tokens, 1.0)

"""Token-level PPO-clip loss with dual clip, k3 KL to a reference policy and an entropy bonus.

All tensors are ``[rows, tokens]``; ``mask`` is 1 on tokens the policy generated and 0 on
padding, prompt, tool output and observation tokens, so only the model's own tokens carry
gradient. The per-step advantage is broadcast over its tokens. Aggregation is *token-mean*:
every unmasked token in the batch weighs the same (verl's ``token-mean``).

For one token with ratio ``rho = exp(logp - logp_old)`` and advantage ``A``:

    L_clip   = max(-A * rho, -A * clip(rho, 1 - eps_low, 1 + eps_high))
    L_dual   = min(L_clip, -A * c)          if A < 0   (dual clip: bound the loss when rho >> 1)
    kl_k3    = exp(ref - logp) - (ref - logp) - 1,  clamped to [-10, 10]  ("low_var_kl")
    loss     = token_mean(L_dual) + beta * token_mean(kl_k3) - ent_coef * token_mean(entropy)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PPOLossConfig:
    """Loss hyperparameters (defaults from the GiGPO reference runs)."""

    clip_low: float = 0.2
    """Lower clip range: ratio floored at ``1 - clip_low``."""
    clip_high: float = 0.2
    """Upper clip range: ratio capped at ``1 + clip_high``."""
    dual_clip: float | None = 3.0
    """Dual-clip constant ``c`` (> 1) for negative advantages; None disables it."""
    kl_coef: float = 0.01
    """Weight ``beta`` of the k3 KL to the reference policy (0 skips it)."""
    entropy_coef: float = 0.001
    """Weight of the entropy bonus."""


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over unmasked entries (token-mean); 0 when nothing is unmasked."""
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp_min(1.0)


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimator of KL(pi || ref): ``e^(r - l) - (r - l) - 1``, clamped to ±10."""
    delta = (ref_logprobs - logprobs).clamp(-20.0, 20.0)
    return (torch.exp(delta) - delta - 1.0).clamp(-10.0, 10.0)


def ppo_clip_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    ref_logprobs: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    config: PPOLossConfig | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The PPO-clip (dual-clip) loss and its metrics.

    Args:
        logprobs: ``[B, T]`` log-probabilities of the taken tokens under the current policy.
        old_logprobs: ``[B, T]`` the same under the policy that sampled them.
        advantages: ``[B]`` (one per step, broadcast over tokens) or ``[B, T]``.
        mask: ``[B, T]`` 1 for generated tokens, 0 elsewhere.
        ref_logprobs: ``[B, T]`` under the frozen reference policy, for the KL term.
        entropy: ``[B, T]`` per-token entropy of the current policy, for the bonus.

    Returns:
        ``(loss, metrics)`` with metrics ``pg_loss``, ``kl``, ``entropy``, ``clip_frac``,
        ``ratio_mean``.
    """
    cfg = config or PPOLossConfig()
    if advantages.dim() == 1:
        advantages = advantages[:, None].expand_as(logprobs)
    advantages = advantages.to(logprobs.dtype)
    log_ratio = (logprobs - old_logprobs).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    loss1 = -advantages * ratio
    loss2 = -advantages * ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    clipped = torch.maximum(loss1, loss2)
    if cfg.dual_clip is not None:
        # for A < 0 the clipped loss grows without bound in rho; cap it at -A * c
        loss3 = -advantages * cfg.dual_clip
        clipped = torch.where(advantages < 0, torch.minimum(clipped, loss3), clipped)
    pg_loss = masked_mean(clipped, mask)
    loss = pg_loss
    metrics = {
        "pg_loss": float(pg_loss.detach()),
        "clip_frac": float(masked_mean((loss2 > loss1).float(), mask)),
        "ratio_mean": float(masked_mean(ratio.detach(), mask)),
        "kl": 0.0,
        "entropy": 0.0,
    }
    if ref_logprobs is not None and cfg.kl_coef:
        kl = masked_mean(kl_k3(logprobs, ref_logprobs), mask)
        loss = loss + cfg.kl_coef * kl
        metrics["kl"] = float(kl.detach())
    if entropy is not None:
        ent = masked_mean(entropy, mask)
        loss = loss - cfg.entropy_coef * ent
        metrics["entropy"] = float(ent.detach())
    return loss, metrics

"""PPO-clip with dual clip, k3 KL and entropy: hand-checked values and masking."""

import math

import torch

from agentgym.algos.losses import PPOLossConfig, kl_k3, masked_mean, ppo_clip_loss


def _loss(logp, old, adv, mask=None, **cfg):
    logp = torch.tensor([logp], dtype=torch.float64)
    old = torch.tensor([old], dtype=torch.float64)
    mask = torch.ones_like(logp) if mask is None else torch.tensor([mask], dtype=torch.float64)
    loss, _ = ppo_clip_loss(
        logp,
        old,
        torch.tensor([adv], dtype=torch.float64),
        mask,
        config=PPOLossConfig(kl_coef=0, entropy_coef=0, **cfg),
    )
    return float(loss)


def test_unclipped_ratio_gives_minus_advantage_times_ratio():
    assert math.isclose(_loss([0.0], [0.0], 2.0), -2.0)
    assert math.isclose(_loss([math.log(1.1)], [0.0], 1.0), -1.1)


def test_positive_advantage_clips_at_one_plus_eps():
    assert math.isclose(_loss([math.log(2.0)], [0.0], 1.0), -1.2)


def test_negative_advantage_dual_clip_caps_the_loss():
    # ratio 10, A = -1: clip gives max(10, 1.2) = 10; dual clip caps at c = 3
    assert math.isclose(_loss([math.log(10.0)], [0.0], -1.0), 3.0)
    assert math.isclose(_loss([math.log(10.0)], [0.0], -1.0, dual_clip=None), 10.0)


def test_mask_excludes_tokens_and_token_mean_weighs_tokens_equally():
    logp = torch.zeros(2, 3)
    old = torch.zeros(2, 3)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.float32)
    loss, _ = ppo_clip_loss(logp, old, adv, mask, config=PPOLossConfig(kl_coef=0, entropy_coef=0))
    # three tokens at -1 and one at +1 -> (-3 + 1) / 4
    assert math.isclose(float(loss), -0.5, rel_tol=1e-6)


def test_k3_kl_is_zero_at_equality_and_positive_elsewhere():
    a = torch.tensor([-1.0, -2.0])
    assert torch.allclose(kl_k3(a, a), torch.zeros(2))
    assert (kl_k3(a, a + 0.5) > 0).all()


def test_entropy_bonus_and_kl_enter_the_loss_with_their_signs():
    logp = torch.zeros(1, 2, requires_grad=True)
    old = torch.zeros(1, 2)
    ref = torch.full((1, 2), -1.0)
    ent = torch.ones(1, 2)
    mask = torch.ones(1, 2)
    base, _ = ppo_clip_loss(
        logp, old, torch.zeros(1), mask, config=PPOLossConfig(kl_coef=0, entropy_coef=0)
    )
    full, m = ppo_clip_loss(
        logp,
        old,
        torch.zeros(1),
        mask,
        ref_logprobs=ref,
        entropy=ent,
        config=PPOLossConfig(kl_coef=0.5, entropy_coef=0.1),
    )
    expected_kl = math.exp(-1) + 1 - 1
    assert math.isclose(m["kl"], expected_kl, rel_tol=1e-6)
    assert math.isclose(float((full - base).detach()), 0.5 * expected_kl - 0.1, rel_tol=1e-6)
    full.backward()
    assert torch.isfinite(logp.grad).all()


def test_empty_mask_gives_zero_not_nan():
    assert float(masked_mean(torch.ones(2, 2), torch.zeros(2, 2))) == 0.0

"""A small decoder-only transformer over bytes, trained from scratch: the reference agent.

The vocabulary is the 256 byte values plus BOS, EOS and PAD, so any env's text is encoded
with no tokenizer to ship. The prompt is the tail of the chat (the latest observation, which
in grid/menu-style envs holds the whole state), at most ``max_prompt_bytes`` bytes.

Two ways to act, chosen per env step:

* **constrained** (default when ``info["admissible_actions"]`` exists): each candidate action
  string is scored by the model's mean log-likelihood of the bytes that tell it apart from
  the other candidates, read right after the prompt (``score_k = mean_j log p(m_kj |
  prompt, m_k<j)``; shared prefix and suffix carry no information and are left out), and
  the action is sampled from ``softmax_k(score_k)``. When the distinguishing parts start
  with distinct bytes (``up``/``down``/``left``/``right``) only their first byte is scored,
  which needs a single forward pass of the prompt per env instead of one per candidate. The policy is then a categorical over candidates whose logprob and entropy are
  exact and differentiable, which makes learning from scratch on a CPU feasible.
* **free**: bytes are sampled autoregressively until EOS or ``max_new_tokens``.

One :meth:`TransformerPolicy.act` call encodes every active env at once (padded batch), on
CPU or, with ``device="cuda"``, on a GPU.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agentgym.agents.base import Generation, PolicyInput

BOS, EOS, PAD = 256, 257, 258
VOCAB = 259


@dataclass
class TransformerConfig:
    """Model and sampling hyperparameters of :class:`TransformerPolicy`."""

    d_model: int = 64
    """Width of the residual stream."""
    n_layers: int = 2
    """Number of transformer blocks."""
    n_heads: int = 4
    """Attention heads per block."""
    max_len: int = 320
    """Longest sequence (prompt + action + BOS/EOS) the position table covers."""
    max_prompt_bytes: int = 160
    """Only the last this-many bytes of the prompt text are fed to the model."""
    max_new_tokens: int = 96
    """Byte budget of a free-form action."""
    temperature: float = 1.0
    """Sampling temperature; 0 means greedy (argmax)."""
    constrained: bool = True
    """Choose among ``info["admissible_actions"]`` when the env lists them."""


class _Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class ByteTransformer(nn.Module):
    """Pre-norm GPT over bytes: embeddings, ``n_layers`` blocks, a tied-free output head."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(VOCAB, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg.d_model, cfg.n_heads) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, VOCAB)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, T, V]`` for ``ids`` ``[B, T]``; ``pad`` marks padding (left or right)."""
        t = ids.shape[1]
        pos = (torch.cumsum(~pad, dim=1) - 1).clamp(0, self.cfg.max_len - 1)
        x = self.tok(ids) + self.pos(pos)
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
        eye = torch.eye(t, dtype=torch.bool, device=ids.device)
        # attend to earlier non-pad keys, and always to yourself (keeps pad rows NaN-free)
        mask = (causal[None] & ~pad[:, None, :]) | eye[None]
        mask = mask[:, None]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln(x))


def _encode(text: str) -> list[int]:
    return list(text.encode("utf-8", errors="replace"))


def _decode(ids: Sequence[int]) -> str:
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def prompt_text(inp: PolicyInput) -> str:
    """The text the byte model reads: the latest message's text content."""
    if not inp.messages:
        return str(inp.info.get("instruction", ""))
    content = inp.messages[-1].get("content", "")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


class TransformerPolicy:
    """The byte transformer as an agentgym :class:`~agentgym.agents.Policy`.

    Example:
        >>> policy = TransformerPolicy(TransformerConfig(d_model=32, n_layers=1), seed=0)
        >>> gen = policy.act([PolicyInput(messages=[{"role": "user", "content": "hi"}],
        ...                               info={"admissible_actions": ["a", "b"]})])[0]
        >>> gen.text in ("a", "b"), gen.meta["choice"] in (0, 1)
        (True, True)
    """

    def __init__(
        self, config: TransformerConfig | None = None, *, device: str = "cpu", seed: int = 0
    ):
        self.config = config or TransformerConfig()
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.model = ByteTransformer(self.config).to(self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

    # ---- encoding --------------------------------------------------------------------------

    def _prompt_ids(self, inp: PolicyInput) -> list[int]:
        ids = _encode(prompt_text(inp))[-self.config.max_prompt_bytes :]
        return [BOS, *ids]

    def _pad(self, seqs: Sequence[Sequence[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), PAD, dtype=torch.long)
        for i, s in enumerate(seqs):
            if left:
                ids[i, width - len(s) :] = torch.tensor(s)
            else:
                ids[i, : len(s)] = torch.tensor(s)
        ids = ids.to(self.device)
        return ids, ids == PAD

    # ---- scoring ---------------------------------------------------------------------------

    @staticmethod
    def _distinct_parts(cands: Sequence[str]) -> tuple[list[int], list[list[int]]]:
        """Split candidates into their shared prefix and the part that tells them apart.

        The shared prefix and suffix carry no information about the choice, and summing
        their log-likelihoods would drown the signal (and make short candidates far likelier
        at initialisation), so a candidate is scored by the MEAN log-likelihood of its
        distinguishing bytes, read right after the prompt.
        """
        enc = [_encode(c) for c in cands]
        p = 0
        while all(len(e) > p for e in enc) and len({e[p] for e in enc}) == 1:
            p += 1
        s = 0
        while all(len(e) - s > p for e in enc) and len({e[len(e) - 1 - s] for e in enc}) == 1:
            s += 1
        mids = [e[p : len(e) - s] for e in enc]
        if len(enc) > 1 and any(not m for m in mids):
            mids = [[*e[p:], EOS] for e in enc]  # one candidate is a prefix of another
        elif len(enc) == 1:
            mids = [[*e[p:], EOS] for e in enc]
        return enc[0][:p], mids

    def _candidate_logits(
        self, prompts: Sequence[list[int]], candidates: Sequence[Sequence[str]]
    ) -> list[torch.Tensor]:
        """Per row, a ``[K]`` tensor of candidate scores (differentiable).

        ``score_k = mean_j log p(m_kj | prompt, m_k<j)`` over the distinguishing
        bytes ``m_k`` of candidate ``k``; the policy is ``softmax_k(score_k)``. The bytes
        after the prompt are the distinguishing part only (the shared prefix is implied).
        """
        parts = [self._distinct_parts(c)[1] for c in candidates]
        fast = [len({m[0] for m in mids}) == len(mids) for mids in parts]
        out: list[torch.Tensor | None] = [None] * len(candidates)
        rows_fast = [i for i, f in enumerate(fast) if f]
        if rows_fast:
            # fast path: distinguishing parts start with distinct bytes, so the choice is
            # read off ONE forward of the prompt: score_k = log p(first byte of m_k | prompt)
            ids, pad = self._pad([prompts[i][-self.config.max_len :] for i in rows_fast], left=True)
            last = torch.log_softmax(self.model(ids, pad)[:, -1].float(), dim=-1)
            for j, i in enumerate(rows_fast):
                first = torch.tensor([m[0] for m in parts[i]], device=self.device)
                out[i] = last[j].gather(0, first)
        slow = [i for i, f in enumerate(fast) if not f]
        if slow:
            scores = self._candidate_means([prompts[i] for i in slow], [parts[i] for i in slow])
            for i, sc in zip(slow, scores):
                out[i] = sc
        return [o for o in out if o is not None]

    def _candidate_means(
        self, prompts: Sequence[list[int]], parts: Sequence[list[list[int]]]
    ) -> list[torch.Tensor]:
        """Mean log-likelihood of each distinguishing part after its prompt (general path)."""
        seqs, spans = [], []
        max_len = self.config.max_len
        for prompt, mids in zip(prompts, parts):
            # the shared prefix is the same for every candidate: it is left out of the input
            # (it carries no information about the choice and would double the sequence)
            for mid in mids:
                keep = max(1, max_len - len(mid))
                seq = (prompt[-keep:] + mid)[-max_len:]
                seqs.append(seq)
                spans.append((len(seq) - len(mid), len(seq)))
        ids, pad = self._pad(seqs, left=False)
        logp = torch.log_softmax(self.model(ids, pad).float(), dim=-1)
        # token j is predicted at position j-1
        tok_logp = logp[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
        pos = torch.arange(ids.shape[1] - 1, device=self.device)[None]
        start = torch.tensor([s for s, _ in spans], device=self.device)[:, None]
        end = torch.tensor([e for _, e in spans], device=self.device)[:, None]
        sel = ((pos >= start - 1) & (pos < end - 1)).float()
        scores = (tok_logp * sel).sum(-1) / sel.sum(-1).clamp_min(1.0)
        out, i = [], 0
        for mids in parts:
            out.append(scores[i : i + len(mids)])
            i += len(mids)
        return out

    def _free_logprobs(
        self, prompts: Sequence[list[int]], actions: Sequence[Sequence[int]]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Per-token logprobs, entropies and mask ``[B, T]`` of given free-form actions."""
        seqs, starts = [], []
        max_len = self.config.max_len
        for prompt, action in zip(prompts, actions):
            keep = max(1, max_len - len(action))
            seq = (prompt[-keep:] + list(action))[-max_len:]
            seqs.append(seq)
            starts.append(len(seq) - len(action))
        ids, pad = self._pad(seqs, left=False)
        logp = torch.log_softmax(self.model(ids, pad).float(), dim=-1)[:, :-1]
        tok_logp = logp.gather(-1, ids[:, 1:, None]).squeeze(-1)
        entropy = -(logp.exp() * logp).sum(-1)
        t = tok_logp.shape[1]
        width = max(len(a) for a in actions)
        out_lp = torch.zeros(len(seqs), width, device=self.device)
        out_ent = torch.zeros_like(out_lp)
        mask = torch.zeros_like(out_lp)
        for i, (s, a) in enumerate(zip(starts, actions)):
            n = min(len(a), t - (s - 1))
            out_lp[i, :n] = tok_logp[i, s - 1 : s - 1 + n]
            out_ent[i, :n] = entropy[i, s - 1 : s - 1 + n]
            mask[i, :n] = 1.0
        return out_lp, out_ent, mask

    # ---- acting ----------------------------------------------------------------------------

    def _sample(self, logits: torch.Tensor) -> torch.Tensor:
        temp = self.config.temperature
        if temp <= 0:
            return logits.argmax(-1)
        probs = torch.softmax(logits / temp, dim=-1)
        return torch.multinomial(probs, 1, generator=self.generator).squeeze(-1)

    @torch.no_grad()
    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        """One batched forward for every input; see the module docstring."""
        self.model.eval()
        out: list[Generation | None] = [None] * len(inputs)
        prompts = [self._prompt_ids(x) for x in inputs]
        con = [
            i
            for i, x in enumerate(inputs)
            if self.config.constrained and x.info.get("admissible_actions")
        ]
        if con:
            cands = [list(inputs[i].info["admissible_actions"]) for i in con]
            scores = self._candidate_logits([prompts[i] for i in con], cands)
            for i, cand, score in zip(con, cands, scores):
                logp = torch.log_softmax(score, dim=-1)
                choice = int(self._sample(score[None])[0])
                out[i] = Generation(
                    text=cand[choice],
                    token_ids=np.array(_encode(cand[choice]), dtype=np.int64),
                    logprobs=np.array([float(logp[choice])], dtype=np.float32),
                    meta={
                        "mode": "choice",
                        "prompt_ids": prompts[i],
                        "candidates": cand,
                        "choice": choice,
                    },
                )
        free = [i for i in range(len(inputs)) if out[i] is None]
        if free:
            for i, (ids, lps) in zip(free, self._generate([prompts[i] for i in free])):
                out[i] = Generation(
                    text=_decode(ids),
                    token_ids=np.array(ids, dtype=np.int64),
                    logprobs=np.array(lps, dtype=np.float32),
                    meta={"mode": "free", "prompt_ids": prompts[i]},
                )
        return [g for g in out if g is not None]

    def _generate(self, prompts: Sequence[list[int]]) -> list[tuple[list[int], list[float]]]:
        """Batched byte sampling (left-padded, so every row appends at the same column)."""
        budget = max(1, min(self.config.max_new_tokens, self.config.max_len // 2))
        keep = self.config.max_len - budget
        seqs = [p[-keep:] for p in prompts]
        ids, pad = self._pad(seqs, left=True)
        done = torch.zeros(len(seqs), dtype=torch.bool, device=self.device)
        new: list[list[int]] = [[] for _ in seqs]
        lps: list[list[float]] = [[] for _ in seqs]
        for _ in range(budget):
            logits = self.model(ids, pad)[:, -1].float()
            nxt = self._sample(logits)
            logp = torch.log_softmax(logits, -1).gather(-1, nxt[:, None]).squeeze(-1)
            for i in range(len(seqs)):
                if not done[i]:
                    new[i].append(int(nxt[i]))
                    lps[i].append(float(logp[i]))
            done |= nxt == EOS
            if bool(done.all()):
                break
            ids = torch.cat([ids, nxt[:, None]], dim=1)
            pad = torch.cat([pad, torch.zeros_like(pad[:, :1])], dim=1)
        # the EOS token is part of the action (it is what ends it) but not of the text
        return [(n, lp) for n, lp in zip(new, lps)]

    # ---- training --------------------------------------------------------------------------

    def evaluate(
        self, generations: Sequence[Generation]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Differentiable ``(logprobs, entropy, mask)``, each ``[B, T]``, of past generations.

        Choice generations have one "token" (the candidate index); free ones their bytes.
        """
        self.model.train()
        b = len(generations)
        rows_c = [i for i, g in enumerate(generations) if g.meta.get("mode") == "choice"]
        rows_f = [i for i, g in enumerate(generations) if g.meta.get("mode") != "choice"]
        width = max([1] + [len(generations[i].token_ids) for i in rows_f])  # type: ignore[arg-type]
        lp = torch.zeros(b, width, device=self.device)
        ent = torch.zeros(b, width, device=self.device)
        mask = torch.zeros(b, width, device=self.device)
        if rows_c:
            scores = self._candidate_logits(
                [generations[i].meta["prompt_ids"] for i in rows_c],
                [generations[i].meta["candidates"] for i in rows_c],
            )
            chosen, entropies = [], []
            for i, score in zip(rows_c, scores):
                logp = torch.log_softmax(score, dim=-1)
                chosen.append(logp[generations[i].meta["choice"]])
                entropies.append(-(logp.exp() * logp).sum())
            idx_c = torch.tensor(rows_c, device=self.device)
            lp = lp.index_copy(0, idx_c, F.pad(torch.stack(chosen)[:, None], (0, width - 1)))
            ent = ent.index_copy(0, idx_c, F.pad(torch.stack(entropies)[:, None], (0, width - 1)))
            mask[idx_c, 0] = 1.0
        if rows_f:
            f_lp, f_ent, f_mask = self._free_logprobs(
                [generations[i].meta["prompt_ids"] for i in rows_f],
                [list(generations[i].token_ids) for i in rows_f],  # type: ignore[arg-type]
            )
            idx = torch.tensor(rows_f, device=self.device)
            lp = lp.index_copy(0, idx, F.pad(f_lp, (0, width - f_lp.shape[1])))
            ent = ent.index_copy(0, idx, F.pad(f_ent, (0, width - f_ent.shape[1])))
            mask = mask.index_copy(0, idx, F.pad(f_mask, (0, width - f_mask.shape[1])))
        return lp, ent, mask

    # ---- persistence -----------------------------------------------------------------------

    def frozen_copy(self) -> TransformerPolicy:
        """A detached copy (e.g. the KL reference policy)."""
        other = copy.copy(self)
        other.model = copy.deepcopy(self.model).eval()
        for p in other.model.parameters():
            p.requires_grad_(False)
        return other

    def state_dict(self) -> dict[str, Any]:
        return {"config": asdict(self.config), "model": self.model.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], device: str = "cpu") -> TransformerPolicy:
        policy = cls(TransformerConfig(**state["config"]), device=device)
        policy.load_state_dict(state)
        return policy

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())


def count_tokens(generations: Sequence[Generation]) -> int:
    """Generated tokens in a batch (bytes for free text; candidate bytes for choices)."""
    return int(sum(0 if g.token_ids is None else len(g.token_ids) for g in generations))


__all__ = [
    "ByteTransformer",
    "TransformerConfig",
    "TransformerPolicy",
    "count_tokens",
    "prompt_text",
]
_ = math  # keep import for readers of the equations above

"""A small decoder-only transformer over bytes, trained from scratch: the reference agent.

The vocabulary is the 256 byte values plus BOS, EOS and PAD, so any env's text is encoded
with no tokenizer to ship. The prompt is the tail of the chat (the latest observation, which
in grid/menu-style envs holds the whole state), at most ``max_prompt_bytes`` bytes.

Two ways to act, chosen per env step:

* **constrained** (default when ``info["admissible_actions"]`` exists): constrained decoding
  over the candidates' byte trie. At each byte where candidates part ways the next-byte
  distribution is renormalised over the bytes that continue some candidate, and
  ``log pi(k)`` sums those restricted log-probabilities along candidate ``k``; the shared
  prefix decides nothing and is left out. The trie goes through the model in one sequence
  per env with a tree attention mask, so a choice among ``up/down/left/right`` costs one
  forward of the prompt and a choice among 40 questions costs the prompt plus the trie's
  distinct bytes. The policy is then an exact, differentiable categorical over the
  candidates, which makes learning from scratch on a CPU feasible.
* **free**: bytes are sampled autoregressively until EOS or ``max_new_tokens``.

One :meth:`TransformerPolicy.act` call encodes every active env at once (padded batch), on
CPU or, with ``device="cuda"``, on a GPU.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agentgym.agents.base import Generation, PolicyInput
from agentgym.agents.checkpoint import ModuleCheckpoint
from agentgym.error import InvalidConfigError

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
    """Longest sequence (prompt + action + BOS/EOS) the position table covers; raised to
    at least ``max_prompt_bytes + 96`` so a full prompt always leaves room for an action."""
    max_prompt_bytes: int = 160
    """Only this many bytes of the prompt text are fed to the model: its tail, or, with
    ``prompt_head_bytes``, its head and tail."""
    prompt_head_bytes: int = 0
    """Of ``max_prompt_bytes``, how many come from the start of the text (e.g. a page's
    ``Task:`` line, with the rest from its end, where the page's state is)."""
    max_new_tokens: int = 96
    """Byte budget of a free-form action."""
    temperature: float = 1.0
    """Sampling temperature; 0 means greedy (argmax)."""
    constrained: bool = True
    """Choose among ``info["admissible_actions"]`` when the env lists them."""
    context: str = "latest"
    """What the model reads: ``latest`` (the latest observation) or ``dialogue`` (the whole
    visible conversation, tool calls written compactly); see :func:`prompt_text`."""
    candidates: str = "action"
    """How a constrained choice is written for the model: ``action`` (the action text) or
    ``element`` (a click as the clicked element's line of the page, e.g.
    ``button "Delete: buy milk 2"``, so a web task's words can be matched to the
    element they name); see :func:`candidate_views`."""

    def __post_init__(self) -> None:
        self.max_len = max(self.max_len, self.max_prompt_bytes + 96)


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

    def forward_prefixed(
        self, x_p: torch.Tensor, x_t: torch.Tensor, mask_t: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-padded prompts ``x_p`` (plain causal attention, so the fused kernel runs
        and no ``T x T`` matrix is built) and, after them, trie tokens ``x_t`` that read the
        prompt keys and each other through ``mask_t`` ``[B, 1, Tt, Tp + Tt]``."""
        b, tp, d = x_p.shape
        q, k, v = (self._split(z, b, tp) for z in self.qkv(self.ln1(x_p)).split(d, dim=-1))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y_p = x_p + self.proj(att.transpose(1, 2).reshape(b, tp, d))
        y_p = y_p + self.mlp(self.ln2(y_p))
        tt = x_t.shape[1]
        if tt == 0:
            return y_p, x_t
        qt, kt, vt = (self._split(z, b, tt) for z in self.qkv(self.ln1(x_t)).split(d, dim=-1))
        att_t = F.scaled_dot_product_attention(
            qt, torch.cat([k, kt], dim=2), torch.cat([v, vt], dim=2), attn_mask=mask_t
        )
        y_t = x_t + self.proj(att_t.transpose(1, 2).reshape(b, tt, d))
        return y_p, y_t + self.mlp(self.ln2(y_t))

    def _split(self, z: torch.Tensor, b: int, t: int) -> torch.Tensor:
        return z.view(b, t, self.heads, -1).transpose(1, 2)


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
        pos = torch.cumsum(~pad, dim=1) - 1
        causal = torch.ones(t, t, dtype=torch.bool, device=ids.device).tril()
        eye = torch.eye(t, dtype=torch.bool, device=ids.device)
        # attend to earlier non-pad keys, and always to yourself (keeps pad rows NaN-free)
        mask = (causal[None] & ~pad[:, None, :]) | eye[None]
        return self.head(self.hidden(ids, pos, mask[:, None]))

    def hidden(self, ids: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Final normed states ``[B, T, D]`` with explicit positions and attention mask
        (``mask[b, 0, i, j]``: token i may read token j)."""
        x = self._embed(ids, pos)
        for block in self.blocks:
            x = block(x, mask)
        return self.ln(x)

    def hidden_prefixed(
        self, prompt: torch.Tensor, trie: torch.Tensor, trie_pos: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Final normed states of right-padded ``prompt`` ``[B, Tp]`` (causal) and of
        ``trie`` tokens ``[B, Tt]`` placed after it with a tree ``mask`` (see
        :meth:`_Block.forward_prefixed`)."""
        pos = torch.arange(prompt.shape[1], device=prompt.device).expand_as(prompt)
        x_p, x_t = self._embed(prompt, pos), self._embed(trie, trie_pos)
        for block in self.blocks:
            assert isinstance(block, _Block)
            x_p, x_t = block.forward_prefixed(x_p, x_t, mask)
        return self.ln(x_p), self.ln(x_t)

    def _embed(self, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        return self.tok(ids) + self.pos(pos.clamp(0, self.cfg.max_len - 1))


@functools.lru_cache(maxsize=4096)
def _choice_trie(cands: tuple[str, ...]) -> _ChoiceTrie:
    """The trie of a candidate list, built once: envs offer the same lists over and over
    (every turn, every PPO epoch), and building one costs milliseconds for 40 candidates."""
    return _ChoiceTrie.build(cands)


class _ChoiceTrie:
    """The byte trie of a candidate list, reduced to what scoring a choice needs.

    ``tokens``/``depths``/``ancestors`` are the trie bytes that lead to a branch point (fed
    after the prompt; depth 1 sits right after the prompt's last byte), ``queries`` the
    branch points (``-1`` is the root, i.e. the prompt's end) with the bytes allowed there,
    and ``picks[k]`` the ``(query, byte)`` decisions that spell candidate ``k``. The shared
    prefix of all candidates is left out (it decides nothing); EOS ends every candidate so
    one that is a prefix of another is still a leaf of its own.
    """

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.depths: list[int] = []
        self.ancestors = np.zeros((0, 0), dtype=bool)
        self.queries: list[tuple[int, list[int]]] = []
        self.picks: list[list[tuple[int, int]]] = []
        self.depth = 0

    @classmethod
    def build(cls, cands: Sequence[str]) -> _ChoiceTrie:
        trie = cls()
        enc = [_encode(c) for c in cands]
        p = 0
        while all(len(e) > p for e in enc) and len({e[p] for e in enc}) == 1:
            p += 1
        mids = [(*e[p:], EOS) for e in enc]
        children: dict[tuple[int, ...], set[int]] = {}
        for mid in mids:
            for j in range(len(mid)):
                children.setdefault(mid[:j], set()).add(mid[j])
        branch = sorted((n for n, c in children.items() if len(c) > 1), key=lambda n: (len(n), n))
        nodes = sorted(
            {n[:j] for n in branch for j in range(1, len(n) + 1)}, key=lambda n: (len(n), n)
        )
        index = {n: i for i, n in enumerate(nodes)}
        trie.tokens = [n[-1] for n in nodes]
        trie.depths = [len(n) for n in nodes]
        trie.depth = max(trie.depths, default=0)
        anc = np.zeros((len(nodes), len(nodes)), dtype=bool)
        for i, n in enumerate(nodes):
            if len(n) > 1:
                anc[i] = anc[index[n[:-1]]]
            anc[i, i] = True
        trie.ancestors = anc
        allowed = {n: sorted(children[n]) for n in branch}
        query = {n: q for q, n in enumerate(branch)}
        trie.queries = [(index[n] if n else -1, allowed[n]) for n in branch]
        trie.picks = [
            [(query[mid[:j]], mid[j]) for j in range(len(mid)) if mid[:j] in query] for mid in mids
        ]
        return trie


def _encode(text: str) -> list[int]:
    return list(text.encode("utf-8", errors="replace"))


def _decode(ids: Sequence[int]) -> str:
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def _content(message: dict[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def compact_action(text: str) -> str:
    """``> name: value, value`` for each tool call (the JSON wrapper carries no information
    for a byte model and would crowd the history out of its window); other text as is."""
    lines = []
    for body in _TOOL_CALL.findall(text):
        try:
            call = json.loads(body)
            args = call.get("arguments") or {}
            lines.append(f"> {call['name']}: " + ", ".join(str(v) for v in args.values()))
        except (ValueError, KeyError, TypeError, AttributeError):
            lines.append(f"> {body.strip()}")
    return "\n".join(lines) if lines else f"> {text}"


def prompt_text(inp: PolicyInput, context: str = "latest") -> str:
    """The text the byte model reads.

    ``latest``: the latest message's text (grid- and page-style envs, whose observation
    holds the whole state). ``dialogue``: every non-system message, one per line, with the
    agent's tool calls written compactly (dialogue envs, whose state is the conversation).
    """
    if not inp.messages:
        return str(inp.info.get("instruction", ""))
    if context == "latest":
        return _content(inp.messages[-1])
    lines = []
    for m in inp.messages:
        if m.get("role") == "system":
            continue
        text = _content(m)
        lines.append(compact_action(text) if m.get("role") == "assistant" else text)
    return "\n".join(lines)


_ELEMENT_LINE = re.compile(r"^\[(\d+)\] (.+)$", re.MULTILINE)


def candidate_views(inp: PolicyInput, actions: Sequence[str], view: str = "action") -> list[str]:
    """The text the model scores for each admissible action (one per action, all distinct).

    ``action``: the actions themselves. ``element``: a click on element ``[bid]`` is written
    as that element's line of the latest page (``link "Oliveburg"``), other actions as
    :func:`compact_action`. A web page names elements by number, and a number says nothing
    about what the element does; its label does, and the task's words can be matched to it.
    A view that repeats an earlier one gets ``#k`` appended (k: the action's index).

    Examples:
        >>> page = {"role": "user", "content": 'Page:\\n[0] button "Done: buy milk 1"'}
        >>> click = '<tool_call>{"name": "click", "arguments": {"bid": "0"}}</tool_call>'
        >>> candidate_views(PolicyInput(messages=[page]), [click, "wait"], "element")
        ['button "Done: buy milk 1"', '> wait']
    """
    if view == "action":
        return list(actions)
    lines = dict(_ELEMENT_LINE.findall(prompt_text(inp, "latest")))
    out: list[str] = []
    for k, action in enumerate(actions):
        shown = None
        bodies = _TOOL_CALL.findall(action)
        if len(bodies) == 1:
            try:
                call = json.loads(bodies[0])
                if call.get("name") == "click":
                    shown = lines.get(str(call["arguments"]["bid"]))
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        shown = shown or compact_action(action)
        out.append(f"{shown} #{k}" if shown in out else shown)
    return out


class TransformerPolicy(ModuleCheckpoint):
    """The byte transformer as an agentgym :class:`~agentgym.agents.Policy`.

    Examples:
        >>> policy = TransformerPolicy(TransformerConfig(d_model=32, n_layers=1), seed=0)
        >>> gen = policy.act([PolicyInput(messages=[{"role": "user", "content": "hi"}],
        ...                               info={"admissible_actions": ["a", "b"]})])[0]
        >>> gen.text in ("a", "b"), gen.meta["choice"] in (0, 1)
        (True, True)
    """

    config_class = TransformerConfig

    def __init__(
        self, config: TransformerConfig | None = None, *, device: str = "cpu", seed: int = 0
    ):
        self.config = config or TransformerConfig()
        if self.config.context not in ("latest", "dialogue"):
            raise InvalidConfigError(
                f"context must be 'latest' or 'dialogue', got {self.config.context!r}."
            )
        if self.config.candidates not in ("action", "element"):
            raise InvalidConfigError(
                f"candidates must be 'action' or 'element', got {self.config.candidates!r}."
            )
        if not 0 <= self.config.prompt_head_bytes < self.config.max_prompt_bytes:
            raise InvalidConfigError(
                "prompt_head_bytes must be in [0, max_prompt_bytes), got "
                f"{self.config.prompt_head_bytes} of {self.config.max_prompt_bytes}."
            )
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.model = ByteTransformer(self.config).to(self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)

    # ---- encoding --------------------------------------------------------------------------

    def _prompt_ids(self, inp: PolicyInput) -> list[int]:
        ids = _encode(prompt_text(inp, self.config.context))
        n, head = self.config.max_prompt_bytes, self.config.prompt_head_bytes
        if len(ids) > n:
            ids = ids[:head] + ids[len(ids) - (n - head) :]
        return [BOS, *ids]

    def candidate_views(self, inp: PolicyInput, actions: Sequence[str]) -> list[str]:
        """What the model scores for ``actions`` (config ``candidates``; see
        :func:`candidate_views`)."""
        return candidate_views(inp, actions, self.config.candidates)

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

    def _candidate_logits(
        self, prompts: Sequence[list[int]], candidates: Sequence[Sequence[str]]
    ) -> list[torch.Tensor]:
        """Per row, a ``[K]`` tensor of candidate log-probabilities (differentiable).

        Constrained decoding over the candidates' byte trie: at every trie node where the
        candidates part ways, the model's next-byte distribution is renormalised over the
        bytes that continue some candidate, and ``log pi(k) = sum`` of those restricted
        log-probabilities along candidate ``k``'s path. Bytes with one possible successor
        cost nothing, so only the branch points are read. The whole trie goes through the
        model in ONE sequence per row, after the prompt, with a tree attention mask (each
        trie byte sees the prompt and its own ancestors), so the cost is the prompt plus the
        trie's distinct bytes, not one prompt per candidate.
        """
        tries = [_choice_trie(tuple(c)) for c in candidates]
        longest = max(1, self.config.max_len - 1 - max(t.depth for t in tries))
        seqs = [p[-longest:] for p in prompts]
        b, tp, tt = len(seqs), max(len(s) for s in seqs), max(len(t.tokens) for t in tries)
        prompt = torch.full((b, tp), PAD, dtype=torch.long)
        trie = torch.full((b, tt), PAD, dtype=torch.long)
        trie_pos = torch.zeros((b, tt), dtype=torch.long)
        mask = torch.zeros((b, tt, tp + tt), dtype=torch.bool)
        mask[:, :, 0] = True  # padding rows read BOS, which keeps them NaN-free
        q_row: list[int] = []
        q_idx: list[int] = []  # flat index into [prompt states ; trie states] of the row
        q_allowed: list[list[int]] = []
        pick_q: list[int] = []
        pick_byte: list[int] = []
        pick_cand: list[int] = []
        n_cands = 0
        for i, (s, t) in enumerate(zip(seqs, tries)):
            n, m = len(s), len(t.tokens)
            prompt[i, :n] = torch.tensor(s)
            if m:
                trie[i, :m] = torch.tensor(t.tokens)
                trie_pos[i, :m] = torch.tensor(t.depths) + (n - 1)
                mask[i, :m, :n] = True
                mask[i, :m, tp : tp + m] = torch.from_numpy(t.ancestors)
            base = len(q_row)
            for node, allowed in t.queries:
                q_row.append(i)
                q_idx.append(n - 1 if node < 0 else tp + node)
                q_allowed.append(allowed)
            for k, path in enumerate(t.picks):
                for q, byte in path:
                    pick_q.append(base + q)
                    pick_byte.append(byte)
                    pick_cand.append(n_cands + k)
            n_cands += len(t.picks)
        dev = self.device
        h_p, h_t = self.model.hidden_prefixed(
            prompt.to(dev), trie.to(dev), trie_pos.to(dev), mask[:, None].to(dev)
        )
        scores = torch.zeros(n_cands, device=dev)
        if q_row:
            hidden = torch.cat([h_p, h_t], dim=1)
            logits = self.model.head(
                hidden[torch.tensor(q_row, device=dev), torch.tensor(q_idx, device=dev)]
            ).float()
            ok = torch.zeros_like(logits, dtype=torch.bool)
            for j, a in enumerate(q_allowed):
                ok[j, a] = True
            logp = torch.log_softmax(logits.masked_fill(~ok, float("-inf")), dim=-1)
            picked = logp[torch.tensor(pick_q, device=dev), torch.tensor(pick_byte, device=dev)]
            scores = scores.index_add(0, torch.tensor(pick_cand, device=dev), picked)
        out, start = [], 0
        for t in tries:
            out.append(scores[start : start + len(t.picks)])
            start += len(t.picks)
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
            views = [self.candidate_views(inputs[i], c) for i, c in zip(con, cands)]
            scores = self._candidate_logits([prompts[i] for i in con], views)
            for i, cand, view, score in zip(con, cands, views, scores):
                logp = torch.log_softmax(score, dim=-1)
                choice = int(self._sample(score[None])[0])
                out[i] = Generation(
                    text=cand[choice],
                    token_ids=np.array(_encode(cand[choice]), dtype=np.int64),
                    logprobs=np.array([float(logp[choice])], dtype=np.float32),
                    meta={
                        "mode": "choice",
                        "prompt_ids": prompts[i],
                        "candidates": view,  # what was scored; ``text`` is the action
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


def count_tokens(generations: Sequence[Generation]) -> int:
    """Generated tokens in a batch (bytes for free text; candidate bytes for choices)."""
    return int(sum(0 if g.token_ids is None else len(g.token_ids) for g in generations))


__all__ = [
    "ByteTransformer",
    "TransformerConfig",
    "TransformerPolicy",
    "compact_action",
    "count_tokens",
    "prompt_text",
]

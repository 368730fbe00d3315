"""A word-level transformer that reads the whole episode and scores admissible actions.

The byte transformer (:mod:`agentgym.agents.transformer`) reads a few hundred bytes, which is
too little for a household task that needs an object seen ten turns ago. This policy reads
words instead, so a window of ``max_tokens`` (1,024 by default) holds the task and the whole
episode, and it has the width (d-model 128-256, 2-4 layers) to use them.

Vocabulary
    The words that occur in at least ``min_episodes`` training-split episodes and at least
    once in lower case (:func:`build_vocabulary`). Any other word - a name invented for a
    test world, a year - becomes a *slot*: the k-th distinct unknown word of a row's text
    (prompt, then candidates) is token ``@k``. Slots carry no meaning, only identity, so a
    model can match a name in the question to the same name in a passage or a candidate
    even when it has never seen that name; and train and test rows look alike.

Scoring
    Each admissible action is written compactly (``> command: go to cabinet 3``; see
    :func:`~agentgym.agents.transformer.compact_action`). The candidates' token trie goes
    through the model after the prompt in one sequence, each trie token reading the prompt
    and its own ancestors (a tree mask; shared prefixes are computed once), and a linear
    head reads the state of the candidate's last token (of an END token after it when the
    candidate is also the start of another): the candidate's score.
    ``log pi(k)`` is the log-softmax of the scores, an exact categorical over the
    candidates; the chosen index is the generation's one "token".

Match features
    Two small embeddings are added to every token's: whether the token occurs in the
    prompt's first line (the task or question; 2 for the first line's own tokens), and how
    often the word pair it ends (the token before it and itself) occurred earlier in the
    prompt (0, 1, 2, 3 or more). A candidate ``go to countertop 2`` thus knows whether
    ``countertop 2`` was seen before and how often, and ``take mug 1 ...`` that ``mug`` is
    in the task, without the model having to learn to look (the exact-match features of
    reading-comprehension models). With ``latest_feature`` a third one marks the candidate
    tokens that occur in the latest observation (the text after the last action line), where
    a search agent finds what to open next. They are functions of the token ids alone.

Caching
    In :meth:`WordPolicy.act` (rollouts, evaluation) each env's prompt is the one of its
    previous turn plus a turn, so the keys and values of the previous turn's prompt are kept
    (until the weights change) and only the new turn and the candidates go through the
    model: a turn costs its own tokens, not the episode's.

Packing
    The rows of one episode share their prompts: each turn's prompt is the previous one plus
    a turn. :meth:`WordPolicy.evaluate` puts every row whose prompt is a prefix of another
    row's into that row's sequence, with its trie reading only its own prefix, so an
    episode of 20 turns costs one pass over its longest prompt plus the tries, not 20.

Examples:
    >>> vocab = build_vocabulary([["go to the cabinet 1", "open the cabinet 1"]], 1)
    >>> policy = WordPolicy(WordConfig(vocab=vocab, d_model=32, n_layers=1), seed=0)
    >>> inp = PolicyInput(messages=[{"role": "user", "content": "go to the cabinet"}],
    ...                   info={"admissible_actions": ["go to cabinet 1", "open cabinet 1"]})
    >>> gen = policy.act([inp])[0]
    >>> gen.text in ("go to cabinet 1", "open cabinet 1"), gen.meta["choice"] in (0, 1)
    (True, True)
"""

from __future__ import annotations

import bisect
import copy
import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agentgym.agents.base import Generation, PolicyInput
from agentgym.agents.checkpoint import ModuleCheckpoint
from agentgym.agents.transformer import compact_action, prompt_text
from agentgym.error import InvalidConfigError

PAD, BOS, END, NL = 0, 1, 2, 3
SPECIALS = 4

_TOKEN = re.compile(r"[^\W\d_]+|\d+|\n|[^\s\w]|_", re.UNICODE)


def words(text: str) -> list[str]:
    """The word tokens of a text: letter runs, digit runs, newlines, single symbols."""
    return _TOKEN.findall(text)


def build_vocabulary(episodes: Iterable[Iterable[str]], min_episodes: int = 2) -> list[str]:
    """The vocabulary of training text: lower-cased words that occur in at least
    ``min_episodes`` episodes (each an iterable of texts) and at least once in lower case
    (so names, always capitalised, stay out and become slots), sorted."""
    df: Counter[str] = Counter()
    lower: set[str] = set()
    for texts in episodes:
        seen: set[str] = set()
        for text in texts:
            for w in words(text):
                if w == "\n":
                    continue
                key = w.lower()
                seen.add(key)
                if w == key:
                    lower.add(key)
        df.update(seen)
    return sorted(w for w, n in df.items() if n >= min_episodes and w in lower)


@dataclass
class WordConfig:
    """Model, vocabulary and sampling settings of :class:`WordPolicy`."""

    vocab: list[str] = field(default_factory=list)
    """Known words (see :func:`build_vocabulary`); everything else is a slot."""
    slots: int = 512
    """Distinct unknown words per row; later ones share the last slot."""
    d_model: int = 128
    n_layers: int = 3
    n_heads: int = 4
    max_tokens: int = 1024
    """Longest prompt in tokens: its first ``head_tokens`` and the rest from its end."""
    head_tokens: int = 96
    """Of ``max_tokens``, how many come from the start (the task)."""
    temperature: float = 1.0
    """Sampling temperature; 0 means greedy (argmax)."""
    context: str = "dialogue"
    """``dialogue`` (every non-system message) or ``latest``; see
    :func:`~agentgym.agents.transformer.prompt_text`."""
    latest_feature: bool = False
    """Mark candidate tokens that occur in the latest observation (see the module
    docstring)."""

    def validate(self) -> None:
        if self.context not in ("latest", "dialogue"):
            raise InvalidConfigError(
                f"context must be 'latest' or 'dialogue', got {self.context!r}."
            )
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise InvalidConfigError(
                f"d_model must split into {self.n_heads} heads of even width, got {self.d_model}."
            )
        if not 0 <= self.head_tokens < self.max_tokens:
            raise InvalidConfigError(
                f"head_tokens must be in [0, max_tokens), got {self.head_tokens} of "
                f"{self.max_tokens}."
            )
        if self.slots < 1 or self.n_layers < 1:
            raise InvalidConfigError(
                f"slots and n_layers must be >= 1, got {self.slots} and {self.n_layers}."
            )


class Tokenizer:
    """Words to ids, with per-row slots for unknown words."""

    def __init__(self, vocab: Sequence[str], slots: int):
        self.index = {w: SPECIALS + i for i, w in enumerate(vocab)}
        self.first_slot = SPECIALS + len(self.index)
        self.slots = slots
        self.size = self.first_slot + slots

    def encode(self, text: str, table: dict[str, int]) -> list[int]:
        """Ids of ``text``; unknown words get slots from (and are added to) ``table``."""
        out = []
        for w in words(text):
            if w == "\n":
                out.append(NL)
                continue
            key = w.lower()
            i = self.index.get(key)
            if i is None:
                if key not in table:
                    table[key] = min(len(table), self.slots - 1)
                i = self.first_slot + table[key]
            out.append(i)
        return out


def action_view(action: str) -> str:
    """How a candidate action is written for the model (tool calls compactly)."""
    return compact_action(action)


# ---- the model -------------------------------------------------------------------------------


def _rope(x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding of ``x`` ``[B, H, T, Dh]`` at positions ``pos`` ``[B, T]``."""
    half = x.shape[-1] // 2
    freq = 10_000.0 ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    ang = pos[:, None, :, None].float() * freq
    cos, sin = ang.cos(), ang.sin()
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


class _Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def _heads(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t, d = x.shape
        q, k, v = (
            z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
            for z in self.qkv(self.ln1(x)).split(d, dim=-1)
        )
        return _rope(q, pos), _rope(k, pos), v

    def forward(
        self,
        x_p: torch.Tensor,
        pos_p: torch.Tensor,
        x_t: torch.Tensor,
        pos_t: torch.Tensor,
        mask_t: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Prompts ``x_p`` (right-padded, causal) and trie tokens ``x_t`` reading the prompt
        keys and each other through ``mask_t`` ``[B, 1, Tt, Tp + Tt]``."""
        b, tp, d = x_p.shape
        q, k, v = self._heads(x_p, pos_p)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y_p = x_p + self.proj(att.transpose(1, 2).reshape(b, tp, d))
        y_p = y_p + self.mlp(self.ln2(y_p))
        tt = x_t.shape[1]
        qt, kt, vt = self._heads(x_t, pos_t)
        att_t = F.scaled_dot_product_attention(
            qt, torch.cat([k, kt], dim=2), torch.cat([v, vt], dim=2), attn_mask=mask_t
        )
        y_t = x_t + self.proj(att_t.transpose(1, 2).reshape(b, tt, d))
        return y_p, y_t + self.mlp(self.ln2(y_t))

    def forward_suffix(
        self,
        x: torch.Tensor,
        pos: torch.Tensor,
        past: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Tokens ``x`` ``[B, S, D]`` after cached keys and values ``past`` (each
        ``[B, H, C, Dh]``), reading both through ``mask`` ``[B, 1, S, C + S]``; returns the
        new states and the tokens' own keys and values."""
        b, n, d = x.shape
        q, k, v = self._heads(x, pos)
        keys, values = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        att = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        y = x + self.proj(att.transpose(1, 2).reshape(b, n, d))
        return y + self.mlp(self.ln2(y)), k, v


#: Buckets of the match features (see the module docstring).
IN_TASK, PAIR_SEEN = 3, 4


class WordTransformer(nn.Module):
    """Pre-norm transformer with rotary positions and a scalar head on END tokens."""

    def __init__(self, cfg: WordConfig, vocab_size: int):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, cfg.d_model)
        self.in_task = nn.Embedding(IN_TASK, cfg.d_model)
        self.pair_seen = nn.Embedding(PAIR_SEEN, cfg.d_model)
        self.in_latest = nn.Embedding(2, cfg.d_model) if cfg.latest_feature else None
        self.blocks = nn.ModuleList(_Block(cfg.d_model, cfg.n_heads) for _ in range(cfg.n_layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.score = nn.Linear(cfg.d_model, 1)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def embed(self, ids: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        """Token embeddings plus the match features ``feats`` ``[..., 3]``."""
        x = self.tok(ids) + self.in_task(feats[..., 0]) + self.pair_seen(feats[..., 1])
        return x if self.in_latest is None else x + self.in_latest(feats[..., 2])

    def forward(
        self,
        prompt: torch.Tensor,
        prompt_feats: torch.Tensor,
        trie: torch.Tensor,
        trie_feats: torch.Tensor,
        trie_pos: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        """Scores ``[B, Tt]`` of every trie token (only END tokens' are used)."""
        pos_p = torch.arange(prompt.shape[1], device=prompt.device).expand_as(prompt)
        x_p, x_t = self.embed(prompt, prompt_feats), self.embed(trie, trie_feats)
        for block in self.blocks:
            x_p, x_t = block(x_p, pos_p, x_t, trie_pos, mask)
        return self.score(self.ln(x_t)).squeeze(-1)

    def forward_suffix(
        self,
        ids: torch.Tensor,
        feats: torch.Tensor,
        pos: torch.Tensor,
        past: Sequence[tuple[torch.Tensor, torch.Tensor]],
        mask: torch.Tensor,
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Scores ``[B, S]`` of tokens read after cached keys and values (one pair per
        block), and the tokens' own keys and values per block."""
        x = self.embed(ids, feats)
        kv = []
        for block, layer_past in zip(self.blocks, past):
            assert isinstance(block, _Block)
            x, k, v = block.forward_suffix(x, pos, layer_past, mask)
            kv.append((k, v))
        return self.score(self.ln(x)).squeeze(-1), kv


# ---- tries and packs -------------------------------------------------------------------------


class _Trie:
    """The token trie of a candidate list: ``tokens``/``depths``/``ancestors`` (every distinct
    prefix of every candidate, parents first) and ``leaves[k]``, the node whose state scores
    candidate k: its last token, or an END token after it where the candidate is also the
    start of another (or is empty), so that every candidate has a node of its own."""

    def __init__(self, cands: Sequence[Sequence[int]]):
        prefixes = {tuple(c[:j]) for c in cands for j in range(len(c))}
        seqs = [tuple(c) if c and tuple(c) not in prefixes else (*c, END) for c in cands]
        nodes = sorted(
            {s[:j] for s in seqs for j in range(1, len(s) + 1)}, key=lambda n: (len(n), n)
        )
        index = {n: i for i, n in enumerate(nodes)}
        self.tokens = [n[-1] for n in nodes]
        self.parents = [n[-2] if len(n) > 1 else -1 for n in nodes]
        self.depths = [len(n) for n in nodes]
        anc = np.zeros((len(nodes), len(nodes)), dtype=bool)
        for i, n in enumerate(nodes):
            if len(n) > 1:
                anc[i] = anc[index[n[:-1]]]
            anc[i, i] = True
        self.ancestors = anc
        self.leaves = [index[s] for s in seqs]


@functools.lru_cache(maxsize=4096)
def _trie(cands: tuple[tuple[int, ...], ...]) -> _Trie:
    return _Trie(cands)


@dataclass
class _Pack:
    """One model sequence: a base prompt and the rows scored against prefixes of it."""

    base: list[int]
    rows: list[int] = field(default_factory=list)
    """Row indices, with the prompt length each reads in ``lengths``."""
    lengths: list[int] = field(default_factory=list)


def _packs(prompts: Sequence[Sequence[int]], trie_sizes: Sequence[int], budget: int) -> list[_Pack]:
    """Rows grouped so each row's prompt is a prefix of its pack's base; a pack's tries stay
    within ``budget`` tokens (a longer group is split, every part keeping the base)."""
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    packs: list[_Pack] = []
    used: list[int] = []
    for i in order:
        p = list(prompts[i])
        for j, pk in enumerate(packs):
            if used[j] + trie_sizes[i] <= budget and pk.base[: len(p)] == p:
                pk.rows.append(i)
                pk.lengths.append(len(p))
                used[j] += trie_sizes[i]
                break
        else:
            packs.append(_Pack(p, [i], [len(p)]))
            used.append(trie_sizes[i])
    return packs


class _Matches:
    """The match features of one prompt (see the module docstring)."""

    def __init__(self, prompt: Sequence[int], act: int | None = None):
        self.prompt = prompt
        self.act = act  # the id of ">", which starts an action line
        end = next((i for i, t in enumerate(prompt) if t == NL), len(prompt))
        self.first_line = end
        self.task = set(prompt[1:end])
        self.pairs: dict[tuple[int, int], list[int]] = {}
        for j in range(1, len(prompt)):
            self.pairs.setdefault((prompt[j - 1], prompt[j]), []).append(j)

    def prompt_feats(self) -> np.ndarray:
        """``[T, 2]`` for the prompt's own tokens (each pair counted before it)."""
        out = np.zeros((len(self.prompt), 3), dtype=np.int64)
        for j, t in enumerate(self.prompt):
            out[j, 0] = 2 if 0 < j < self.first_line else int(t in self.task)
            if j:
                seen = bisect.bisect_left(self.pairs[(self.prompt[j - 1], t)], j)
                out[j, 1] = min(seen, PAIR_SEEN - 1)
        return out

    def trie_feats(self, trie: _Trie, n: int) -> np.ndarray:
        """``[Tt, 2]`` for a trie read after the first ``n`` prompt tokens."""
        task = self.task if n > self.first_line else set(self.prompt[1:n])
        out = np.zeros((len(trie.tokens), 3), dtype=np.int64)
        latest = self.latest(n)
        for i, (t, parent) in enumerate(zip(trie.tokens, trie.parents)):
            out[i, 0] = int(t in task)
            out[i, 2] = int(t in latest)
            if parent >= 0:
                seen = bisect.bisect_left(self.pairs.get((parent, t), []), n)
                out[i, 1] = min(seen, PAIR_SEEN - 1)
        return out

    def latest(self, n: int) -> set[int]:
        """The tokens of the latest observation within the first ``n`` prompt tokens: after
        the line of the last action (a line that starts with ``>``), else all of them."""
        p = self.prompt
        start = 1
        if self.act is not None:
            for i in range(n - 1, 0, -1):
                if p[i] == self.act and p[i - 1] in (NL, BOS):
                    end = next((j for j in range(i, n) if p[j] == NL), n)
                    start = end + 1
                    break
        return set(p[start:n])


# ---- the policy ------------------------------------------------------------------------------


class WordPolicy(ModuleCheckpoint):
    """The word transformer as an agentgym :class:`~agentgym.agents.Policy`; see the module
    docstring. It acts only where the env lists ``info["admissible_actions"]``."""

    pack_budget = 1024
    """Trie tokens per packed sequence."""
    packs_episodes = True
    """Rows of one episode are cheapest scored together (the trainer keeps them together)."""
    token_budget = 24_000
    """Padded tokens per forward (packs are scored in chunks of this size)."""

    config_class = WordConfig
    checkpoint_kind = "word"

    def __init__(self, config: WordConfig | None = None, *, device: str = "cpu", seed: int = 0):
        self.config = config or WordConfig()
        self.config.validate()
        self.tokenizer = Tokenizer(self.config.vocab, self.config.slots)
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.model = WordTransformer(self.config, self.tokenizer.size).to(self.device)
        self.generator = torch.Generator(device=self.device).manual_seed(seed)
        self._cache: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}
        self._cache_key: tuple[int, ...] = ()

    # ---- encoding ------------------------------------------------------------------------

    def encode(self, inp: PolicyInput, actions: Sequence[str]) -> tuple[list[int], list[list[int]]]:
        """Prompt ids (BOS, head and tail of the context) and each action's ids."""
        table: dict[str, int] = {}
        ids = self.tokenizer.encode(prompt_text(inp, self.config.context), table)
        n, head = self.config.max_tokens - 1, self.config.head_tokens
        if len(ids) > n:
            ids = ids[:head] + ids[len(ids) - (n - head) :]
        cands = [self.tokenizer.encode(action_view(a), table) for a in actions]
        return [BOS, *ids], cands

    # ---- scoring -------------------------------------------------------------------------

    def scores(
        self, prompts: Sequence[Sequence[int]], candidates: Sequence[Sequence[Sequence[int]]]
    ) -> list[torch.Tensor]:
        """Per row, the ``[K]`` candidate scores (differentiable); see the module docstring."""
        tries = [_trie(tuple(tuple(c) for c in cands)) for cands in candidates]
        packs = _packs(prompts, [len(t.tokens) for t in tries], self.pack_budget)
        out: list[torch.Tensor | None] = [None] * len(prompts)
        chunk: list[_Pack] = []
        for pk in sorted(packs, key=lambda pk: len(pk.base)):
            width = len(pk.base) + sum(len(tries[i].tokens) for i in pk.rows)
            if chunk and width * (len(chunk) + 1) > self.token_budget:
                self._score_packs(chunk, tries, out)
                chunk = []
            chunk.append(pk)
        if chunk:
            self._score_packs(chunk, tries, out)
        return [s for s in out if s is not None]

    def _score_packs(
        self, packs: Sequence[_Pack], tries: Sequence[_Trie], out: list[torch.Tensor | None]
    ) -> None:
        b = len(packs)
        tp = max(len(pk.base) for pk in packs)
        tt = max(sum(len(tries[i].tokens) for i in pk.rows) for pk in packs)
        prompt = torch.full((b, tp), PAD, dtype=torch.long)
        prompt_feats = torch.zeros((b, tp, 3), dtype=torch.long)
        trie = torch.full((b, tt), PAD, dtype=torch.long)
        trie_feats = torch.zeros((b, tt, 3), dtype=torch.long)
        pos = torch.zeros((b, tt), dtype=torch.long)
        mask = torch.zeros((b, tt, tp + tt), dtype=torch.bool)
        mask[:, :, 0] = True  # padding trie tokens read BOS, which keeps them NaN-free
        leaves: list[tuple[int, int, list[int]]] = []  # (row, pack, flat leaf positions)
        for j, pk in enumerate(packs):
            prompt[j, : len(pk.base)] = torch.tensor(pk.base)
            matches = _Matches(pk.base, self.tokenizer.index.get(">"))
            prompt_feats[j, : len(pk.base)] = torch.from_numpy(matches.prompt_feats())
            at = 0
            for row, n in zip(pk.rows, pk.lengths):
                t = tries[row]
                m = len(t.tokens)
                trie[j, at : at + m] = torch.tensor(t.tokens)
                trie_feats[j, at : at + m] = torch.from_numpy(matches.trie_feats(t, n))
                pos[j, at : at + m] = torch.tensor(t.depths) + (n - 1)
                mask[j, at : at + m, :n] = True
                mask[j, at : at + m, tp + at : tp + at + m] = torch.from_numpy(t.ancestors)
                leaves.append((row, j, [at + leaf for leaf in t.leaves]))
                at += m
        dev = self.device
        s = self.model(
            prompt.to(dev),
            prompt_feats.to(dev),
            trie.to(dev),
            trie_feats.to(dev),
            pos.to(dev),
            mask[:, None].to(dev),
        ).float()
        for row, j, idx in leaves:
            out[row] = s[j, torch.tensor(idx, device=dev)]

    # ---- the key/value cache of act -----------------------------------------------------

    def _weights_key(self) -> tuple[int, ...]:
        """Changes whenever the weights do (optimiser steps and loads write in place)."""
        return (id(self.model), *(p._version for p in self.model.parameters()))

    def _cached(self, prompt: Sequence[int]) -> tuple[int, list[tuple[torch.Tensor, ...]]]:
        """The longest cached prefix of ``prompt`` (a previous turn's prompt ends just
        before a newline): its length and per-block keys and values."""
        key = tuple(prompt)
        if key in self._cache:
            return len(key), list(self._cache[key])
        tried = 0
        for j in range(len(prompt) - 1, 0, -1):
            if prompt[j] != NL:
                continue
            got = self._cache.get(key[:j])
            if got is not None:
                return j, list(got)
            tried += 1
            if tried == 8:
                break
        return 0, []

    def _act_scores(
        self, prompts: Sequence[list[int]], candidates: Sequence[Sequence[Sequence[int]]]
    ) -> list[torch.Tensor]:
        """:meth:`scores` for acting: the new part of each prompt and the candidates go
        through the model after the cached keys and values of the prompt's earlier part."""
        if self._cache_key != self._weights_key():
            self._cache, self._cache_key = {}, self._weights_key()
        tries = [_trie(tuple(tuple(c) for c in cands)) for cands in candidates]
        past = [self._cached(p) for p in prompts]
        b, n_layers = len(prompts), len(self.model.blocks)
        heads = self.config.n_heads
        dh = self.config.d_model // heads
        c_max = max(c for c, _ in past)
        s_max = max(len(p) - c + len(t.tokens) for p, (c, _), t in zip(prompts, past, tries))
        ids = torch.full((b, s_max), PAD, dtype=torch.long)
        feats = torch.zeros((b, s_max, 3), dtype=torch.long)
        pos = torch.zeros((b, s_max), dtype=torch.long)
        mask = torch.zeros((b, s_max, c_max + s_max), dtype=torch.bool)
        mask[:, :, c_max : c_max + s_max] = torch.eye(s_max, dtype=torch.bool)  # pads: self
        keys = [torch.zeros(b, heads, c_max, dh, device=self.device) for _ in range(n_layers)]
        values = [torch.zeros(b, heads, c_max, dh, device=self.device) for _ in range(n_layers)]
        for i, (prompt, (c, kv), t) in enumerate(zip(prompts, past, tries)):
            n, u, m = len(prompt), len(prompt) - c, len(t.tokens)
            matches = _Matches(prompt, self.tokenizer.index.get(">"))
            ids[i, :u] = torch.tensor(prompt[c:], dtype=torch.long)
            feats[i, :u] = torch.from_numpy(matches.prompt_feats()[c:])
            pos[i, :u] = torch.arange(c, n)
            mask[i, :u, :c] = True
            mask[i, :u, c_max : c_max + u] = torch.ones(u, u, dtype=torch.bool).tril()
            ids[i, u : u + m] = torch.tensor(t.tokens)
            feats[i, u : u + m] = torch.from_numpy(matches.trie_feats(t, n))
            pos[i, u : u + m] = torch.tensor(t.depths) + (n - 1)
            mask[i, u : u + m, :c] = True
            mask[i, u : u + m, c_max : c_max + u] = True
            mask[i, u : u + m, c_max + u : c_max + u + m] = torch.from_numpy(t.ancestors)
            for layer, (k, v) in enumerate(kv):
                keys[layer][i, :, :c] = k
                values[layer][i, :, :c] = v
        dev = self.device
        s, new = self.model.forward_suffix(
            ids.to(dev), feats.to(dev), pos.to(dev), list(zip(keys, values)), mask[:, None].to(dev)
        )
        self._cache = {}
        out = []
        for i, (prompt, (c, _), t) in enumerate(zip(prompts, past, tries)):
            u = len(prompt) - c
            self._cache[tuple(prompt)] = [
                (torch.cat([keys[j][i, :, :c], k[i, :, :u]], dim=1),
                 torch.cat([values[j][i, :, :c], v[i, :, :u]], dim=1))
                for j, (k, v) in enumerate(new)
            ]  # fmt: skip
            out.append(s[i, torch.tensor([u + leaf for leaf in t.leaves], device=dev)].float())
        return out

    # ---- acting --------------------------------------------------------------------------

    @torch.no_grad()
    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        """One batched scoring of every input's admissible actions; one choice each."""
        self.model.eval()
        encoded = []
        for inp in inputs:
            actions = list(inp.info.get("admissible_actions") or [])
            if not actions:
                raise InvalidConfigError(
                    "the word policy chooses among info['admissible_actions'], and this env "
                    "listed none; use --policy byte or hf for free-form actions."
                )
            encoded.append((actions, *self.encode(inp, actions)))
        scores = self._act_scores([e[1] for e in encoded], [e[2] for e in encoded])
        out = []
        for (actions, prompt, cands), score in zip(encoded, scores):
            logp = torch.log_softmax(score, dim=-1)
            choice = self._sample(score)
            out.append(_generation(actions[choice], prompt, cands, choice, float(logp[choice])))
        return out

    def _sample(self, score: torch.Tensor) -> int:
        temp = self.config.temperature
        if temp <= 0:
            return int(score.argmax())
        probs = torch.softmax(score / temp, dim=-1)
        return int(torch.multinomial(probs, 1, generator=self.generator)[0])

    # ---- training ------------------------------------------------------------------------

    def teacher_forced(
        self, inputs: Sequence[PolicyInput], actions: Sequence[str]
    ) -> list[Generation | None]:
        """The generations that repeat ``actions`` (SFT), one per input; None where the
        action is not admissible (the policy could never take it)."""
        out: list[Generation | None] = []
        for inp, action in zip(inputs, actions):
            cands = list(inp.info.get("admissible_actions") or [])
            if action not in cands:
                out.append(None)
                continue
            prompt, ids = self.encode(inp, cands)
            out.append(_generation(action, prompt, ids, cands.index(action), 0.0))
        return out

    def evaluate(
        self, generations: Sequence[Generation]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Differentiable ``(logprobs, entropy, mask)``, each ``[B, 1]``, of past choices."""
        self.model.train()
        scores = self.scores(
            [g.meta["prompt_ids"] for g in generations],
            [g.meta["candidate_ids"] for g in generations],
        )
        lp, ent = [], []
        for g, score in zip(generations, scores):
            logp = torch.log_softmax(score, dim=-1)
            lp.append(logp[g.meta["choice"]])
            ent.append(-(logp.exp() * logp).sum())
        mask = torch.ones(len(generations), 1, device=self.device)
        return torch.stack(lp)[:, None], torch.stack(ent)[:, None], mask

    # ---- persistence ---------------------------------------------------------------------

    def frozen_copy(self) -> WordPolicy:
        """A detached copy (e.g. the KL reference policy)."""
        other = copy.copy(self)
        other.model = copy.deepcopy(self.model).eval()
        other._cache, other._cache_key = {}, ()
        for p in other.model.parameters():
            p.requires_grad_(False)
        return other


def _generation(
    action: str, prompt: list[int], cands: list[list[int]], choice: int, logp: float
) -> Generation:
    return Generation(
        text=action,
        token_ids=np.array(cands[choice], dtype=np.int64),
        logprobs=np.array([logp], dtype=np.float32),
        meta={"mode": "choice", "prompt_ids": prompt, "candidate_ids": cands, "choice": choice},
    )


def is_word_state(state: dict[str, Any]) -> bool:
    """Whether a checkpoint's policy state is a :class:`WordPolicy`'s."""
    return state.get("kind") == "word"


__all__ = [
    "WordConfig",
    "WordPolicy",
    "WordTransformer",
    "action_view",
    "build_vocabulary",
    "is_word_state",
    "words",
]

"""``HFPolicy``: a transformers causal LM from a local checkpoint as a batched policy.

Each :meth:`HFPolicy.act` call renders every input's chat with the tokenizer's chat template
(the env's OpenAI tool schemas passed as ``tools``), left-pads the batch and runs ONE
``model.generate``. Each :class:`~agentgym.agents.Generation` carries the generated token ids
(up to and including EOS) and their log-probabilities under the sampling distribution, as
verl / TRL style trainers expect. Nothing is downloaded: ``model`` is a local directory (or
an already-built model and tokenizer).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agentgym.agents.base import Generation, PolicyInput
from agentgym.error import DependencyMissingError


def _text_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages with multimodal content flattened to text (text-only templates)."""
    out = []
    for m in messages:
        content = m.get("content", "")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append({"role": m.get("role", "user"), "content": content})
    return out


class HFPolicy:
    """A local transformers model.

    Args:
        model: a local checkpoint directory, or a ``PreTrainedModel``.
        tokenizer: required when ``model`` is a model object; else loaded from the directory.
        device: ``cpu`` or ``cuda``.
        max_new_tokens: generation budget per turn.
        temperature: 0 means greedy.
        seed: seeds torch's sampler before each call for reproducible batches.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        device: str = "cpu",
        max_new_tokens: int = 256,
        temperature: float = 1.0,
        top_p: float = 1.0,
        seed: int | None = None,
        send_tools: bool = True,
    ):
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise DependencyMissingError("transformers", "pip install transformers") from exc
        self.torch = torch
        self.source = model if isinstance(model, str) else None
        if isinstance(model, str):
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(model, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(model, local_files_only=True)
        if tokenizer is None:
            raise ValueError("HFPolicy(model_object) needs tokenizer=...")
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.tokenizer = tokenizer
        self.model = model.to(device).eval()
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.send_tools = send_tools

    def render(self, item: PolicyInput) -> str:
        """The prompt text of one input (chat template + generation prompt)."""
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": True}
        if self.send_tools and item.info.get("tools"):
            kwargs["tools"] = item.info["tools"]
        return str(self.tokenizer.apply_chat_template(_text_messages(item.messages), **kwargs))

    def act(self, inputs: Sequence[PolicyInput]) -> list[Generation]:
        """One batched ``generate`` over all inputs."""
        torch = self.torch
        if not inputs:
            return []
        self.model.eval()
        prompts = [self.render(x) for x in inputs]
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        if self.seed is not None:
            torch.manual_seed(self.seed)
        sample = self.temperature > 0
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": sample,
            "return_dict_in_generate": True,
            "output_scores": True,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.tokenizer.eos_token_id,
        }
        if sample:
            gen_kwargs.update(temperature=self.temperature, top_p=self.top_p, top_k=0)
        with torch.no_grad():
            out = self.model.generate(**enc, **gen_kwargs)
        prompt_len = enc["input_ids"].shape[1]
        new = out.sequences[:, prompt_len:]
        # log p of each sampled token under the (temperature-scaled) sampling distribution
        scores = torch.stack(out.scores, dim=1).float()  # [B, T, V] processed logits
        logp = torch.log_softmax(scores, dim=-1).gather(-1, new[..., None]).squeeze(-1)
        eos = self.tokenizer.eos_token_id
        result = []
        for i in range(len(inputs)):
            ids = new[i].tolist()
            n = len(ids)
            if eos is not None and eos in ids:
                n = ids.index(eos) + 1
            ids = ids[:n]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            result.append(
                Generation(
                    text=text,
                    token_ids=np.array(ids, dtype=np.int64),
                    logprobs=logp[i, :n].cpu().numpy().astype(np.float32),
                    meta={
                        "prompt_ids": enc["input_ids"][i][enc["attention_mask"][i] > 0]
                        .cpu()
                        .numpy()
                    },
                )
            )
        return result

    # ---- training (the trainer's policy interface) --------------------------------------------

    def teacher_forced(
        self, inputs: Sequence[PolicyInput], actions: Sequence[str]
    ) -> list[Generation]:
        """Generations that repeat given ``actions`` (demonstrations), ending in EOS."""
        out = []
        eos = self.tokenizer.eos_token_id
        for item, action in zip(inputs, actions):
            prompt = self.tokenizer(self.render(item), add_special_tokens=False)["input_ids"]
            ids = list(self.tokenizer(action, add_special_tokens=False)["input_ids"])
            ids = ids[: max(0, self.max_new_tokens - 1)] + ([eos] if eos is not None else [])
            out.append(
                Generation(
                    text=action,
                    token_ids=np.array(ids, dtype=np.int64),
                    logprobs=np.zeros(len(ids), dtype=np.float32),
                    meta={"prompt_ids": np.array(prompt, dtype=np.int64)},
                )
            )
        return out

    def evaluate(self, generations: Sequence[Generation]) -> tuple[Any, Any, Any]:
        """Differentiable ``(logprobs, entropy, mask)``, each ``[B, T]``, of the generated
        tokens of past generations given their prompts (prompt tokens carry no gradient)."""
        torch = self.torch
        self.model.train()
        seqs, starts = [], []
        for g in generations:
            prompt = [int(t) for t in g.meta["prompt_ids"]]
            gen = [int(t) for t in (g.token_ids if g.token_ids is not None else [])]
            seqs.append(prompt + gen)
            starts.append(len(prompt))
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        att = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = torch.tensor(s)
            att[i, : len(s)] = 1
        ids, att = ids.to(self.device), att.to(self.device)
        logits = self.model(input_ids=ids, attention_mask=att).logits.float()
        logp_all = torch.log_softmax(logits[:, :-1], dim=-1)
        tok = logp_all.gather(-1, ids[:, 1:, None]).squeeze(-1)
        ent = -(logp_all.exp() * logp_all).sum(-1)
        gen_w = max(1, max(len(s) - st for s, st in zip(seqs, starts)))
        lp = torch.zeros(len(seqs), gen_w, device=self.device)
        en = torch.zeros_like(lp)
        mask = torch.zeros_like(lp)
        for i, (s, st) in enumerate(zip(seqs, starts)):
            n = len(s) - st
            if n:
                lp[i, :n] = tok[i, st - 1 : st - 1 + n]
                en[i, :n] = ent[i, st - 1 : st - 1 + n]
                mask[i, :n] = 1.0
        return lp, en, mask

    def state_dict(self) -> dict[str, Any]:
        return {"hf_model": self.source, "model": self.model.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])

    def frozen_copy(self) -> HFPolicy:
        """A detached copy (the KL reference)."""
        import copy

        other = copy.copy(self)
        other.model = copy.deepcopy(self.model).eval()
        for p in other.model.parameters():
            p.requires_grad_(False)
        return other

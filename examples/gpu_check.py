"""The GPU path, checked in one run of under 8 minutes on one GPU.

1. **Batched policy inference on Household-v0**: tokens per second of one ``act`` call over
   1, 8, 64 and 256 envs (first turns of distinct train tasks, then a few turns more), for
   the two reference policies (the byte transformer and the word transformer of
   ``--policy word``) and for a transformers causal LM of about 0.5B parameters built from
   a Qwen2-style config (random weights, a byte-level BPE tokenizer trained here on household
   text: nothing is downloaded). Tokens: prompt tokens read plus tokens generated or scored.
2. **The protocol's RL phase at a larger model size**: explorer demonstrations, SFT of a
   word transformer at d-model 512 with 6 layers on the GPU, then GiGPO from that start
   with a held-out evaluation before and after (each stage time-boxed).

Writes ``gpu_check.json`` (every number) under ``--out`` and prints a summary.

    python examples/gpu_check.py --out runs/gpu-check

Without a CUDA device it refuses with one line (exit status 2); ``--dry-run`` runs the same
code at toy sizes on the CPU, to check the script itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ENV = "agentgym/Household-v0"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)

#: Sizes of the real run and of the CPU dry run.
SIZES: dict[str, dict[str, Any]] = {
    "gpu": dict(
        envs=(1, 8, 64, 256), turns=3, hf_layers=24, hf_hidden=896, hf_heads=14, hf_kv=2,
        hf_inter=4864, hf_vocab=151_936, hf_new=32, word_d=512, word_layers=6, demos=256,
        sft_epochs=4, rl_steps=3000, tasks=4, group=8, eval_tasks=64, stage_s=150.0,
    ),
    "dry": dict(
        envs=(1, 2), turns=1, hf_layers=1, hf_hidden=32, hf_heads=2, hf_kv=1, hf_inter=64,
        hf_vocab=600, hf_new=4, word_d=16, word_layers=1, demos=4, sft_epochs=1,
        rl_steps=20, tasks=1, group=2, eval_tasks=2, stage_s=60.0,
    ),
}  # fmt: skip


def refuse_without_gpu(dry: bool) -> str | None:
    """The one-line refusal when no CUDA device is there (None when the run can go on)."""
    import torch

    if dry or torch.cuda.is_available():
        return None
    return (
        "gpu_check: no CUDA device (torch.cuda.is_available() is False): this script "
        "measures the GPU path and needs one GPU; --dry-run runs it at toy sizes on the CPU."
    )


def household_inputs(n: int, seed: int = 0) -> tuple[Any, list[Any]]:
    """An env pool of ``n`` Household-v0 train tasks, reset, and their first inputs."""
    import functools

    import gymnasium as gym

    from agentgym.agents.base import PolicyInput
    from agentgym.pools import EnvPool
    from agentgym.rollout.steps import Chat

    pool = EnvPool([functools.partial(gym.make, ENV, max_turns=30)] * n, backend="sync")
    started = pool.reset(seeds=[seed + k for k in range(n)])
    inputs = [PolicyInput(Chat.after_reset(o, i).messages(None), dict(i)) for o, i in started]
    return pool, inputs


def _step_inputs(pool: Any, inputs: list[Any], gens: list[Any]) -> list[Any]:
    """The next turn's inputs after ``gens`` (an env whose episode ended keeps its input:
    the timing needs a batch of the same size, not a finished episode)."""
    from agentgym.wrappers.chat import observation_message

    from agentgym.agents.base import PolicyInput
    from agentgym.rollout.steps import merge_step_info

    results = pool.step({k: g.text for k, g in enumerate(gens)})
    out = []
    for k, (inp, gen) in enumerate(zip(inputs, gens)):
        res = results[k]
        if res.terminated or res.truncated or "admissible_actions" not in res.info:
            out.append(inp)
            continue
        messages = [*inp.messages, {"role": "assistant", "content": gen.text},
                    observation_message(res.obs, "user")]  # fmt: skip
        out.append(PolicyInput(messages, merge_step_info(inp.info, res.info)))
    return out


def tokens_of(gens: list[Any]) -> int:
    """Tokens one ``act`` read and produced: prompt plus generated (HF) or prompt plus
    scored candidate tokens (byte and word transformers)."""
    total = 0
    for g in gens:
        meta = g.meta
        if "candidate_ids" in meta:  # word transformer
            total += len(meta["prompt_ids"]) + sum(len(c) + 1 for c in meta["candidate_ids"])
        elif "prompt_ids" in meta:  # byte transformer
            total += len(meta["prompt_ids"]) + sum(
                len(c.encode()) for c in meta.get("candidates", [])
            )
        else:  # HF: prompt and generated tokens
            total += len(meta.get("prompt_ids", ())) + len(
                g.token_ids if g.token_ids is not None else ()
            )
    return total


def time_policy(policy: Any, n: int, turns: int, sync: Any) -> dict[str, float]:
    """Tokens/s and seconds per ``act`` of ``policy`` over ``n`` envs for ``turns`` turns
    (the first call is a warm-up and is not timed)."""
    pool, inputs = household_inputs(n)
    try:
        policy.act(inputs)  # warm-up (kernels, caches)
        sync()
        seconds, tokens = 0.0, 0
        for _ in range(turns):
            t0 = time.perf_counter()
            gens = policy.act(inputs)
            sync()
            seconds += time.perf_counter() - t0
            tokens += tokens_of(gens)
            inputs = _step_inputs(pool, inputs, gens)
    finally:
        pool.close()
    return {"envs": n, "tokens_per_s": tokens / seconds, "s_per_act": seconds / turns}


def hf_policy(size: dict[str, Any], device: str, tmp: Path) -> Any:
    """A Qwen2-style causal LM built from a config (about 0.5B parameters at the real size)
    with a byte-level BPE tokenizer trained on household text, as an ``HFPolicy``."""
    import tokenizers
    import torch
    import transformers

    from agentgym.agents.hf import HFPolicy
    from agentgym.algos.demos import random_texts

    texts = [t for ep in random_texts(ENV, {"max_turns": 8}, episodes=8) for t in ep]
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=min(size["hf_vocab"], 4000),
        special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
    )
    fast.chat_template = CHAT_TEMPLATE
    config = transformers.Qwen2Config(
        vocab_size=max(size["hf_vocab"], len(fast)),
        hidden_size=size["hf_hidden"],
        intermediate_size=size["hf_inter"],
        num_hidden_layers=size["hf_layers"],
        num_attention_heads=size["hf_heads"],
        num_key_value_heads=size["hf_kv"],
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    model = transformers.Qwen2ForCausalLM(config).to(dtype)
    policy = HFPolicy(model, fast, device=device, max_new_tokens=size["hf_new"], seed=0)
    policy.parameters = sum(p.numel() for p in model.parameters())
    return policy


def inference(size: dict[str, Any], device: str, tmp: Path) -> dict[str, Any]:
    """Tokens/s of the three policies at every env count."""
    import torch

    from agentgym.agents.transformer import TransformerConfig, TransformerPolicy
    from agentgym.agents.wordmodel import WordConfig, WordPolicy, build_vocabulary
    from agentgym.algos.demos import random_texts

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    vocab = build_vocabulary(random_texts(ENV, {"max_turns": 8}, episodes=16), 2)
    policies = {
        "byte (d32, 2 layers)": TransformerPolicy(
            TransformerConfig(
                d_model=32,
                n_layers=2,
                max_prompt_bytes=320,
                prompt_head_bytes=80,
                context="dialogue",
            ),
            device=device,
        ),
        "word (d128, 2 layers)": WordPolicy(
            WordConfig(vocab=vocab, d_model=128, n_layers=2), device=device
        ),
        "hf": hf_policy(size, device, tmp),
    }
    out: dict[str, Any] = {}
    for name, policy in policies.items():
        params = getattr(policy, "parameters", None) or policy.num_parameters()
        label = name if name != "hf" else f"hf Qwen2 config ({params / 1e6:.0f}M)"
        out[label] = {"parameters": params, "runs": []}
        for n in size["envs"]:
            out[label]["runs"].append(time_policy(policy, n, size["turns"], sync))
        del policy
        if device == "cuda":
            torch.cuda.empty_cache()
    return out


def rl_phase(size: dict[str, Any], device: str, out: Path) -> dict[str, Any]:
    """Explorer demos, SFT of a larger word transformer, GiGPO from it; held-out success
    (greedy) before and after; each stage stops at its time box."""
    from agentgym.agents.wordmodel import WordConfig
    from agentgym.algos.demos import record_demos
    from agentgym.algos.trainer import TrainConfig, Trainer

    kwargs = {"max_turns": 30}
    res: dict[str, Any] = {}
    t0 = time.perf_counter()
    demos = out / "demos.agtr"
    record_demos(ENV, demos, episodes=size["demos"], epsilon=0.1, seed=500_000,
                 env_kwargs=kwargs, demonstrator="observer")  # fmt: skip
    res["demos_s"] = time.perf_counter() - t0
    word = WordConfig(d_model=size["word_d"], n_layers=size["word_layers"], n_heads=8)
    sft = Trainer(TrainConfig(env_id=ENV, algo="sft", demos=str(demos), demos_relabel=True,
                              policy="word", word=word, iterations=size["sft_epochs"], lr=1e-3,
                              minibatch_size=96, history_turns=None, device=device,
                              out_dir=str(out / "sft"), overwrite=True, progress=False))  # fmt: skip
    res["sft"] = _time_boxed(sft, size["stage_s"])
    rl = Trainer(TrainConfig(env_id=ENV, algo="gigpo", init=str(out / "sft" / "checkpoint.pt"),
                             env_kwargs=kwargs, history_turns=None, device=device, lr=1e-4,
                             tasks_per_iter=size["tasks"], group_size=size["group"],
                             num_envs=size["tasks"] * size["group"], backend="sync",
                             iterations=1000, max_env_steps=size["rl_steps"], minibatch_size=256,
                             eval_every=1000, eval_tasks=size["eval_tasks"],
                             out_dir=str(out / "gigpo"), overwrite=True, progress=False))  # fmt: skip
    rl.cfg.loss.kl_coef = 0.01
    res["gigpo"] = _time_boxed(rl, size["stage_s"], evaluate=True)
    res["parameters"] = rl.policy.num_parameters()
    return res


def _time_boxed(trainer: Any, seconds: float, evaluate: bool = False) -> dict[str, Any]:
    """Iterations of ``trainer`` until it is done or ``seconds`` have passed."""
    t0 = time.perf_counter()
    before = trainer.evaluate_heldout() if evaluate else None
    while trainer.iteration < trainer.cfg.iterations and time.perf_counter() - t0 < seconds:
        if trainer.cfg.max_env_steps and trainer.env_steps >= trainer.cfg.max_env_steps:
            break
        trainer.step()
    after = trainer.evaluate_heldout() if evaluate else None
    trainer.save(trainer.out / "checkpoint.pt")
    if trainer.pool is not None:
        trainer.pool.close()
    last = trainer.metrics[-1] if trainer.metrics else {}
    return {
        "iterations": trainer.iteration,
        "env_steps": trainer.env_steps,
        "seconds": time.perf_counter() - t0,
        "demo_nll": last.get("demo_nll"),
        "heldout_before": before,
        "heldout_after": after,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", default="runs/gpu-check", help="folder for gpu_check.json")
    ap.add_argument("--dry-run", action="store_true", help="toy sizes on the CPU")
    args = ap.parse_args(argv)
    refusal = refuse_without_gpu(args.dry_run)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    import torch

    device = "cpu" if args.dry_run else "cuda"
    size = SIZES["dry" if args.dry_run else "gpu"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1 if args.dry_run else torch.get_num_threads())
    t0 = time.perf_counter()
    report: dict[str, Any] = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu"}
    report["inference"] = inference(size, device, out)
    report["rl"] = rl_phase(size, device, out)
    report["seconds"] = time.perf_counter() - t0
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    for name, got in report["inference"].items():
        runs = ", ".join(f"{r['envs']} envs {r['tokens_per_s']:,.0f}" for r in got["runs"])
        print(f"{name}: tokens/s {runs}")
    rl = report["rl"]["gigpo"]
    print(f"RL at {report['rl']['parameters'] / 1e6:.1f}M parameters: {rl['env_steps']} env steps "
          f"in {rl['seconds']:.0f} s; held-out greedy {rl['heldout_before']['test_success_greedy']:.3f}"
          f" -> {rl['heldout_after']['test_success_greedy']:.3f}")  # fmt: skip
    print(f"total {report['seconds']:.0f} s; {out / 'gpu_check.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""TRL: one real GRPOTrainer step with an agentgym environment_factory, offline on a CPU.

The model is a tiny randomly initialised Qwen3 (no download) with an in-memory tokenizer
that uses TRL's own Qwen3 chat template (so TRL can parse tool calls). It writes no useful
moves, so the env reward is 0; the point is the plumbing: TRL probes the class, resets one
env per rollout from the dataset row, exposes `move` as a tool, and scores with get_reward.
Takes about a minute here. Run: python examples/integrations/trl_grpo_tiny.py
"""

import os
import pathlib
import tempfile

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch
import trl
from transformers import Qwen3Config, Qwen3ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from agentgym.integrations.offline import char_tokenizer
from agentgym.integrations.trl import environment_class, seed_dataset

ENV = "agentgym/Sokoban-Tiny-v0"
tok = char_tokenizer()
tok.add_special_tokens(
    {
        "additional_special_tokens": [
            "<|im_start|>",
            "<think>",
            "</think>",
            "<tool_call>",
            "</tool_call>",
        ]
    }
)
tok.chat_template = (
    pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
).read_text()
config = Qwen3Config(
    vocab_size=len(tok),
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    max_position_embeddings=4096,
    eos_token_id=tok.eos_token_id,
    pad_token_id=tok.pad_token_id,
)
torch.manual_seed(0)
model = Qwen3ForCausalLM(config)

Sokoban = environment_class(ENV)
calls = {"reset": 0, "get_reward": 0}


class CountedSokoban(Sokoban):
    def reset(self, **row):
        calls["reset"] += 1
        return super().reset(**row)

    def get_reward(self):
        calls["get_reward"] += 1
        return super().get_reward()


args = GRPOConfig(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=2,
    num_generations=2,
    max_completion_length=24,
    max_steps=1,
    use_cpu=True,
    report_to=[],
    logging_steps=1,
    bf16=False,
    save_strategy="no",
)
trainer = GRPOTrainer(
    model=model,
    processing_class=tok,
    args=args,
    train_dataset=seed_dataset(ENV, range(4)),
    environment_factory=CountedSokoban,
)
trainer.train()
print("env calls:", calls)
print(
    "last log:",
    {k: v for k, v in trainer.state.log_history[-2].items() if "reward" in k or "tools" in k},
)

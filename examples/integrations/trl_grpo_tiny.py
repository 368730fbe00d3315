"""TRL: one real GRPOTrainer step on an agentgym env, with real tool calls, offline on a CPU.

The model is a tiny randomly initialised Qwen3 (no download) with an in-memory tokenizer
that uses TRL's own Qwen3 chat template, so TRL parses the model's tool calls itself. A
random model never writes a well-formed call, so each whole call ("move up", ...) is one
token and the model's logits get a fixed bias towards those tokens and the end of turn:
every rollout then plays real moves, the env scores them, and GRPO trains on the
differences. The bias has no parameters; the gradient is the transformer's.

TRL probes the class, resets one env per rollout from the dataset row, exposes `move` (and
`answer` on envs that end with an answer) as tools, and scores each rollout with
get_reward. Takes about 20 s here. Run: python examples/integrations/trl_grpo_tiny.py
"""

import json
import os
import pathlib
import sys
import tempfile

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

import torch
import trl
from transformers import Qwen3Config, Qwen3ForCausalLM
from trl import GRPOConfig, GRPOTrainer

from agentgym.integrations.trl import environment_class, seed_dataset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # offline.py is beside us
from offline import char_tokenizer  # the stand-in tokenizer (a test harness)

ENV = "agentgym/Sokoban-Tiny-v0"
# Each move exactly as TRL's Qwen3 template writes a tool call, kept as one token.
CALLS = [
    "<tool_call>\n" + json.dumps({"name": "move", "arguments": {"direction": d}}) + "\n</tool_call>"
    for d in ("up", "down", "left", "right")
]

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
tok.add_tokens(CALLS)
tok.chat_template = (
    pathlib.Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
).read_text()


class ToolBiasedQwen3(Qwen3ForCausalLM):
    """Qwen3 plus a fixed logit bias (a buffer, not a parameter) towards whole tool calls."""

    def __init__(self, config):
        super().__init__(config)
        self.register_buffer("call_bias", torch.zeros(config.vocab_size), persistent=False)

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        out.logits = out.logits + self.call_bias.to(out.logits.dtype)
        return out


config = Qwen3Config(
    vocab_size=len(tok),
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=16,
    max_position_embeddings=8192,
    eos_token_id=tok.eos_token_id,
    pad_token_id=tok.pad_token_id,
)
torch.manual_seed(0)
model = ToolBiasedQwen3(config)
for token in [*CALLS, tok.eos_token]:
    model.call_bias[tok.convert_tokens_to_ids(token)] = 12.0

Sokoban = environment_class(ENV)
env_rewards = []


class RecordedSokoban(Sokoban):
    def get_reward(self):
        reward = super().get_reward()
        env_rewards.append(reward)
        return reward


args = GRPOConfig(
    output_dir=tempfile.mkdtemp(),
    per_device_train_batch_size=4,
    num_generations=4,
    max_completion_length=16,
    max_steps=1,
    learning_rate=1e-3,
    use_cpu=True,
    report_to=[],
    logging_steps=1,
    bf16=False,
    save_strategy="no",
    seed=0,
)
trainer = GRPOTrainer(
    model=model,
    processing_class=tok,
    args=args,
    train_dataset=seed_dataset(ENV, range(4)),
    environment_factory=RecordedSokoban,
)
trainer.train()
log = next(entry for entry in trainer.state.log_history if "loss" in entry)
print("env rewards:", env_rewards)
print(
    "trainer log:",
    {k: log[k] for k in ("reward", "tools/call_frequency", "loss", "grad_norm")},
)

"""The transformers policy (tiny random model built here, no downloads) and the HTTP policy
(against a fake OpenAI-compatible server on 127.0.0.1)."""

import json

import numpy as np
import pytest
from agentgym.envs.grid.sokoban import MOVE_TOOL

from agentgym.agents.base import PolicyInput
from agentgym.agents.http import HTTPPolicy, PolicyRequestError, reply_to_text
from agentgym.parsing import parse_action

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if tools %}<|tools|>{{ tools | length }}\n{% endif %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    torch = pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("tiny-lm")
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<unk>", "<pad>", "<eos>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(["push the box onto the goal", "move up down left right"] * 20, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=256,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    return str(path)


def _inputs():
    tools = [{"type": "function", "function": {"name": "move", "parameters": {}}}]
    return [
        PolicyInput(
            messages=[
                {"role": "system", "content": "play"},
                {"role": "user", "content": "push the box"},
            ],
            info={"tools": tools},
        ),
        PolicyInput(messages=[{"role": "user", "content": "move"}]),
        PolicyInput(messages=[{"role": "user", "content": "left right up down " * 3}]),
    ]


@pytest.mark.slow
def test_hf_policy_batched_generate_gives_ids_and_true_logprobs(tiny_checkpoint):
    import torch

    from agentgym.agents.hf import HFPolicy

    policy = HFPolicy(tiny_checkpoint, max_new_tokens=8, temperature=1.0, seed=0)
    assert "<|tools|>1" in policy.render(_inputs()[0])  # env tools reach the template
    gens = policy.act(_inputs())
    assert len(gens) == 3
    for item, g in zip(_inputs(), gens):
        assert 1 <= len(g.token_ids) <= 8 and len(g.logprobs) == len(g.token_ids)
        assert np.all(g.logprobs <= 0) and np.all(np.isfinite(g.logprobs))
        # teacher-forced logprobs of the same tokens under the model match generate's
        prompt = torch.tensor(g.meta["prompt_ids"])[None]
        full = torch.cat([prompt, torch.tensor(g.token_ids)[None]], dim=1)
        with torch.no_grad():
            logits = policy.model(full).logits[0, prompt.shape[1] - 1 : -1]
        ref = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(g.token_ids)[:, None])
        np.testing.assert_allclose(ref.squeeze(-1).numpy(), g.logprobs, atol=1e-4)
        assert g.text == policy.tokenizer.decode(g.token_ids, skip_special_tokens=True)
        del item


@pytest.mark.slow
def test_hf_policy_greedy_batch_equals_one_by_one(tiny_checkpoint):
    from agentgym.agents.hf import HFPolicy

    policy = HFPolicy(tiny_checkpoint, max_new_tokens=6, temperature=0.0)
    batched = policy.act(_inputs())
    single = [policy.act([x])[0] for x in _inputs()]
    assert [list(g.token_ids) for g in batched] == [list(g.token_ids) for g in single]


def test_http_policy_batches_requests_and_renders_tool_calls(fake_openai):
    policy = HTTPPolicy(fake_openai.url, "tiny", api_key="k", logprobs=True, temperature=0.0)
    try:
        gens = policy.act(_inputs())
    finally:
        policy.close()
    assert len(fake_openai.requests) == 3
    assert fake_openai.max_in_flight > 1  # one act() call sends its batch concurrently
    path, auth, body = next(r for r in fake_openai.requests if r[2].get("tools"))
    assert path == "/v1/chat/completions" and auth == "Bearer k" and body["model"] == "tiny"
    # the request with tools got a structured call back, rendered to the canonical text form
    parsed = parse_action(gens[0].text, [MOVE_TOOL])
    assert parsed.tool_calls and parsed.tool_calls[0].arguments == {"direction": "up"}
    assert gens[1].text == "echo move"
    np.testing.assert_allclose(gens[1].logprobs, [-0.5, -1.5])


def test_http_policy_server_error_is_a_typed_error(fake_openai):
    policy = HTTPPolicy(fake_openai.url, "tiny", retries=2, backoff_s=0.0)
    try:
        with pytest.raises(PolicyRequestError, match="500"):
            policy.act([PolicyInput(messages=[{"role": "user", "content": "fail"}])])
    finally:
        policy.close()
    assert len(fake_openai.requests) == 3  # a 5xx is retried, then reported


def test_reply_to_text_keeps_malformed_arguments_visible():
    text = reply_to_text({"tool_calls": [{"function": {"name": "move", "arguments": "{bad"}}]})
    assert "{bad" in text and parse_action(text).errors


def test_cli_eval_runs_a_local_hf_model_on_the_test_split(tiny_checkpoint, tmp_path, capsys):
    from agentgym.cli import main

    out = tmp_path / "hf.jsonl"
    args = ["eval", "agentgym/Sokoban-Tiny-v0", "--policy", "hf", "--model", tiny_checkpoint]
    args += ["--episodes", "2", "--mode", "greedy", "--env-kwargs", '{"max_turns": 2}']
    args += ["--max-new-tokens", "8"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert "policy=" + tiny_checkpoint in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["turns"] == 2 and r["split"] == "test" for r in rows)


@pytest.mark.slow
def test_hf_policy_sft_on_demos_then_gigpo_from_it(tiny_checkpoint, tmp_path):
    from agentgym.agents.load import read_checkpoint
    from agentgym.cli import main

    env = "agentgym/Sokoban-Tiny-v0"
    demos, sft, rl = tmp_path / "d.agtr", tmp_path / "sft", tmp_path / "rl"
    kw = ["--env-kwargs", '{"max_turns": 2}', "--backend", "sync", "--no-progress"]
    assert main(["demos", env, "--episodes", "3", "--out", str(demos), "--quiet"]) == 0
    sft_args = ["train", "--env", env, "--algo", "sft", "--demos", str(demos), "--policy", "hf"]
    sft_args += ["--model", tiny_checkpoint, "--iterations", "3", "--lr", "1e-2", "--out", str(sft)]
    assert main([*sft_args, *kw]) == 0
    import csv

    with open(sft / "metrics.csv") as f:
        nll = [float(r["demo_nll"]) for r in csv.DictReader(f)]
    assert nll[-1] < nll[0], nll  # the clone fits the demonstrations better each epoch
    state = read_checkpoint(sft / "checkpoint.pt")
    assert state["policy"]["hf_model"] == tiny_checkpoint

    rl_args = ["train", "--env", env, "--algo", "gigpo", "--init", str(sft / "checkpoint.pt")]
    rl_args += ["--iterations", "1", "--tasks", "1", "--group-size", "2", "--num-envs", "2"]
    rl_args += ["--max-new-tokens", "8", "--out", str(rl)]
    assert main([*rl_args, *kw]) == 0
    rl_state = read_checkpoint(rl / "checkpoint.pt")
    assert rl_state["train_config"]["policy"] == "hf"
    assert rl_state["metrics"][0]["episodes"] == 2
    res = tmp_path / "res.jsonl"
    ev = ["eval", env, "--policy", "checkpoint", "--checkpoint", str(rl), "--episodes", "1"]
    ev += ["--mode", "greedy", "--max-new-tokens", "8", "--env-kwargs", '{"max_turns": 2}']
    assert main([*ev, "--out", str(res), "--no-progress"]) == 0
    assert len(res.read_text().splitlines()) == 1

"""verl 0.9: the agent loop driven by verl's own dataset, AgentLoopWorker and PPO loss.

No vLLM here: a stub server object stands in for verl's ``LLMServerClient`` (same
``generate(request_id, *, prompt_ids, sampling_params)`` -> ``TokenOutput``). The model's
tokenizer is built offline and, like the project's TRL example, makes ``<tool_call>`` a
special token. Before the fix every turn reached the env without its tool-call tags.
"""

from __future__ import annotations

import asyncio
import os

import numpy as np
import pytest

from agentgym.integrations import verl as agverl
from agentgym.parsing import render_tool_call

ENV_ID = "agentgym/Sokoban-Tiny-v0"
SEED = 0  # box one step right of the goal: "up" then "left" solves it
SOLVE = [render_tool_call("move", {"direction": d}) for d in ("up", "left")]
STALL = [render_tool_call("move", {"direction": "down"})] * 3  # valid call, into a wall


def _model_dir(tmp_path) -> str:
    """A tokenizer (``<tool_call>`` special) and a tiny Qwen2 config on disk, no download."""
    from transformers import Qwen2Config

    from examples.integrations.offline import char_tokenizer

    tok = char_tokenizer()
    tok.add_special_tokens(
        {"additional_special_tokens": ["<|im_start|>", "<tool_call>", "</tool_call>"]}
    )
    path = str(tmp_path / "model")
    tok.save_pretrained(path)
    cfg = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
    )
    cfg.architectures = ["Qwen2ForCausalLM"]
    cfg.save_pretrained(path)
    return path


def _trainer_config(model_path: str, train_file: str):
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return compose(
            "ppo_trainer",
            overrides=[
                f"actor_rollout_ref.model.path={model_path}",
                "actor_rollout_ref.rollout.name=vllm",
                f"data.train_files={train_file}",
                "data.max_prompt_length=2048",
                "data.max_response_length=1024",
                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            ],
        )


class StubServer:
    """verl's LLMServerClient surface, answered from a script chosen per request."""

    def __init__(self, tokenizer, scripts):
        self.tokenizer = tokenizer
        self.scripts = list(scripts)
        self.by_request: dict[str, list[str]] = {}
        self.turn: dict[str, int] = {}
        self.texts: list[str] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        from verl.workers.rollout.replica import TokenOutput

        if request_id not in self.by_request:  # first turn of an episode: next script
            self.by_request[request_id] = self.scripts[len(self.by_request)]
        script = self.by_request[request_id]
        i = self.turn.get(request_id, 0)
        self.turn[request_id] = i + 1
        text = script[min(i, len(script) - 1)]
        self.texts.append(text)
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        ids.append(self.tokenizer.eos_token_id)  # engines return the sampled EOS
        return TokenOutput(token_ids=ids, log_probs=[-0.7] * len(ids), stop_reason="completed")


@pytest.mark.slow
def test_agent_loop_worker_dataset_and_loss_with_special_tool_tokens(tmp_path):
    pytest.importorskip("verl.experimental.agent_loop.agent_loop")
    pytest.importorskip("transformers")
    import pandas as pd
    import torch
    from torch.utils.data import DataLoader
    from transformers import AutoConfig, AutoModelForCausalLM
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.trainer.ppo import core_algos
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
    from verl.utils.torch_functional import logprobs_from_logits

    agverl.AgentGymAgentLoop  # noqa: B018  (registers "agentgym_agent" with verl)
    model_path = _model_dir(tmp_path)
    rows = agverl.agent_loop_rows(ENV_ID, [SEED, SEED], max_turns=3)
    train_file = str(tmp_path / "train.parquet")
    pd.DataFrame(rows).to_parquet(train_file)
    config = _trainer_config(model_path, train_file)

    server = StubServer(None, [SOLVE, STALL])
    worker = AgentLoopWorker(config, llm_client=server)
    server.tokenizer = worker.tokenizer
    assert worker.tokenizer.convert_tokens_to_ids("<tool_call>") in worker.tokenizer.all_special_ids

    dataset = RLHFDataset(train_file, worker.tokenizer, config.data)
    batch = DataProto.from_single_dict(next(iter(DataLoader(dataset, 2, collate_fn=collate_fn))))
    out = asyncio.run(worker.generate_sequences(batch))

    # every scripted turn reached the env as a valid call, with its real rewards
    scores = out.batch["rm_scores"].sum(-1)
    turn_scores = out.non_tensor_batch["turn_scores"]
    assert [len(t) for t in turn_scores] == [2, 3]
    assert scores[0].item() == pytest.approx(sum(turn_scores[0])) and scores[0] > 1.0
    assert scores[1].item() == pytest.approx(sum(turn_scores[1])) and scores[1] < 0
    assert list(out.non_tensor_batch["success"]) == [True, False]

    # verl's GRPO advantage and PPO loss on a tiny random model: a nonzero gradient
    mask = out.batch["response_mask"]
    adv, _ = core_algos.compute_grpo_outcome_advantage(
        out.batch["rm_scores"], mask, index=np.array(["task", "task"], dtype=object)
    )
    assert adv.abs().sum() > 0
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_path))
    input_ids = out.batch["input_ids"]
    logits = model(
        input_ids=input_ids,
        attention_mask=out.batch["attention_mask"],
        position_ids=out.batch["position_ids"],
    ).logits
    width = out.batch["responses"].shape[1]
    logits = logits[:, -width - 1 : -1]
    log_prob = logprobs_from_logits(logits, out.batch["responses"])
    actor_cfg = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    loss, _ = core_algos.compute_policy_loss_vanilla(
        old_log_prob=out.batch["rollout_log_probs"],
        log_prob=log_prob,
        advantages=adv,
        response_mask=mask,
        config=actor_cfg,
    )
    loss.backward()
    grad = sum(p.grad.abs().sum() for p in model.parameters() if p.grad is not None)
    assert torch.isfinite(loss) and grad > 0


def test_rows_without_env_id_are_a_typed_error():
    from agentgym.error import InvalidConfigError

    with pytest.raises(InvalidConfigError):
        agverl.episode_spec({"extra_info": {"seed": 1}})
    assert agverl.episode_spec({"extra_info": {"env_id": ENV_ID, "seed": "4"}})["seed"] == 4


# ---- the BaseInteraction form (verl <= 0.5) -------------------------------------------------


async def _sglang_rollout_05(interaction, row, request_id, actions, max_assistant_turns):
    """The interaction calls of verl 0.5's SGLang multi-turn rollout for one request: start,
    then generate_response after every assistant turn until done or the turn limit; it
    never calls calculate_score or finalize_interaction."""
    kwargs = row["extra_info"]["interaction_kwargs"]
    await interaction.start_interaction(request_id, **kwargs)
    messages = list(row["prompt"])
    rewards = []
    for turn in range(max_assistant_turns):
        messages.append({"role": "assistant", "content": actions[turn % len(actions)]})
        done, reply, reward, _ = await interaction.generate_response(request_id, messages, **kwargs)
        rewards.append(reward)
        messages.append({"role": "user", "content": reply})
        if done:
            break
    return rewards


@pytest.fixture
def counted_envs(monkeypatch):
    """(built, closed): every env the interaction's sessions build, and those closed."""
    from agentgym.integrations import session as session_mod

    built, closed = [], []
    real_make = session_mod.make_env

    def counting_make(env_id, **kwargs):
        env = real_make(env_id, **kwargs)
        built.append(env)
        real_close = env.close

        def close():
            closed.append(env)
            real_close()

        env.close = close
        return env

    monkeypatch.setattr(session_mod, "make_env", counting_make)
    return built, closed


def test_interaction_closes_every_env_at_done_without_finalize(counted_envs):
    built, closed = counted_envs
    inter = agverl.AgentGymInteraction({"env_id": ENV_ID})
    row = agverl.interaction_rows(ENV_ID, [SEED])[0]
    built.clear()
    closed.clear()

    async def main():
        # 12 requests that solve the task, 4 cut short by the turn limit before done
        solved = [
            _sglang_rollout_05(inter, row, f"req{i}", SOLVE, max_assistant_turns=5)
            for i in range(12)
        ]
        cut = [
            _sglang_rollout_05(inter, row, f"cut{i}", STALL, max_assistant_turns=2)
            for i in range(4)
        ]
        results = await asyncio.gather(*solved, *cut)
        return results, await inter.calculate_score("req0")

    results, score = asyncio.run(main())
    assert all(len(r) == 2 for r in results[:12])  # each solved in two turns, then done
    assert score == pytest.approx(sum(results[0]))  # the score outlives the env
    assert len(built) == 16
    assert len(closed) == 12 and inter.live_sessions == 4  # done episodes freed their env
    inter.close()  # episodes cut short are freed by close()
    assert len(closed) == len(built) == 16 and inter.live_sessions == 0


def test_episodes_cut_by_the_turn_limit_are_closed_once_idle(counted_envs):
    """verl 0.5 never finalizes, and an episode its turn limit cut gets no further call:
    every call first closes the envs idle for over idle_timeout_s (a counted clock here)."""
    built, closed = counted_envs
    now = [0.0]
    inter = agverl.AgentGymInteraction(
        {"env_id": ENV_ID, "idle_timeout_s": 60}, clock=lambda: now[0]
    )
    row = agverl.interaction_rows(ENV_ID, [SEED])[0]
    built.clear()
    closed.clear()

    async def main():
        cut = [
            _sglang_rollout_05(inter, row, f"cut{i}", STALL, max_assistant_turns=2)
            for i in range(4)
        ]
        results = await asyncio.gather(*cut)
        assert inter.live_sessions == 4 and not closed
        now[0] = 60.0  # exactly the timeout: not yet idle for *over* it
        await _sglang_rollout_05(inter, row, "next", SOLVE, max_assistant_turns=5)
        assert inter.live_sessions == 4 and len(closed) == 1  # only "next", ended at done
        now[0] = 60.5  # past it: the next call frees the four cut episodes
        await inter.start_interaction("late", **row["extra_info"]["interaction_kwargs"])
        assert inter.live_sessions == 1 and len(closed) == 5
        # a reaped episode's score stays readable, as a finished one's
        return results, await inter.calculate_score("cut0")

    results, score = asyncio.run(main())
    assert score == pytest.approx(sum(results[0]))
    inter.close()
    assert len(closed) == len(built) == 6


def test_turn_rewards_reach_verls_naive_reward_manager_through_compute_score():
    """verl 0.5's SGLang rollout stores the rewards of generate_response in
    reward_scores["user_turn_rewards"]; verl's NaiveRewardManager used to raise
    KeyError('reward_model') on interaction_rows. Rows now carry data_source and
    reward_model, and compute_score (loaded by verl's own loader) sums the turn rewards."""
    pytest.importorskip("verl.workers.reward_manager.naive")
    import torch
    from omegaconf import OmegaConf
    from verl.protocol import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.naive import NaiveRewardManager

    from examples.integrations.offline import char_tokenizer

    inter = agverl.AgentGymInteraction({"env_id": ENV_ID})
    rows = agverl.interaction_rows(ENV_ID, [SEED, SEED])

    async def main():
        return [
            await _sglang_rollout_05(inter, rows[0], "a", SOLVE, max_assistant_turns=5),
            await _sglang_rollout_05(inter, rows[1], "b", STALL, max_assistant_turns=2),
        ]

    turn_rewards = asyncio.run(main())
    inter.close()
    config = OmegaConf.create(
        {"reward": {"custom_reward_function": {"path": agverl.__file__, "name": "compute_score"}}}
    )
    score_fn = get_custom_reward_fn(config)
    n, prompt_len, response_len = 2, 4, 6
    lengths = [5, 3]  # valid response tokens per row
    mask = torch.zeros(n, prompt_len + response_len, dtype=torch.long)
    mask[:, :prompt_len] = 1
    for i, length in enumerate(lengths):
        mask[i, prompt_len : prompt_len + length] = 1
    data = DataProto.from_dict(
        tensors={
            "prompts": torch.full((n, prompt_len), 5),
            "responses": torch.full((n, response_len), 6),
            "attention_mask": mask,
        },
        non_tensors={
            "data_source": np.array([r["data_source"] for r in rows], dtype=object),
            "reward_model": np.array([r["reward_model"] for r in rows], dtype=object),
            "extra_info": np.array([dict(r["extra_info"]) for r in rows], dtype=object),
            "reward_scores": np.array(
                [{"user_turn_rewards": t} for t in turn_rewards], dtype=object
            ),
        },
    )
    manager = NaiveRewardManager(char_tokenizer(), num_examine=0, compute_score=score_fn)
    reward = manager(data)
    for i, (length, turns) in enumerate(zip(lengths, turn_rewards, strict=True)):
        assert reward[i, length - 1].item() == pytest.approx(sum(turns), abs=1e-6)
        assert reward[i].abs().sum().item() == pytest.approx(abs(sum(turns)), abs=1e-6)
    assert sum(turn_rewards[0]) > 1.0 > sum(turn_rewards[1])  # solved vs stalled
    with pytest.raises(agverl.InvalidConfigError, match="rollout_reward_scores"):
        agverl.compute_score(ENV_ID, "", "t", {})


def test_rows_choose_the_answer_tool():
    row = agverl.agent_loop_rows("agentgym/CodeMath-L1-v0", [0], answer_tool=True)[0]
    assert agverl.episode_spec(row)["answer_tool"] is True
    assert agverl.episode_spec({"env_id": ENV_ID})["answer_tool"] is False
    assert agverl.episode_spec({"env_id": ENV_ID, "answer_tool": "auto"})["answer_tool"] is None

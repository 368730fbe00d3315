"""verl: write the dataset and agent-loop config that train a model on an agentgym env.

    python examples/integrations/verl_agent_loop.py --env agentgym/Sokoban-Small-v0 \
        --out data/verl_sokoban

writes ``train.parquet``, ``val.parquet`` (one row per seed, read by verl's own
``RLHFDataset``) and ``agent_loop.yaml`` (registers ``agentgym_agent``), then prints the
``verl.trainer.main_ppo`` command that trains a Hugging Face model on them (GPU + vLLM).
Rewards come from the env (``reward_score``), so no reward function is configured.

``--smoke`` also plays one episode offline (an in-memory tokenizer and a scripted model in
place of vLLM) through the same code the agent loop runs, to check the env and rows.
See docs/integrations/verl.md.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys

from agentgym.integrations import verl as agverl

AGENT_LOOP_YAML = """\
- name: agentgym_agent
  _target_: agentgym.integrations.verl.AgentGymAgentLoop
"""

COMMAND = """\
python -m verl.trainer.main_ppo \\
  algorithm.adv_estimator=grpo \\
  data.train_files={out}/train.parquet data.val_files={out}/val.parquet \\
  data.train_batch_size=32 data.max_prompt_length=2048 data.max_response_length=4096 \\
  actor_rollout_ref.model.path={model} \\
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=8 \\
  actor_rollout_ref.rollout.agent.agent_loop_config_path={out}/agent_loop.yaml \\
  actor_rollout_ref.rollout.gpu_memory_utilization=0.5 \\
  actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
  actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
  trainer.n_gpus_per_node=1 trainer.nnodes=1 trainer.total_epochs=1 \\
  trainer.logger='["console"]' trainer.project_name=agentgym trainer.experiment_name=verl
"""


def write(env_id: str, out: pathlib.Path, train: int, val: int, max_turns: int) -> None:
    import pandas as pd

    out.mkdir(parents=True, exist_ok=True)
    rows = agverl.agent_loop_rows(env_id, range(train), max_turns=max_turns)
    pd.DataFrame(rows).to_parquet(out / "train.parquet")
    # validation seeds far from the training ones (tasks also come from the env's split)
    rows = agverl.agent_loop_rows(env_id, range(10**6, 10**6 + val), max_turns=max_turns)
    pd.DataFrame(rows).to_parquet(out / "val.parquet")
    (out / "agent_loop.yaml").write_text(AGENT_LOOP_YAML)


def smoke(env_id: str, max_turns: int) -> None:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # offline.py is beside us
    from offline import ScriptedLLM, char_tokenizer  # stand-ins (a test harness)

    from agentgym.parsing import render_tool_call

    tok = char_tokenizer()
    moves = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]
    row = agverl.agent_loop_rows(env_id, [0], max_turns=max_turns)[0]
    ep = asyncio.run(agverl.play_verl_episode(row, ScriptedLLM(tok, moves), tok))
    masked = len(ep.response_mask) - sum(ep.response_mask)
    print(
        f"smoke: prompt {len(ep.prompt_ids)} tokens, response {len(ep.response_ids)} "
        f"({masked} env tokens masked), reward {ep.reward_score:+.2f}, turns {ep.num_turns}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--env", default="agentgym/Sokoban-Small-v0")
    p.add_argument("--out", default="data/verl_agentgym")
    p.add_argument("--train", type=int, default=1024, help="training rows (seeds 0..N-1)")
    p.add_argument("--val", type=int, default=64)
    p.add_argument("--max-turns", type=int, default=15)
    p.add_argument("--model", default="Qwen/Qwen2.5-1.5B-Instruct")
    p.add_argument("--smoke", action="store_true", help="also play one offline episode")
    args = p.parse_args()
    out = pathlib.Path(args.out)
    write(args.env, out, args.train, args.val, args.max_turns)
    print(f"wrote {out}/train.parquet, val.parquet, agent_loop.yaml\n\nTrain with:\n")
    print(COMMAND.format(out=out, model=args.model))
    if args.smoke:
        smoke(args.env, args.max_turns)


if __name__ == "__main__":
    main()

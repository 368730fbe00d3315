"""verl: the `agentgym_agent` agent loop, run here with a scripted stand-in for verl's
inference server and an in-memory tokenizer (a real run gets both from verl).

In a verl run: point `actor_rollout_ref.rollout.agent.agent_loop_config_path` at a YAML
with `- name: agentgym_agent` / `_target_: agentgym.integrations.verl.AgentGymAgentLoop`,
and build the dataset with `agent_loop_rows(env_id, seeds)` (see docs/integrations.md).
Run: python examples/integrations/verl_agent_loop.py
"""

import asyncio
import types

from agentgym.integrations import verl as agverl
from agentgym.integrations.offline import ScriptedLLM, char_tokenizer
from agentgym.parsing import render_tool_call

tok = char_tokenizer()
llm = ScriptedLLM(
    tok, [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]
)


class ServerManager:  # the signature of verl's LLMServerClient.generate
    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        ids, logprobs = await llm(prompt_ids)
        return types.SimpleNamespace(token_ids=ids, log_probs=logprobs)


rows = agverl.agent_loop_rows("agentgym/Sokoban-Tiny-v0", seeds=[0, 1], max_turns=8)
try:
    Loop = agverl.AgentGymAgentLoop  # needs verl installed
    loop = object.__new__(Loop)
    loop.server_manager, loop.tokenizer = ServerManager(), tok
    loop.rollout_config = types.SimpleNamespace(response_length=4096)
    run = lambda row: loop.run({"temperature": 1.0}, **row)  # noqa: E731
except ImportError:
    print("verl is not installed: running the same episode logic without it")

    async def run(row):
        return await agverl.play_verl_episode(row, llm, tok, response_length=4096)


for row in rows:
    out = asyncio.run(run(row))
    masked = len(out.response_mask) - sum(out.response_mask)
    print(
        f"{row['extra_info']}: prompt {len(out.prompt_ids)} tokens, response {len(out.response_ids)} "
        f"({masked} env tokens masked), reward {out.reward_score:+.2f}, turns {out.num_turns}"
    )

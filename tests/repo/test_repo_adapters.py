"""RepoFix through every adapter: the tool calls reach the jail and the outcome comes back.

Each test plays one task: a probe command (``import agentgym`` fails in the jail, where the
host package is hidden, so its error proves the command ran there), then the gold fix as the
adapter's own tool calls, then ``submit``; the graded outcome must come back through the
adapter. TRL's environment class is called as GRPOTrainer calls it, verl's agent-loop body
(``play_verl_episode``) with a scripted token server, the OpenEnv server over real HTTP, and
the MCP server with the official SDK client. ``test_verl_agent_loop_worker`` (slow) runs
verl's own ``AgentLoopWorker``.
"""

from __future__ import annotations

import asyncio
import json

import gymnasium as gym
import pytest
from agentgym.envs.repo.repofix import oracle_calls

from agentgym.parsing import ToolCall, render_tool_call, render_tool_calls

pytestmark = pytest.mark.sandbox

ENV_ID = "agentgym/RepoFix-v0"
SEED = 4
PROBE = "pwd; python -c 'import agentgym'"
JAILED = "ModuleNotFoundError: No module named 'agentgym'"


@pytest.fixture(scope="module")
def fix() -> tuple[str, list[ToolCall]]:
    """The task SEED draws and the tool calls of its gold fix (from the starting files)."""
    env = gym.make(ENV_ID)
    try:
        _, info = env.reset(seed=SEED)
        task = env.unwrapped.task(info["task_id"])
    finally:
        env.close()
    start = {p: t.encode() for p, t in task.starting_files.items()}
    calls = oracle_calls(start, task.reference_files, task)
    assert 1 <= len(calls) <= 6
    return info["task_id"], calls


def test_trl_environment_class(fix):
    pytest.importorskip("trl")
    from agentgym.integrations.trl import environment_class, seed_dataset

    _, calls = fix
    env = environment_class(ENV_ID)()
    try:
        opening = env.reset(**seed_dataset(ENV_ID, [SEED])[0])
        assert "<issue>" in opening
        probe = env.bash(command=PROBE)
        assert probe.startswith("[bash]\n~\n") and JAILED in probe
        for call in calls:
            assert "Edited" in getattr(env, call.name)(**call.arguments)
        assert "Submitted." in env.submit()
        assert env.get_reward() == pytest.approx(1.1)
    finally:
        env._session.close()


def test_verl_agent_loop_body():
    from agentgym.integrations import verl as agverl
    from examples.integrations.offline import char_tokenizer

    tok = char_tokenizer()
    row = agverl.agent_loop_rows(ENV_ID, [SEED], max_turns=4)[0]
    env = gym.make(ENV_ID)
    try:
        _, info = env.reset(seed=SEED)
        task = env.unwrapped.task(info["task_id"])
    finally:
        env.close()
    calls = oracle_calls(
        {p: t.encode() for p, t in task.starting_files.items()}, task.reference_files, task
    )
    turns = [
        render_tool_call("bash", {"command": PROBE}),
        render_tool_calls([*calls, ToolCall("submit", {})]),
    ]

    async def generate(ids: list[int]) -> tuple[list[int], None]:
        text = turns.pop(0)
        return [*tok.encode(text, add_special_tokens=False), tok.eos_token_id], None

    episode = asyncio.run(agverl.play_verl_episode(row, generate, tok))
    assert episode.success and turns == []  # both scripted turns were played
    assert episode.reward_score == pytest.approx(1.1)
    feedback = tok.decode(
        [t for t, m in zip(episode.response_ids, episode.response_mask) if m == 0]
    )
    assert JAILED in feedback  # the probe ran in the jail; the outcome came back above


def test_openenv_server_over_http(fix):
    import httpx

    from agentgym.server import ServerThread, create_app

    task_id, calls = fix
    with ServerThread(create_app(ENV_ID)) as srv, httpx.Client(base_url=srv.url, timeout=300) as c:
        opened = c.post("/reset", json={"seed": SEED}).json()
        assert opened["observation"]["info"]["task_id"] == task_id
        probe = c.post(
            "/step", json={"action": {"text": render_tool_call("bash", {"command": PROBE})}}
        )
        assert JAILED in probe.json()["observation"]["text"]
        final = c.post(
            "/step", json={"action": {"text": render_tool_calls([*calls, ToolCall("submit", {})])}}
        ).json()
        assert final["done"] is True and final["reward"] == pytest.approx(1.1)
        assert final["observation"]["info"]["success"] is True


def test_mcp_server_with_the_sdk_client(fix):
    pytest.importorskip("mcp")
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from agentgym.integrations.mcp import META_KEY, build_server, http_app
    from agentgym.server import ServerThread

    task_id, calls = fix

    async def play(url: str) -> dict:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            opened = await session.call_tool("reset", {"seed": SEED})
            assert opened.meta[META_KEY]["task_id"] == task_id
            probe = await session.call_tool("bash", {"command": PROBE})
            assert JAILED in "\n".join(c.text for c in probe.content if c.type == "text")
            for call in calls:
                assert not (await session.call_tool(call.name, call.arguments)).is_error
            done = await session.call_tool("submit", {})
            return done.meta[META_KEY]

    with ServerThread(http_app(build_server(ENV_ID))) as srv:
        meta = asyncio.run(play(f"{srv.url}/mcp"))
    assert meta["terminated"] is True and meta["success"] is True
    assert meta["reward_components"]["outcome"] == 1.0
    assert json.dumps(meta["info"]["resolved"]) == "true"


@pytest.mark.slow
def test_verl_agent_loop_worker(tmp_path, fix):
    """verl's own AgentLoopWorker, dataset and reward fields, with a stub token server."""
    pytest.importorskip("verl.experimental.agent_loop.agent_loop")
    import pandas as pd
    from torch.utils.data import DataLoader
    from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
    from verl.protocol import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    from agentgym.integrations import verl as agverl
    from tests.integrations.test_integration_verl import StubServer, _model_dir, _trainer_config

    _, calls = fix
    agverl.AgentGymAgentLoop  # noqa: B018  (registers "agentgym_agent" with verl)
    model_path = _model_dir(tmp_path)
    train_file = str(tmp_path / "train.parquet")
    pd.DataFrame(agverl.agent_loop_rows(ENV_ID, [SEED], max_turns=4)).to_parquet(train_file)
    config = _trainer_config(model_path, train_file)
    script = [
        render_tool_call("bash", {"command": PROBE}),
        render_tool_calls([*calls, ToolCall("submit", {})]),
    ]
    server = StubServer(None, [script])
    worker = AgentLoopWorker(config, llm_client=server)
    server.tokenizer = worker.tokenizer
    dataset = RLHFDataset(train_file, worker.tokenizer, config.data)
    batch = DataProto.from_single_dict(next(iter(DataLoader(dataset, 1, collate_fn=collate_fn))))
    out = asyncio.run(worker.generate_sequences(batch))
    assert list(out.non_tensor_batch["success"]) == [True]
    assert out.batch["rm_scores"].sum().item() == pytest.approx(1.1)

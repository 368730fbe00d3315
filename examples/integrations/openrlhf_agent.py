"""OpenRLHF: pass this file as `--agent_func_path` (it defines AgentInstance and AgentExecutor).

Running it directly plays one episode through the AgentInstance the way OpenRLHF's
MultiTurnAgentExecutor does (with a scripted model instead of vLLM).
Run: python examples/integrations/openrlhf_agent.py
"""

import asyncio
import os

from agentgym.integrations.openrlhf import make_agent_classes

ENV = os.environ.get("AGENTGYM_ENV", "agentgym/Sokoban-Tiny-v0")
AgentInstance, AgentExecutor = make_agent_classes(ENV)

if __name__ == "__main__":
    from agentgym.parsing import render_tool_call

    async def main():
        agent = AgentInstance()
        state = await agent.reset({"observation": "", "label": '{"seed": 1}'})
        text = state["observation"]
        for d in ["up", "left", "down", "right"] * 3:
            action = render_tool_call("move", {"direction": d})
            out = await agent.step({"observation_text": text, "action_text": action, "label": "1"})
            text += action + out["environment_feedback"]
            print(f"{d:5s} reward {out['rewards'].item():+.2f} done {out['done']}")
            if out["done"]:
                break
        print(text[-400:])

    asyncio.run(main())

"""The shared core: any agentgym env as a chat session (text or OpenAI tool calls).

Run: python examples/integrations/session_chat.py [ENV_ID]
"""

import sys

from agentgym.integrations import TextSession
from agentgym.parsing import render_tool_call

env_id = sys.argv[1] if len(sys.argv) > 1 else "agentgym/Sokoban-Tiny-v0"
session = TextSession(env_id)
start = session.reset(seed=0)
print("tools:", [t["function"]["name"] for t in start.tools])
print(start.messages[-1]["content"][:400])

# a turn in text form (Hermes tool-call tags), as a local model writes it
turn = session.step(render_tool_call("move", {"direction": "up"}))
print(
    "\ntext turn ->",
    turn.messages[0]["role"],
    "| reward",
    turn.reward,
    "| valid",
    turn.info["action_valid"],
)

# the same kind of turn as a structured OpenAI assistant message, as an API returns it
call = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "move", "arguments": '{"direction": "left"}'},
}
turn = session.step({"role": "assistant", "content": None, "tool_calls": [call]})
print(
    "structured turn ->",
    turn.messages[0]["role"],
    turn.messages[0]["tool_call_id"],
    "| reward",
    turn.reward,
)
print(turn.messages[0]["content"])
session.close()

"""`agentgym serve`: an env behind OpenEnv's wire protocol, driven by OpenEnv's own client.

Equivalent to running `agentgym serve agentgym/Sokoban-Tiny-v0 --port 8000` in a shell.
Run: python examples/integrations/serve_openenv.py
"""

import httpx

from agentgym.parsing import render_tool_call
from agentgym.server import ServerThread, create_app

UP = render_tool_call("move", {"direction": "up"})

with ServerThread(create_app("agentgym/Sokoban-Tiny-v0")) as server:
    print("serving on", server.url)
    print("health:", httpx.get(server.url + "/health").json())
    try:
        from openenv.core.generic_client import GenericEnvClient
    except ImportError:
        GenericEnvClient = None
    if GenericEnvClient is not None:  # OpenEnv's client, over the WebSocket /ws
        with GenericEnvClient(base_url=server.url).sync() as env:
            first = env.reset(seed=3)
            print(first.observation["text"])
            step = env.step({"text": UP})
            print(
                "reward",
                step.reward,
                "done",
                step.done,
                "|",
                step.observation["text"].splitlines()[0],
            )
    else:  # plain HTTP
        with httpx.Client(base_url=server.url) as c:
            print(c.post("/reset", json={"seed": 3}).json()["observation"]["text"])
            out = c.post("/step", json={"action": {"text": UP}}).json()
            print("reward", out["reward"], "done", out["done"])

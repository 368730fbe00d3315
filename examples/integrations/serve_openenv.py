"""`agentgym serve`: an env behind OpenEnv's wire protocol, driven by OpenEnv's own client.

Equivalent to running `agentgym serve agentgym/Sokoban-Tiny-v0 --port 8000` in a shell.
Run: python examples/integrations/serve_openenv.py
See docs/integrations/openenv.md.
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
            print("reward", step.reward, "done", step.done)
            try:  # a malformed request is refused, naming the field; the episode goes on
                env.step({"content": "", "tool_calls": 5})
            except RuntimeError as exc:
                print("refused:", exc)
            print("state:", env.state())

    # plain HTTP: name your session with episode_id (without it, every client shares one)
    with httpx.Client(base_url=server.url) as c:
        first = c.post("/reset", json={"seed": 3, "episode_id": "worker-1"}).json()
        out = c.post("/step", json={"episode_id": "worker-1", "action": {"text": UP}})
        print("reward", out.json()["reward"], "timing", out.json()["timing"])
        shared = c.post("/reset", json={"seed": 3})
        print(
            "no episode_id:", shared.headers["X-Agentgym-Shared-Session"], shared.headers["Warning"]
        )

"""OpenRLHF: pass this file as ``--train.agent_func_path`` (it defines AgentExecutor).

The env id comes from ``AGENTGYM_ENV`` (default Sokoban-Tiny). Write the prompt dataset
(one JSON line per seed, the ``label`` names the episode) with::

    python examples/integrations/openrlhf_agent.py --write-data data/openrlhf.jsonl --n 1024

Running it with ``--smoke`` plays one episode through OpenRLHF's own
``MultiTurnAgentExecutor`` with a scripted engine in place of vLLM and prints the trained
sequence. See docs/integrations/openrlhf.md for the training command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import sys
import types

from agentgym.integrations.openrlhf import make_agent_classes

ENV = os.environ.get("AGENTGYM_ENV", "agentgym/Sokoban-Tiny-v0")
AgentInstance, AgentExecutor = make_agent_classes(ENV)


def write_data(path: str, n: int) -> None:
    """One row per seed; the prompt is replaced by the env's opening chat at reset."""
    with open(path, "w") as f:
        for seed in range(n):
            f.write(
                json.dumps({"prompt": f"{ENV} seed {seed}", "label": json.dumps({"seed": seed})})
            )
            f.write("\n")


def smoke() -> None:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # offline.py is beside us
    from offline import char_tokenizer  # the stand-in tokenizer (a test harness)

    from agentgym.parsing import render_tool_call

    tok = char_tokenizer()
    moves = [render_tool_call("move", {"direction": d}) for d in ("up", "left", "down", "right")]

    class ScriptedEngine:  # OpenRLHF's vLLM actor: generate(token ids) -> RequestOutput
        calls = 0

        async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
            text = moves[self.calls % len(moves)]
            self.calls += 1
            ids = [*tok.encode(text, add_special_tokens=False), tok.eos_token_id]
            out = types.SimpleNamespace(
                token_ids=ids, text=text, finish_reason="stop", logprobs=None
            )
            return types.SimpleNamespace(outputs=[out])

    params = types.SimpleNamespace(max_tokens=None, logprobs=None)
    result = asyncio.run(
        AgentExecutor().execute(
            prompt="",
            label='{"seed": 1}',
            sampling_params=params,
            max_length=4096,
            hf_tokenizer=tok,
            llm_engine=ScriptedEngine(),
        )
    )
    print(tok.decode(result["observation_tokens"], skip_special_tokens=False)[-600:])
    print(f"reward {result['reward']:+.2f}, turns {len(result['action_ranges'])}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description="agentgym for OpenRLHF's agent mode")
    p.add_argument("--write-data", metavar="PATH")
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--smoke", action="store_true")
    args = p.parse_args()
    if args.write_data:
        write_data(args.write_data, args.n)
        print(f"wrote {args.n} rows to {args.write_data}")
    if args.smoke or not args.write_data:
        smoke()

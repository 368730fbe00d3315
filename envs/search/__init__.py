"""Search family: multi-hop question answering over a generated encyclopedia (BM25)."""

from agentgym.registry import register

register(
    "agentgym/SearchQA-v0",
    "agentgym.envs.search.searchqa:SearchQAEnv",
    family="search",
    description="multi-hop QA (bridge, comparison, 3-4 hops) with BM25 search over a generated "
    "encyclopedia, or your HotpotQA/2Wiki/MuSiQue/FlashRAG files (questions=, corpus=); "
    "answer scored by exact match and F1",
)

"""Local retrieval over a generated encyclopedia (Search-R1 / Tree-GRPO QA, in kind).

No Gymnasium here: :func:`build_world` draws fictional entities and typed relations from a
seed, :mod:`.articles` writes their articles, :class:`Encyclopedia` indexes the passages with
BM25 (``search``) and serves whole articles (``open``), and :func:`make_question` draws
multi-hop questions with exact answers. ``agentgym.envs.search`` wraps them as an env.
"""

from agentgym.simulators.search.articles import Article, Passage
from agentgym.simulators.search.encyclopedia import Encyclopedia, get_encyclopedia, tokenize
from agentgym.simulators.search.questions import QUESTION_MIX, Question, make_question
from agentgym.simulators.search.world import Entity, World, build_world

__all__ = [
    "QUESTION_MIX",
    "Article",
    "Encyclopedia",
    "Entity",
    "Passage",
    "Question",
    "World",
    "build_world",
    "get_encyclopedia",
    "make_question",
    "tokenize",
]

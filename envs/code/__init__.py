"""Code execution envs: math with a Python tool, and programs graded by hidden unit tests.

Both run the agent's code in the jailed sandbox of :mod:`agentgym.simulators.sandbox`.
"""

from agentgym.registry import register

register(
    "agentgym/CodeMath-v0",
    "agentgym.envs.code.codemath:CodeMathEnv",
    family="code",
    description="math problems (levels 1-3) solved with a stateful Python tool, exact answers",
)
for _level in (1, 2, 3):
    register(
        f"agentgym/CodeMath-L{_level}-v0",
        "agentgym.envs.code.codemath:CodeMathEnv",
        family="code",
        kwargs={"levels": (_level,)},
        description=f"math problems of level {_level} with a stateful Python tool",
    )
register(
    "agentgym/CodeTests-v0",
    "agentgym.envs.code.codetests:CodeTestsEnv",
    family="code",
    description="write a Python function; run public tests; graded on hidden unit tests "
    "(112 shipped tasks, or your HumanEval/MBPP file: tasks=)",
)

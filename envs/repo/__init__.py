"""Repository tasks: fix a reported bug in a multi-file Python project (SWE-style).

The world (projects, bug injection, task table, grading, SWE-bench-format instances) lives in
:mod:`agentgym.simulators.repo`; the env runs its tools in a jailed sandbox session.
"""

from agentgym.registry import register

register(
    "agentgym/RepoFix-v0",
    "agentgym.envs.repo.repofix:RepoFixEnv",
    family="repo",
    description="fix a reported bug in a Python repository with bash and an editor; hidden tests grade",
)

"""The Ray pool replaces an actor that died for good, with backoff, and logs it.

On 11f859c such an actor stayed dead: every later reset of its envs raised and the pool
had to be rebuilt.
"""

from __future__ import annotations

import logging
import os
import re
import signal

import pytest

from agentgym.parsing import render_tool_call
from agentgym.pools import RayEnvPool
from tests.distributed.ray_test_envs import kill_actor_for_good

pytestmark = [pytest.mark.ray, pytest.mark.slow]

ENV_ID = "agentgym/Sokoban-Tiny-v0"
UP = render_tool_call("move", {"direction": "up"})
LOGGER = "agentgym.pools.ray"


def _replacement_logs(caplog) -> list[tuple[int, int, float]]:
    """(actor, replacement in a row, next wait) of each 'died for good' warning."""
    out = []
    for rec in caplog.records:
        m = re.search(
            r"env actor (\d+) .*died for good; replaced.*replacement (\d+) in a row.*waits "
            r"([0-9.]+) s",
            rec.getMessage(),
        )
        if m:
            assert rec.levelno == logging.WARNING
            out.append((int(m[1]), int(m[2]), float(m[3])))
    return out


def test_actor_sigkilled_past_max_restarts_is_replaced_and_logged(ray_session, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with RayEnvPool.from_id(
        ENV_ID, 2, num_cpus=0.25, max_restarts=0, timeout_s=60, replace_backoff_s=0.1
    ) as pool:
        pool.reset(seeds=[3, 4])
        old_pid = pool.actor_pids()[0]
        os.kill(old_pid, signal.SIGKILL)  # max_restarts=0: Ray will not bring it back
        res = pool.step({0: UP, 1: UP})
        assert res[0].truncated and "env_error" in res[0].info
        assert "env_error" not in res[1].info  # the other actor's episode goes on
        assert _replacement_logs(caplog) == [(0, 1, 0.1)]
        assert pool.replacements == [1, 0]
        # the replacement takes new episodes like the original did
        ((_obs, info),) = pool.reset([0], seeds=[3])
        assert info["task_id"] == pool.reset([1], seeds=[3])[0][1]["task_id"]
        assert pool.actor_pids()[0] != old_pid
        assert pool.step({0: UP})[0].info["action_valid"]


def test_replacements_back_off_while_new_actors_keep_dying(ray_session, caplog):
    ray = ray_session
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with RayEnvPool.from_id(
        ENV_ID, 1, num_cpus=0.25, timeout_s=60, replace_backoff_s=0.2, start_timeout_s=120
    ) as pool:
        pool.reset(seeds=[1])
        kill_actor_for_good(ray, pool.actors[0])  # killed for good
        assert "env_error" in pool.step({0: UP})[0].info
        kill_actor_for_good(ray, pool.actors[0])  # its replacement dies before answering
        assert "env_error" in pool.step({0: UP})[0].info
        ((_, info),) = pool.reset(seeds=[1])  # waits out the backoff, then a new actor
        assert info["task_id"]
        # the second replacement in a row waited twice as long as the first
        assert _replacement_logs(caplog) == [(0, 1, 0.2), (0, 2, 0.4)]
        # the new actor answered: the next death starts the backoff from the beginning
        kill_actor_for_good(ray, pool.actors[0])
        assert "env_error" in pool.step({0: UP})[0].info
        pool.reset(seeds=[1])  # the replacement is certainly made by now
        assert _replacement_logs(caplog)[2:] == [(0, 1, 0.2)]
        assert pool.replacements == [3]
        assert pool.reset(seeds=[1])[0][1]["task_id"] == info["task_id"]


def test_no_replacement_when_turned_off(ray_session, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with RayEnvPool.from_id(ENV_ID, 1, num_cpus=0.25, replace_dead=False) as pool:
        pool.reset(seeds=[1])
        kill_actor_for_good(ray_session, pool.actors[0])
        assert "env_error" in pool.step({0: UP})[0].info
        assert pool.replacements == [0] and not _replacement_logs(caplog)

"""Env factories for the Ray pool tests (pickled by value to the Ray workers)."""

from __future__ import annotations

import os
import time

import gymnasium as gym


class Misbehaving(gym.Wrapper):
    """Sokoban that hangs on the action ``HANG`` and kills its process on ``DIE``."""

    def step(self, action):
        if action == "HANG":
            time.sleep(60)
        if action == "DIE":
            os._exit(1)
        return self.env.step(action)


def make_misbehaving():
    import agentgym  # noqa: F401

    return Misbehaving(gym.make("agentgym/Sokoban-Tiny-v0"))

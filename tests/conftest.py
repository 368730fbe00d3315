"""Shared pytest set-up: every test sees a fresh registry import and a tiny fake env."""

from __future__ import annotations

import agentgym  # noqa: F401  (registers every env before collection)

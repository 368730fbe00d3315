"""Facts about the host's processes that more than one part of agentgym asks."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (any user's; a zombie counts).

    Used to tell a lease or a directory left by a dead process from one a live process still
    owns, so that only the first is taken over or removed."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and belongs to another user
        return True
    return True

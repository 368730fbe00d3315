"""The old name of :mod:`agentgym.pools.local` (the local env pool), kept for existing code.

The pools now live together in :mod:`agentgym.pools`. ``import agentgym.vector`` gives the
very module :mod:`agentgym.pools.local` (one module under two names, so
``agentgym.vector.EnvPool is agentgym.pools.EnvPool``); new code imports from
:mod:`agentgym.pools`.
"""

from __future__ import annotations

import sys

from agentgym.pools import local as _local

sys.modules[__name__] = _local

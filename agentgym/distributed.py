"""The old name of :mod:`agentgym.pools.ray` (the env pool on Ray actors), kept for existing code.

The pools now live together in :mod:`agentgym.pools`. ``import agentgym.distributed`` gives the
very module :mod:`agentgym.pools.ray` (one module under two names, so
``agentgym.distributed.RayEnvPool is agentgym.pools.RayEnvPool``); new code imports from
:mod:`agentgym.pools`. Ray itself is still imported only when a pool starts.
"""

from __future__ import annotations

import sys

from agentgym.pools import ray as _ray

sys.modules[__name__] = _ray

"""Lockstep: the engine's mode in which every turn is one policy call for all episodes.

With ``RolloutConfig(lockstep=True)`` the engine still runs each episode as its own task,
but no policy request goes out alone. Requests wait until every running episode has asked
(an episode that just ended has been replaced by the next one, and that one has been reset
and asked too); then the batched policy is called ONCE with all of them, in lane order.

Lanes are what make a lockstep run reproducible: episode ``k`` starts in lane ``k`` when
there is room, and an episode that starts later takes a lane freed by the turn that ended
its predecessor: the lowest one first (``lane_reuse="lowest"``), or the highest
(``"highest"``, the order of the trainer's group rollouts); episodes that start together
take those lanes in episode order. A policy that draws random numbers therefore sees the same batches in the same
order on every run, whichever env thread happened to answer first, and this is the order
in which :func:`agentgym.episodes.play` has always batched its episodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor

from agentgym.agents.base import Generation, Policy, PolicyInput
from agentgym.error import InvalidConfigError
from agentgym.rollout.records import Episode


class LockstepBatches:
    """Collects the running episodes' requests and sends them as one batch per turn.

    The engine calls :meth:`flush_if_all_asked` whenever something changed (it knows which
    episodes run, and it has started any replacement before it looks); :meth:`act` is an
    episode's request, and wakes the engine through ``wake``.
    """

    def __init__(self, policy: Policy, lane_reuse: str = "lowest"):
        if asyncio.iscoroutinefunction(getattr(policy, "act", None)):
            raise InvalidConfigError(
                "lockstep needs a batched synchronous policy (act(list) -> list); "
                f"{type(policy).__name__}.act is a coroutine. Use lockstep=False for it."
            )
        if lane_reuse not in ("lowest", "highest"):
            raise InvalidConfigError(
                f"lane_reuse must be 'lowest' or 'highest', got {lane_reuse!r}."
            )
        self.policy = policy
        self.lane_reuse = lane_reuse
        self._top = 0
        """Lanes ever used; a newcomer beyond them takes a new lane."""
        self.wake: Callable[[], None] = lambda: None
        self._asked: dict[Episode, tuple[PolicyInput, asyncio.Future[Generation]]] = {}
        self._lanes: dict[Episode, int] = {}
        self._turn: asyncio.Task[None] | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lockstep-policy")
        self.batch_sizes: list[int] = []
        """Size of every batch sent to the policy, in order."""

    async def act(self, ep: Episode, item: PolicyInput) -> Generation:
        """``ep``'s request for this turn; answered when the whole turn's batch is back."""
        future: asyncio.Future[Generation] = asyncio.get_running_loop().create_future()
        self._asked[ep] = (item, future)
        self.wake()
        try:
            return await future
        finally:
            if self._asked.get(ep, (None, None))[1] is future:
                del self._asked[ep]

    def _waiting(self, ep: Episode, loop: asyncio.AbstractEventLoop) -> bool:
        entry = self._asked.get(ep)
        return entry is not None and entry[1].get_loop() is loop and not entry[1].done()

    def flush_if_all_asked(self, running: Collection[Episode]) -> None:
        """Send the turn's batch when every episode in ``running`` waits for its action."""
        loop = asyncio.get_running_loop()  # while a turn is out, nobody waits to be sent
        if not running or not all(self._waiting(ep, loop) for ep in running):
            return
        order = self._assign_lanes(running)
        batch = [(ep, *self._asked.pop(ep)) for ep in order]
        self._turn = loop.create_task(self._send(batch))

    def _assign_lanes(self, running: Collection[Episode]) -> list[Episode]:
        """Keep the lanes of episodes that still run; give the newcomers, in episode
        order, the free lanes (lowest or highest first, ``lane_reuse``) and then new
        ones; return ``running`` in lane order."""
        self._lanes = {ep: lane for ep, lane in self._lanes.items() if ep in running}
        taken = set(self._lanes.values())
        free = [lane for lane in range(self._top) if lane not in taken]
        if self.lane_reuse == "highest":
            free.reverse()
        for ep in sorted((ep for ep in running if ep not in self._lanes), key=_episode_order):
            if free:
                self._lanes[ep] = free.pop(0)
            else:
                self._lanes[ep] = self._top
                self._top += 1
        return sorted(running, key=self._lanes.__getitem__)

    async def _send(
        self, batch: list[tuple[Episode, PolicyInput, asyncio.Future[Generation]]]
    ) -> None:
        items = [item for _, item, _ in batch]
        self.batch_sizes.append(len(items))
        loop = asyncio.get_running_loop()
        try:
            gens = await loop.run_in_executor(self._thread, self.policy.act, items)
            if len(gens) != len(items):
                raise InvalidConfigError(
                    f"{type(self.policy).__name__}.act returned {len(gens)} generations "
                    f"for {len(items)} inputs; it must return one per input."
                )
        except Exception as exc:  # every episode of the turn gets the cause
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, _, future), gen in zip(batch, gens):
            if not future.done():
                future.set_result(gen)

    def close(self) -> None:
        self._thread.shutdown(wait=False)


def _episode_order(ep: Episode) -> tuple[int, int]:
    return ep.index, ep.attempt

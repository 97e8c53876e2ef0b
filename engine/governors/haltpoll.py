"""haltpoll (drivers/cpuidle/governors/haltpoll.c, unchanged from v6.6 to v7.0-rc2 in behaviour):
for KVM guests with states POLL and "haltpoll idle" (HLT).

Each CPU's poll window (`dev->poll_limit_ns`, which cpuidle_poll_time() returns when it is set)
starts at 0, so the first entries halt. A halt longer than the window and at most
`guest_halt_poll_ns` grows it x`guest_halt_poll_grow`, to at least `guest_halt_poll_grow_start`
and at most `guest_halt_poll_ns`; a longer halt divides it by `guest_halt_poll_shrink`. After a
halt the CPU polls; after a poll that timed out it halts; after one a wake-up ended it polls again.
"""

from __future__ import annotations

import numpy as np

from engine.governors.common import (
    G_HP_POLL_LIMIT_NS,
    G_LAST_IDX,
    G_POLL_LIMIT,
    GUEST_HALT_POLL_GROW,
    GUEST_HALT_POLL_GROW_START,
    GUEST_HALT_POLL_NS,
    GUEST_HALT_POLL_SHRINK,
)
from engine.jit import compiled


@compiled(inline=True)
def haltpoll_select(g: np.ndarray, c: int, n_states: int, latency_req: int) -> tuple[int, bool]:
    """haltpoll_select(); `stop_tick` starts true, as cpuidle_idle_call() passes it."""
    if n_states == 0 or latency_req == 0:
        return 0, False
    if g[c, G_HP_POLL_LIMIT_NS] == 0:
        return 1, True
    if g[c, G_LAST_IDX] == 0:
        if g[c, G_POLL_LIMIT] != 0:
            return 1, True  # no event in the poll window: halt
        return 0, False
    return 0, False  # the last state was halt: poll


@compiled(inline=True)
def haltpoll_reflect(g: np.ndarray, c: int, index: int, block_ns: int) -> None:
    """haltpoll_reflect() -> adjust_poll_limit() after a halt (`block_ns` = last_residency_ns)."""
    if index == 0:
        return
    limit = g[c, G_HP_POLL_LIMIT_NS]
    if limit < block_ns <= GUEST_HALT_POLL_NS:
        val = limit * GUEST_HALT_POLL_GROW
        if val < GUEST_HALT_POLL_GROW_START:
            val = GUEST_HALT_POLL_GROW_START
        if val > GUEST_HALT_POLL_NS:
            val = GUEST_HALT_POLL_NS
        g[c, G_HP_POLL_LIMIT_NS] = val
    elif block_ns > GUEST_HALT_POLL_NS:
        g[c, G_HP_POLL_LIMIT_NS] = limit // GUEST_HALT_POLL_SHRINK

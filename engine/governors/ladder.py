"""ladder (drivers/cpuidle/governors/ladder.c): one step up after PROMOTION_COUNT long stays, one
down after DEMOTION_COUNT short ones, thresholds in ns. The same in every release modelled, v6.6 to
v7.0-rc2 (its only change there, "Fix state index when only one idle state is registered",
February 2026, is covered by the core's skip of the governor with one state).
"""

from __future__ import annotations

import numpy as np

from engine.governors.common import (
    DEMOTION_COUNT,
    G_LAST_IDX,
    G_LAST_RES,
    PROMOTION_COUNT,
    col_demotion,
    col_promotion,
)
from engine.jit import compiled


@compiled(inline=True)
def _ladder_do_selection(g: np.ndarray, c: int, n: int, old_idx: int, new_idx: int) -> None:
    g[c, col_promotion(n) + old_idx] = 0
    g[c, col_demotion(n) + old_idx] = 0
    g[c, G_LAST_IDX] = new_idx


@compiled(inline=True)
def ladder_select(
    g: np.ndarray, c: int, exit_ns: np.ndarray, enabled: np.ndarray, is_poll0: bool, latency_req: int
) -> int:
    n = exit_ns.shape[0]
    first_idx = 1 if is_poll0 else 0
    last_idx = g[c, G_LAST_IDX]
    if latency_req == 0:
        _ladder_do_selection(g, c, n, last_idx, 0)
        return 0
    last_residency = g[c, G_LAST_RES] - exit_ns[last_idx]
    prom = col_promotion(n)
    dem = col_demotion(n)
    # Thresholds: promotion_time = demotion_time = the state's exit latency (ladder_enable_device).
    if (
        last_idx < n - 1
        and enabled[last_idx + 1]
        and last_residency > exit_ns[last_idx]
        and exit_ns[last_idx + 1] <= latency_req
    ):
        g[c, prom + last_idx] += 1
        g[c, dem + last_idx] = 0
        if g[c, prom + last_idx] >= PROMOTION_COUNT:
            _ladder_do_selection(g, c, n, last_idx, last_idx + 1)
            return last_idx + 1
    if last_idx > first_idx and (not enabled[last_idx] or exit_ns[last_idx] > latency_req):
        i = last_idx - 1
        while i > first_idx:
            if exit_ns[i] <= latency_req:
                break
            i -= 1
        _ladder_do_selection(g, c, n, last_idx, i)
        return i
    if last_idx > first_idx and last_residency < exit_ns[last_idx]:
        g[c, dem + last_idx] += 1
        g[c, prom + last_idx] = 0
        if g[c, dem + last_idx] >= DEMOTION_COUNT:
            _ladder_do_selection(g, c, n, last_idx, last_idx - 1)
            return last_idx - 1
    return last_idx

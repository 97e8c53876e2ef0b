"""teo (drivers/cpuidle/governors/teo.c) as mainline has it with 083654ded547 ("Rework the handling
of tick wakeups", after v6.18): hits and intercepts per state bin, short_idles, total_tick,
tick_intercepts; no util-awareness, no NR_RECENT. The one teo modelled: `governor.kernel` names
it, and teo at other releases is refused rather than approximated.
"""

from __future__ import annotations

import numpy as np

from engine.governors.common import (
    DECAY_SHIFT,
    G_LAST_IDX,
    G_LAST_RES,
    G_POLL_LIMIT,
    G_T_PENDING,
    G_T_SHORT_IDLES,
    G_T_SLEEP_LENGTH,
    G_T_TICK_INTERCEPTS,
    G_T_TOTAL,
    G_T_TOTAL_TICK,
    G_TICK_WAKEUP,
    INF,
    LATENCY_THRESHOLD_NS,
    PULSE,
    RESIDENCY_THRESHOLD_NS,
    col_hits,
    col_intercepts,
    find_shallower,
)
from engine.jit import compiled


@compiled(inline=True)
def _teo_decay(v: int) -> int:
    d = v >> DECAY_SHIFT
    if d:
        return v - d
    return 0


@compiled(inline=True)
def _teo_update(g: np.ndarray, c: int, res_ns: np.ndarray, exit_ns: np.ndarray, tick_ns: int) -> None:
    n = res_ns.shape[0]
    hits = col_hits(n)
    inter = col_intercepts(n)
    g[c, G_T_SHORT_IDLES] = _teo_decay(g[c, G_T_SHORT_IDLES])
    if g[c, G_POLL_LIMIT] != 0:
        g[c, G_POLL_LIMIT] = 0
        measured = INF
    else:
        lat = exit_ns[g[c, G_LAST_IDX]]
        measured = g[c, G_LAST_RES]
        if measured >= lat:
            measured -= lat // 2
            if measured < RESIDENCY_THRESHOLD_NS:
                g[c, G_T_SHORT_IDLES] += PULSE
        else:
            measured //= 2
            g[c, G_T_SHORT_IDLES] += PULSE
    total = 0
    idx_timer = 0
    idx_duration = 0
    sleep_length = g[c, G_T_SLEEP_LENGTH]
    for i in range(n):
        g[c, hits + i] = _teo_decay(g[c, hits + i])
        total += g[c, hits + i]
        g[c, inter + i] = _teo_decay(g[c, inter + i])
        total += g[c, inter + i]
        if res_ns[i] <= sleep_length:
            idx_timer = i
            if res_ns[i] <= measured:
                idx_duration = i
    g[c, G_T_TOTAL] = total + PULSE
    g[c, G_T_TICK_INTERCEPTS] = _teo_decay(g[c, G_T_TICK_INTERCEPTS])
    g[c, G_T_TOTAL_TICK] = _teo_decay(g[c, G_T_TOTAL_TICK])
    if g[c, G_TICK_WAKEUP] != 0:
        g[c, G_T_TOTAL_TICK] += PULSE
        if 3 * g[c, G_T_TOTAL_TICK] > 2 * g[c, G_T_TOTAL]:
            g[c, hits + n - 1] += PULSE
            return
    if idx_timer == idx_duration:
        g[c, hits + idx_timer] += PULSE
    else:
        g[c, inter + idx_duration] += PULSE
        if measured <= tick_ns:
            g[c, G_T_TICK_INTERCEPTS] += PULSE


@compiled(inline=True)
def teo_select(
    g: np.ndarray,
    c: int,
    res_ns: np.ndarray,
    exit_ns: np.ndarray,
    enabled: np.ndarray,
    is_poll0: bool,
    latency_req: int,
    sleep_length: int,
    delta_tick_in: int,
    tick_stopped: bool,
    tick_ns: int,
) -> tuple[int, bool]:
    n = res_ns.shape[0]
    hits = col_hits(n)
    inter = col_intercepts(n)
    if g[c, G_T_PENDING] != 0:
        _teo_update(g, c, res_ns, exit_ns, tick_ns)
        g[c, G_T_PENDING] = 0
    delta_tick = tick_ns // 2
    g[c, G_T_SLEEP_LENGTH] = INF
    if n < 2:
        return 0, False
    idx = -1
    idx0 = 0
    if enabled[0]:
        idx = 0
    intercept_sum = 0
    hit_sum = 0
    idx_intercept_sum = 0
    idx_hit_sum = 0
    constraint_idx = 0
    for i in range(1, n):
        intercept_sum += g[c, inter + i - 1]
        hit_sum += g[c, hits + i - 1]
        if not enabled[i]:
            continue
        if idx < 0:
            idx0 = i
        idx = i
        if exit_ns[i] <= latency_req:
            constraint_idx = i
        idx_intercept_sum = intercept_sum
        idx_hit_sum = hit_sum
    if idx < 0:
        return 0, False

    duration_ns = INF
    if idx == idx0:
        duration_ns = res_ns[idx]
    else:
        rest = g[c, G_T_TOTAL] - idx_hit_sum
        if rest < 0:
            rest += 1 << 32  # unsigned int arithmetic in teo.c
        if 2 * idx_intercept_sum > rest:
            min_idx = idx0
            if tick_stopped:
                while min_idx < idx and res_ns[min_idx] < tick_ns:
                    min_idx += 1
            s = 0
            for i in range(idx - 1, min_idx - 1, -1):
                s += g[c, inter + i]
                if not enabled[i]:
                    continue
                idx = i
                if 2 * s > idx_intercept_sum:
                    break
        if idx > constraint_idx:
            idx = constraint_idx
        if (idx == 0 or res_ns[idx] < RESIDENCY_THRESHOLD_NS) and (
            2 * g[c, G_T_SHORT_IDLES] >= g[c, G_T_TOTAL] or latency_req < LATENCY_THRESHOLD_NS
        ):
            return idx, False
        duration_ns = sleep_length
        delta_tick = delta_tick_in
        g[c, G_T_SLEEP_LENGTH] = duration_ns
        if idx == 0:
            return idx, False
        if res_ns[idx] > duration_ns:
            idx = find_shallower(res_ns, enabled, idx, duration_ns)
        total = g[c, G_T_TOTAL]
        if res_ns[idx] < tick_ns and g[c, G_T_TICK_INTERCEPTS] > total // 2 + total // 8:
            duration_ns = tick_ns // 2

    if (not (idx == 0 and is_poll0) and duration_ns >= tick_ns) or tick_stopped:
        return idx, True
    if idx > idx0 and res_ns[idx] > delta_tick:
        idx = find_shallower(res_ns, enabled, idx, delta_tick)
    return idx, False

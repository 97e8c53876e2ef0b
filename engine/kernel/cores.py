"""Core and package C-states beneath the OS view (`Hw`), and the exit latency a waking thread pays.

A thread's request, its core's level and its packages' states are opened when its wait starts
(`hw_enter`) and closed at its wake event (`hw_leave`); the exit it draws (`exit_latency`)
depends on the state its core and package really reached.
"""

from __future__ import annotations

import numpy as np

from engine.jit import compiled
from engine.kernel.layout import (
    C_HW_LEVEL,
    C_HW_START,
    C_IN_LLC,
    I_PKG_DEEP,
    Hw,
    Table,
)
from engine.streams import lognormal

Z_9999 = 3.719016485455709  # standard normal quantile of 0.9999: where exit_draw puts the worst case


@compiled(inline=True)
def _exit_draw(rng: np.ndarray, c: int, tab: Table, row: int) -> int:
    """Log-normal exit latency: the median as given, the worst case at the 99.99th percentile."""
    median = tab.median_ns[row]
    if median <= 0.0:
        return 0
    if tab.sigma[row] <= 0.0:
        return int(median)
    return int(lognormal(rng, c, tab.exit_quantiles, row, median, tab.sigma[row]))


@compiled(inline=True)
def _exit_row(cs: np.ndarray, hw: Hw, ip: np.ndarray, c: int, s: int, t: int) -> int:
    """Which exit distribution a thread waking at t from state s draws from: that of the state
    its core really reached (a sibling in C0 or a shallower state holds the core there), and for
    the deepest states whether the package is in the package state the table's figure includes.
    A request the firmware demoted to core C1 exits like C1."""
    lv = hw.level[s]
    if 0 < cs[c, C_HW_LEVEL] < lv:
        return hw.level_row[cs[c, C_HW_LEVEL]]
    if lv > 0:
        # The shallowest of the other threads' requests holds the core there (C0 if one runs).
        other = lv
        for k in range(hw.siblings.shape[1]):
            sib = hw.siblings[c, k]
            if sib >= 0:
                other = min(other, cs[sib, C_HW_LEVEL] if cs[sib, C_HW_START] <= t else 0)
        if other < lv:
            return hw.level_row[other]
    j = ip[I_PKG_DEEP]
    if j >= 0 and lv >= hw.pk_level[j]:
        g = hw.pk_group[j, hw.core_of[c]]
        if hw.pk_missing[j, g] == 0 and hw.pk_since[j, g] <= t:
            return s
    return hw.state_row[s]


@compiled(inline=True)
def exit_latency(
    cs: np.ndarray, hw: Hw, ip: np.ndarray, tab: Table, rng: np.ndarray, c: int, s: int, t: int, mw: int
) -> int:
    """Thread c's exit latency from state s at t. The first waker of a package in the package
    state the table's figure includes takes it out, paying the whole figure; a core of that package
    waking while it is still leaving (or at the same time) gets the core-only exit but cannot run
    before the package is out."""
    row = _exit_row(cs, hw, ip, c, s, t)
    x = _exit_draw(rng, c, tab, row) + tab.exit_extra_ns[s]
    j = ip[I_PKG_DEEP]
    if j >= 0 and hw.level[s] >= hw.pk_level[j]:
        g = hw.pk_group[j, hw.core_of[c]]
        t0 = max(t, mw)
        if row == s:
            hw.pk_out_at[j, g] = t0 + x
        elif hw.pk_out_at[j, g] > t0:
            x = max(x, hw.pk_out_at[j, g] - t0)
    return x


@compiled(inline=True)
def hw_enter(cs: np.ndarray, hw: Hw, c: int, lv: int, start: int) -> None:
    """Thread c requests core level lv from `start` (its wait begins): with its siblings idle (or
    none), the core is at the shallowest of their levels from the latest of their starts."""
    cs[c, C_HW_LEVEL] = lv
    cs[c, C_HW_START] = start
    level, since = lv, start
    for k in range(hw.siblings.shape[1]):
        sib = hw.siblings[c, k]
        if sib >= 0:
            level = min(level, cs[sib, C_HW_LEVEL])
            since = max(since, cs[sib, C_HW_START])
    if level == 0:
        return
    core = hw.core_of[c]
    hw.core_level[core] = level
    hw.core_since[core] = since
    if level >= hw.flush_level[0]:
        _mark_in_llc(cs, hw, c, 1)
    if level < hw.pk_min[0]:
        return
    for j in range(hw.pk_level.shape[0]):
        if level >= hw.pk_level[j]:
            g = hw.pk_group[j, core]
            m = hw.pk_missing[j, g] - 1
            hw.pk_missing[j, g] = m
            if m == 0:
                latest = since
                for o in range(hw.pk_lo[j, g], hw.pk_hi[j, g]):
                    latest = max(latest, hw.core_since[o])
                hw.pk_since[j, g] = latest + hw.pk_entry[j]


@compiled(inline=True)
def _mark_in_llc(cs: np.ndarray, hw: Hw, c: int, value: int) -> None:
    """Thread c's core flushed its caches (1) or is running again (0): for all its threads."""
    cs[c, C_IN_LLC] = value
    for k in range(hw.siblings.shape[1]):
        sib = hw.siblings[c, k]
        if sib >= 0:
            cs[sib, C_IN_LLC] = value


@compiled(inline=True)
def hw_leave(cs: np.ndarray, hw: Hw, c: int, t: int, t_out: int) -> None:
    """Thread c's wake event at t: close its request at t_out (its thread is out of the C-state,
    the hardware exit done), and its core's and packages' intervals at t."""
    lv = cs[c, C_HW_LEVEL]
    if lv == 0:
        return
    cs[c, C_HW_LEVEL] = 0
    hw.thread_idle[c] += max(t_out - cs[c, C_HW_START], 0)
    core = hw.core_of[c]
    level = hw.core_level[core]
    if level == 0:
        return
    hw.core_level[core] = 0
    hw.core_time[core, level] += max(t - hw.core_since[core], 0)
    if level >= hw.flush_level[0]:
        _mark_in_llc(cs, hw, c, 0)
    if level < hw.pk_min[0]:
        return
    for j in range(hw.pk_level.shape[0]):
        if level >= hw.pk_level[j]:
            g = hw.pk_group[j, core]
            if hw.pk_missing[j, g] == 0:
                hw.pk_time[j, g] += max(t - hw.pk_since[j, g], 0)
            hw.pk_missing[j, g] += 1

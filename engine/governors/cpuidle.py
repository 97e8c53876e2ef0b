"""cpuidle's side of the governors (drivers/cpuidle/cpuidle.c): cpuidle_select() dispatching on
the governor and on the release's behaviour codes, cpuidle_reflect(), the -EBUSY path, and the two
governors that are not the kernel's (oracle, fixed).

The release is one small integer, `variant` (engine.governors.common.pack_variant): each
behaviour's code in its own 3-bit field, menu's, teo's and the core's.
"""

from __future__ import annotations

import numpy as np

from engine.governors.common import (
    G_HP_POLL_LIMIT_NS,
    G_LAST_IDX,
    G_LAST_RES,
    G_NEEDS_UPDATE,
    G_POLL_LIMIT,
    G_T_PENDING,
    G_TICK_WAKEUP,
    GOV_FIXED,
    GOV_HALTPOLL,
    GOV_LADDER,
    GOV_MENU,
    GOV_ORACLE,
    GOV_TEO,
    N_V,
    V_BITS,
    V_ONE_STATE,
    V_POLL_RULE,
    V_REJECTED,
    V_STOPPED_TICK,
    V_TYPICAL,
    pack_variant,
    variant_field,
)
from engine.governors.haltpoll import haltpoll_reflect, haltpoll_select
from engine.governors.ladder import ladder_select
from engine.governors.menu import menu_select
from engine.governors.teo import teo_select
from engine.jit import compiled

# V_ONE_STATE's codes: the governor decides with one state (up to v7.0-rc1), or cpuidle_select()
# returns state 0 with the tick kept, without calling it ("cpuidle: Skip governor when only one
# idle state is available", v7.0-rc2).
ONE_STATE_GOVERNOR, ONE_STATE_CORE_SKIPS = range(2)


@compiled(inline=True)
def _deepest_fitting(
    res_ns: np.ndarray, exit_ns: np.ndarray, enabled: np.ndarray, latency_req: int, duration: int
) -> int:
    idx = -1
    for i in range(res_ns.shape[0]):
        if not enabled[i]:
            continue
        if idx == -1:
            idx = i
        if exit_ns[i] > latency_req:
            break
        if res_ns[i] <= duration:
            idx = i
    return max(idx, 0)


@compiled(inline=True)
def select_state(
    gov: int,
    variant: int,
    g: np.ndarray,
    c: int,
    res_ns: np.ndarray,
    exit_ns: np.ndarray,
    enabled: np.ndarray,
    is_poll0: bool,
    latency_req: int,
    sleep_length: int,
    delta_tick: int,
    tick_stopped: bool,
    tick_ns: int,
    fixed_idx: int,
    oracle_ns: int,
    nohz_full: bool,
) -> tuple[int, bool]:
    """cpuidle_select(): the state to enter and whether to stop the tick."""
    n = res_ns.shape[0]
    if n <= 1 and variant_field(variant, V_ONE_STATE) == ONE_STATE_CORE_SKIPS:
        return 0, False
    if gov == GOV_MENU:
        return menu_select(
            g, c, res_ns, exit_ns, enabled, is_poll0, latency_req, sleep_length, delta_tick, tick_stopped,
            tick_ns, nohz_full, variant_field(variant, V_TYPICAL), variant_field(variant, V_POLL_RULE),
            variant_field(variant, V_STOPPED_TICK), variant_field(variant, V_REJECTED),
        )
    if gov == GOV_TEO:
        return teo_select(
            g, c, res_ns, exit_ns, enabled, is_poll0, latency_req, sleep_length, delta_tick, tick_stopped,
            tick_ns, variant,
        )
    if gov == GOV_LADDER:
        # ladder_select() leaves stop_tick as cpuidle_idle_call() set it: true (kernel/sched/idle.c).
        return ladder_select(g, c, exit_ns, enabled, is_poll0, latency_req), True
    if gov == GOV_HALTPOLL:
        return haltpoll_select(g, c, n, latency_req)
    if gov == GOV_ORACLE:
        idx = _deepest_fitting(res_ns, exit_ns, enabled, latency_req, oracle_ns)
        return idx, not (idx == 0 and is_poll0) and oracle_ns > delta_tick
    # fixed: the configured state, or the deepest shallower one PM QoS allows.
    idx = fixed_idx
    while idx > 0 and (not enabled[idx] or exit_ns[idx] > latency_req):
        idx -= 1
    if not enabled[idx]:
        # Nothing enabled meets the limit: the first enabled state, as menu does.
        while not enabled[idx]:
            idx += 1
    return idx, not (idx == 0 and is_poll0) and sleep_length > delta_tick


@compiled(inline=True)
def reflect(
    gov: int, g: np.ndarray, c: int, index: int, last_res: int, tick_wakeup: bool, poll_limit: bool
) -> None:
    """cpuidle_reflect() after a state was entered (never after a rejected entry)."""
    g[c, G_LAST_RES] = last_res
    g[c, G_TICK_WAKEUP] = 1 if tick_wakeup else 0
    g[c, G_POLL_LIMIT] = 1 if poll_limit else 0
    if gov == GOV_LADDER:
        if index > 0:
            g[c, G_LAST_IDX] = index
        return
    g[c, G_LAST_IDX] = index
    if gov == GOV_MENU:
        g[c, G_NEEDS_UPDATE] = 1
    elif gov == GOV_TEO:
        g[c, G_T_PENDING] = 1
    elif gov == GOV_HALTPOLL:
        haltpoll_reflect(g, c, index, last_res)


@compiled(inline=True)
def note_rejected(g: np.ndarray, c: int) -> None:
    """call_cpuidle() returned -EBUSY (NEED_RESCHED already set, kernel/sched/idle.c): it sets
    last_residency_ns to 0 and cpuidle_reflect() is skipped, so menu pushes UINT_MAX at the next
    select (since fa3fa55de0d6). A driver's refusal would do the same; poll_idle() and intel_idle
    never refuse."""
    g[c, G_LAST_RES] = 0


@compiled(inline=True)
def poll_time_ns(g: np.ndarray, c: int, default_ns: int) -> int:
    """cpuidle_poll_time(): the CPU's `poll_limit_ns` when a governor set one (haltpoll), else
    the table's limit."""
    limit = g[c, G_HP_POLL_LIMIT_NS]
    return limit if limit != 0 else default_ns


__all__ = [
    "GOV_FIXED", "GOV_HALTPOLL", "GOV_LADDER", "GOV_MENU", "GOV_ORACLE", "GOV_TEO", "N_V", "V_BITS",
    "V_ONE_STATE", "V_POLL_RULE", "V_REJECTED", "V_STOPPED_TICK", "V_TYPICAL", "note_rejected",
    "pack_variant", "poll_time_ns", "reflect", "select_state", "variant_field",
]

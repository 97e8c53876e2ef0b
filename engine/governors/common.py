"""What every governor shares: the kernel's constants, KTIME_MAX, and the per-CPU data layout.

Each governor keeps its per-CPU data in one row of an int64 matrix `g` so the compiled event
loop can carry every governor without objects. The columns are declared once, below, in order,
with their widths: the numbers are derived. Times are ns; `INF` stands for KTIME_MAX.
"""

from __future__ import annotations

import numpy as np

from engine.jit import compiled

INF = np.int64(1) << np.int64(62)
UINT_MAX = 4294967295
# ktime_to_us(KTIME_MAX) stored in an `unsigned int` (menu's recent intervals): the low 32 bits
# of 9,223,372,036,854,775 us.
KTIME_MAX_US_U32 = ((2**63 - 1) // 1000) & 0xFFFFFFFF  # 2,783,138,807
INT_MAX = 2147483647

# drivers/cpuidle/governors/gov.h
RESIDENCY_THRESHOLD_NS = 15_000
# menu.c
BUCKETS = 6
INTERVALS = 8
RESOLUTION = 1024
DECAY = 8
MAX_INTERESTING = 50_000_000
# teo.c
PULSE = 1024
DECAY_SHIFT = 3
LATENCY_THRESHOLD_NS = RESIDENCY_THRESHOLD_NS // 2
NR_RECENT = 9  # teo.c up to 449914398083 ("Remove recent intercepts metric", v6.12)
# ladder.c
PROMOTION_COUNT = 4
DEMOTION_COUNT = 1
# drivers/cpuidle/governors/haltpoll.c module parameters (their defaults)
GUEST_HALT_POLL_NS = 200_000
GUEST_HALT_POLL_GROW = 2
GUEST_HALT_POLL_GROW_START = 50_000
GUEST_HALT_POLL_SHRINK = 2

GOV_MENU, GOV_TEO, GOV_LADDER, GOV_ORACLE, GOV_FIXED, GOV_HALTPOLL = range(6)
GOVERNOR_IDS = {
    "menu": GOV_MENU, "teo": GOV_TEO, "ladder": GOV_LADDER, "oracle": GOV_ORACLE, "fixed": GOV_FIXED,
    "haltpoll": GOV_HALTPOLL,
}


# The release's behaviour codes: one small integer, each behaviour's code in its own 3-bit field
# (engine.governors.releases chooses the codes per kernel). The loop reads the fields where they
# matter; within a run they never change, so the branches cost nothing.
(
    V_TYPICAL, V_POLL_RULE, V_STOPPED_TICK, V_REJECTED, V_ONE_STATE,  # menu and the core
    V_TEO_LINE, V_TEO_RECENT, V_TEO_STATE0, V_TEO_SHALLOWER, V_TEO_DECAY, V_TEO_TICK_WAKEUP,  # teo
    V_TEO_TICK_INTERCEPTS, V_TEO_LOOKUP, V_TEO_KEEP_TICK, V_TEO_HIT,
    V_TEO_TICK_METRIC, V_TEO_TOTAL, V_TEO_LOW_LATENCY,  # teo's v6.14 series, commit by commit
    N_V,
) = range(19)
V_BITS = 3
assert N_V * V_BITS <= 63  # the codes fit one int64


def pack_variant(codes: tuple[int, ...]) -> int:
    """One integer from the behaviour codes, in V_* order."""
    assert len(codes) == N_V and all(0 <= x < 1 << V_BITS for x in codes), codes
    return sum(x << (V_BITS * k) for k, x in enumerate(codes))


@compiled(inline=True)
def variant_field(variant: int, field: int) -> int:
    return (variant >> (V_BITS * field)) & ((1 << V_BITS) - 1)


def _columns(*widths: int) -> tuple[int, ...]:
    """The first column of each field of the given widths, then the total width."""
    out = [0]
    for w in widths:
        out.append(out[-1] + w)
    return tuple(out)


# Columns of the per-CPU governor matrix, in order (name: width).
(
    G_LAST_IDX,  # 1: dev->last_state_idx as the governor last saw it (-1: none)
    G_LAST_RES,  # 1: dev->last_residency_ns
    G_TICK_WAKEUP,  # 1: tick_nohz_idle_got_tick() at the last reflect
    G_POLL_LIMIT,  # 1: dev->poll_time_limit
    G_NEEDS_UPDATE,  # 1: menu: data->needs_update
    G_M_PTR,  # 1: menu: data->interval_ptr
    G_M_NEXT_TIMER,  # 1: menu: data->next_timer_ns
    G_M_BUCKET,  # 1: menu: data->bucket
    G_T_TOTAL,  # 1: teo: cpu_data->total
    G_T_TOTAL_TICK,  # 1
    G_T_TICK_INTERCEPTS,  # 1
    G_T_SHORT_IDLES,  # 1
    G_T_SLEEP_LENGTH,  # 1
    G_T_PENDING,  # 1: teo: update due (last_state_idx >= 0)
    G_HP_POLL_LIMIT_NS,  # 1: haltpoll: dev->poll_limit_ns
    G_T_TICK_HITS,  # 1: teo up to v6.13: cpu_data->tick_hits
    G_T_NEXT_RECENT,  # 1: teo before 449914398083: cpu_data->next_recent_idx
    G_M_CF,  # BUCKETS: menu's correction factors
    G_M_INTERVALS,  # INTERVALS: menu's recent intervals (us), as the ring the kernel keeps
    G_M_SORTED,  # INTERVALS: the same intervals kept sorted (menu.typical_interval)
    G_T_RECENT_IDX,  # NR_RECENT: teo before 449914398083: cpu_data->recent_idx[] (-1: none)
    G_FIXED_COLS,  # then 5 per state: teo's hits, intercepts and recent; ladder's promotion, demotion
) = _columns(*([1] * 17), BUCKETS, INTERVALS, INTERVALS, NR_RECENT)


def gov_columns(n_states: int) -> int:
    """Width of the governor matrix for a table of `n_states` states."""
    return G_FIXED_COLS + 5 * n_states


@compiled(inline=True)
def col_hits(n_states: int) -> int:
    return G_FIXED_COLS


@compiled(inline=True)
def col_intercepts(n_states: int) -> int:
    return G_FIXED_COLS + n_states


@compiled(inline=True)
def col_promotion(n_states: int) -> int:
    return G_FIXED_COLS + 2 * n_states


@compiled(inline=True)
def col_demotion(n_states: int) -> int:
    return G_FIXED_COLS + 3 * n_states


@compiled(inline=True)
def col_recent(n_states: int) -> int:
    return G_FIXED_COLS + 4 * n_states


def init_governor_state(n_cpus: int, n_states: int, first_idx: int) -> np.ndarray:
    """Fresh per-CPU governor data, as each governor's enable_device() leaves it."""
    g = np.zeros((n_cpus, gov_columns(n_states)), dtype=np.int64)
    g[:, G_M_CF : G_M_CF + BUCKETS] = RESOLUTION * DECAY
    g[:, G_T_SLEEP_LENGTH] = INF
    g[:, G_T_RECENT_IDX : G_T_RECENT_IDX + NR_RECENT] = -1
    g[:, G_LAST_IDX] = first_idx
    return g


@compiled(inline=True)
def find_shallower(res_ns: np.ndarray, enabled: np.ndarray, state_idx: int, duration_ns: int) -> int:
    """The deepest enabled state shallower than `state_idx` whose target residency fits
    `duration_ns`, else the shallowest enabled one below it (menu's and teo's downward walk)."""
    for i in range(state_idx - 1, -1, -1):
        if not enabled[i]:
            continue
        state_idx = i
        if res_ns[i] <= duration_ns:
            break
    return state_idx

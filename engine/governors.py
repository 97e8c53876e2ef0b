"""cpuidle governors, compiled: menu, teo, ladder (as in drivers/cpuidle/governors/), oracle and fixed.

Each governor keeps its per-CPU data in one row of an int64 matrix `g` (columns below) so the
compiled event loop can carry every governor without objects. Times are ns; `INF` stands for
KTIME_MAX. Which kernel each follows:

- menu: menu.c of v6.18.y with 07d815701274 backported (6.18.y stable, January 2026): on top of
  38f83090f515 (iowait influence removed, v6.13), the POLL rule of 779b1a1cb13a (latency check
  first, `latency_req = predicted_ns` gone), db86f55bf81a (`exit_latency_ns <= predicted_ns`) and
  07d815701274 (`target_residency_ns < RESIDENCY_THRESHOLD_NS`). Not 80606f4eb8d7 (timers read
  whenever the tick is stopped), which reached 6.18.y later (stable queue of February 2026).
- teo: teo.c with 083654ded547 "cpuidle: governors: teo: Rework the handling of tick wakeups"
  (mainline after v6.18): hits/intercepts per state bin, short_idles, total_tick,
  tick_intercepts; no util-awareness, no NR_RECENT.
- ladder: ladder.c of v6.18 (ns thresholds), promotion after 4 long stays, demotion after 1 short
  one. Its select never writes `stop_tick`, which cpuidle_idle_call() sets to true before calling
  it (kernel/sched/idle.c), so ladder asks to stop the tick at every idle entry.
- oracle: knows when the CPU's next wake-up comes; the lower bound of regret.
- fixed: always the configured state (the C1-only experiments), within PM QoS.
"""

from __future__ import annotations

import numpy as np

from engine.jit import compiled

INF = np.int64(1) << np.int64(62)
UINT_MAX = 4294967295

GOV_MENU, GOV_TEO, GOV_LADDER, GOV_ORACLE, GOV_FIXED = 0, 1, 2, 3, 4
GOVERNOR_IDS = {
    "menu": GOV_MENU, "teo": GOV_TEO, "ladder": GOV_LADDER, "oracle": GOV_ORACLE, "fixed": GOV_FIXED
}
GOVERNOR_KERNEL = {
    "menu": "menu.c of v6.18.y with 07d815701274 backported (POLL rule of 779b1a1cb13a, db86f55bf81a, "
    "07d815701274; iowait influence removed by 38f83090f515); without 80606f4eb8d7",
    "teo": "teo.c with 083654ded547 (Rework the handling of tick wakeups), mainline after v6.18",
    "ladder": "ladder.c of v6.18 (ns thresholds; never writes stop_tick, so the tick is stopped)",
    "oracle": "not a kernel governor: knows the next wake-up",
    "fixed": "not a kernel governor: one state only",
}

# gov.h
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
# ladder.c
PROMOTION_COUNT = 4
DEMOTION_COUNT = 1

# Columns of the per-CPU governor matrix.
G_LAST_IDX = 0  # dev->last_state_idx as the governor last saw it (-1: none)
G_LAST_RES = 1  # dev->last_residency_ns
G_TICK_WAKEUP = 2  # tick_nohz_idle_got_tick() at the last reflect
G_POLL_LIMIT = 3  # dev->poll_time_limit
G_NEEDS_UPDATE = 4  # menu: data->needs_update
G_M_PTR = 5
G_M_NEXT_TIMER = 6
G_M_BUCKET = 7
G_T_TOTAL = 8
G_T_TOTAL_TICK = 9
G_T_TICK_INTERCEPTS = 10
G_T_SHORT_IDLES = 11
G_T_SLEEP_LENGTH = 12
G_T_PENDING = 13  # teo: update due (last_state_idx >= 0)
G_M_CF = 14  # 6 correction factors
G_M_INTERVALS = G_M_CF + BUCKETS  # 8 intervals (us)
G_M_SORTED = G_M_INTERVALS + INTERVALS  # menu: the same 8 intervals, kept sorted
G_FIXED_COLS = G_M_SORTED + INTERVALS


def gov_columns(n_states: int) -> int:
    """Width of the governor matrix for a table of `n_states` states."""
    return G_FIXED_COLS + 4 * n_states


@compiled(inline=True)
def _col_hits(n_states: int) -> int:
    return G_FIXED_COLS


@compiled(inline=True)
def _col_intercepts(n_states: int) -> int:
    return G_FIXED_COLS + n_states


@compiled(inline=True)
def _col_promotion(n_states: int) -> int:
    return G_FIXED_COLS + 2 * n_states


@compiled(inline=True)
def _col_demotion(n_states: int) -> int:
    return G_FIXED_COLS + 3 * n_states


def init_governor_state(n_cpus: int, n_states: int, first_idx: int) -> np.ndarray:
    """Fresh per-CPU governor data, as each governor's enable_device() leaves it."""
    g = np.zeros((n_cpus, gov_columns(n_states)), dtype=np.int64)
    g[:, G_M_CF : G_M_CF + BUCKETS] = RESOLUTION * DECAY
    g[:, G_T_SLEEP_LENGTH] = INF
    g[:, G_LAST_IDX] = first_idx
    return g


# ---------------------------------------------------------------------------------------------- menu


@compiled(inline=True)
def _menu_update_intervals(g: np.ndarray, c: int, interval_us: int) -> None:
    """Push an interval into CPU c's ring of 8, and into its sorted copy (G_M_SORTED; both start
    as zeros).

    The sorted copy loses one copy of the value pushed out and gains the new one, without a
    branch: r = the sorted values with one `old` taken out (those above it move down a place),
    then the new value clamped between each pair of neighbours. Sorting the window afresh at
    every selection took ~14 ns a selection, ~0.9 ms of the benchmark's ~10.8 ms loop.
    """
    p = g[c, G_M_PTR]
    old = g[c, G_M_INTERVALS + p]
    g[c, G_M_INTERVALS + p] = interval_us
    p += 1
    if p >= INTERVALS:
        p = 0
    g[c, G_M_PTR] = p
    v = G_M_SORTED
    s0, s1, s2, s3 = g[c, v], g[c, v + 1], g[c, v + 2], g[c, v + 3]
    s4, s5, s6, s7 = g[c, v + 4], g[c, v + 5], g[c, v + 6], g[c, v + 7]
    r0 = s0 if s0 < old else s1
    r1 = s1 if s1 < old else s2
    r2 = s2 if s2 < old else s3
    r3 = s3 if s3 < old else s4
    r4 = s4 if s4 < old else s5
    r5 = s5 if s5 < old else s6
    r6 = s6 if s6 < old else s7
    x = interval_us
    g[c, v] = min(x, r0)
    g[c, v + 1] = min(max(x, r0), r1)
    g[c, v + 2] = min(max(x, r1), r2)
    g[c, v + 3] = min(max(x, r2), r3)
    g[c, v + 4] = min(max(x, r3), r4)
    g[c, v + 5] = min(max(x, r4), r5)
    g[c, v + 6] = min(max(x, r5), r6)
    g[c, v + 7] = max(x, r6)


@compiled(inline=True)
def _div_small(a: int, divisor: int) -> int:
    """a // divisor for a >= 0 and a divisor of at most 8 (the kernel shifts when it is 8).

    Spelled out per divisor, each becomes a multiplication, not a division (~20 cycles).
    """
    if divisor == 8:
        return a >> 3
    if divisor == 7:
        return a // 7
    if divisor == 6:
        return a // 6
    return a // divisor


@compiled(inline=True)
def _surely_irregular(g: np.ndarray, c: int) -> bool:
    """True when no pass of get_typical_interval() can accept the sorted window: a shortcut.

    With 8 distinct values below 2**26, each pass drops one value, so the passes look at runs
    of 8, 7 and 6 consecutive sorted values (six runs in all). For a run of d values with range
    R and maximum M, the kernel's integer variance is more than R^2 / (2d) - 1 (the two extremes
    alone put R^2 / 2 into the sum of squares about the mean, and flooring takes less than 1)
    and its average is at most M. So the run is rejected when R^2 > 802 d (variance > 400) and
    d M^2 <= 18 R^2 - 36 d (average^2 <= 36 variance). Irregular windows, the common case,
    return here without the passes' divisions.
    """
    v = G_M_SORTED
    if g[c, v + INTERVALS - 1] >= 1 << 26:
        return False
    for i in range(INTERVALS - 1):
        if g[c, v + i] == g[c, v + i + 1]:
            return False
    for d in range(INTERVALS - 2, INTERVALS + 1):
        for lo in range(INTERVALS - d + 1):
            top = g[c, v + lo + d - 1]
            r2 = (top - g[c, v + lo]) ** 2
            if r2 <= 802 * d or d * top * top > 18 * r2 - 36 * d:
                return False
    return True


@compiled(inline=True)
def menu_typical_interval(g: np.ndarray, c: int) -> int:
    """get_typical_interval(): the average of the recent intervals if they are steady, else UINT_MAX (us).

    The kernel rescans the 8 intervals once per pass, keeping those strictly between a lower and
    an upper threshold that each pass may tighten to the current min or max. Both thresholds
    are values of the window, so every pass keeps a contiguous run [lo, hi) of the sorted
    intervals (kept sorted as they arrive): each pass only subtracts what it drops (tests check
    this against a transcription of the kernel's loop).
    """
    if _surely_irregular(g, c):
        return UINT_MAX
    v = G_M_SORTED
    lo = 0
    hi = 0
    s = 0
    sq = 0
    for i in range(INTERVALS):
        value = g[c, v + i]
        if value < UINT_MAX:  # value >= max_thresh (UINT_MAX) is skipped; it sorts last
            hi += 1
            s += value
            sq += value * value
    while True:
        if hi == lo or g[c, v + hi - 1] == 0:
            return UINT_MAX  # max == 0
        mn = g[c, v + lo]
        mx = g[c, v + hi - 1]
        divisor = hi - lo
        avg = _div_small(s, divisor)
        variance = _div_small(sq, divisor)
        avg_sq = avg * avg
        variance -= avg_sq
        if (avg_sq > variance * 36 and divisor * 4 >= INTERVALS * 3) or variance <= 400:
            return avg
        if divisor * 4 <= INTERVALS * 3:
            return UINT_MAX
        if avg - mn > mx - avg:
            while g[c, v + lo] == mn:  # min_thresh = mn: every value <= mn goes
                s -= mn
                sq -= mn * mn
                lo += 1
        else:
            while g[c, v + hi - 1] == mx:  # max_thresh = mx
                s -= mx
                sq -= mx * mx
                hi -= 1


@compiled(inline=True)
def _menu_bucket(duration_ns: int) -> int:
    """which_bucket(): decades from 10 us (0) to 100 ms and up (5), counted without branches."""
    return (
        int(duration_ns >= 10_000) + int(duration_ns >= 100_000) + int(duration_ns >= 1_000_000)
        + int(duration_ns >= 10_000_000) + int(duration_ns >= 100_000_000)
    )


@compiled(inline=True)
def _menu_update(g: np.ndarray, c: int, exit_ns: np.ndarray, is_poll0: bool, tick_ns: int) -> None:
    last_idx = g[c, G_LAST_IDX]
    next_timer = g[c, G_M_NEXT_TIMER]
    if g[c, G_TICK_WAKEUP] != 0 and next_timer > tick_ns:
        measured = 9 * MAX_INTERESTING // 10
    elif last_idx == 0 and is_poll0 and g[c, G_POLL_LIMIT] != 0:
        measured = next_timer
    else:
        measured = g[c, G_LAST_RES]
        lat = exit_ns[last_idx]
        if measured > 2 * lat:
            measured -= lat
        else:
            measured //= 2
    if measured > next_timer:
        measured = next_timer
    b = g[c, G_M_BUCKET]
    nf = g[c, G_M_CF + b]
    nf -= nf // DECAY
    if next_timer > 0 and measured < MAX_INTERESTING:
        nf += RESOLUTION * measured // next_timer
    else:
        nf += RESOLUTION
    g[c, G_M_CF + b] = nf
    _menu_update_intervals(g, c, measured // 1000)


@compiled(inline=True)
def menu_select(
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
    if g[c, G_NEEDS_UPDATE] != 0:
        _menu_update(g, c, exit_ns, is_poll0, tick_ns)
        g[c, G_NEEDS_UPDATE] = 0
    elif g[c, G_LAST_RES] == 0:
        _menu_update_intervals(g, c, UINT_MAX)

    predicted = menu_typical_interval(g, c) * 1000
    if predicted > RESIDENCY_THRESHOLD_NS:
        next_timer = sleep_length
        delta_tick = delta_tick_in
        b = _menu_bucket(next_timer)
        cf = g[c, G_M_CF + b]
        timer_us = (RESOLUTION * DECAY * 1000 // 2 + next_timer * cf) // (RESOLUTION * DECAY * 1000)
        if timer_us * 1000 < predicted:
            predicted = timer_us * 1000
    else:
        next_timer = INF
        delta_tick = tick_ns // 2
        b = BUCKETS - 1
    g[c, G_M_NEXT_TIMER] = next_timer
    g[c, G_M_BUCKET] = b

    if n <= 1 or latency_req == 0 or (
        (next_timer < res_ns[1] or latency_req < exit_ns[1]) and enabled[0]
    ):
        return 0, not is_poll0

    if tick_stopped and predicted < tick_ns:
        predicted = next_timer

    idx = -1
    for i in range(n):
        if not enabled[i]:
            continue
        if idx == -1:
            idx = i
        if exit_ns[i] > latency_req:
            break
        if res_ns[i] <= predicted:
            idx = i
            continue
        # A real state instead of POLL: 07d815701274 (residency under 15 us), db86f55bf81a (exit
        # latency within the prediction), and a timer not due before its residency.
        if (
            idx == 0 and is_poll0 and res_ns[i] < RESIDENCY_THRESHOLD_NS and res_ns[i] <= next_timer
            and exit_ns[i] <= predicted
        ):
            predicted = res_ns[i]
            idx = i
            break
        if predicted < tick_ns:
            break
        if not tick_stopped:
            predicted = res_ns[idx]
            break
        if res_ns[idx] < tick_ns and res_ns[i] <= delta_tick:
            idx = i
        return idx, True

    if idx == -1:
        idx = 0
    stop_tick = True
    if ((idx == 0 and is_poll0) or predicted < tick_ns) and not tick_stopped:
        stop_tick = False
        if idx > 0 and res_ns[idx] > delta_tick:
            for i in range(idx - 1, -1, -1):
                if not enabled[i]:
                    continue
                idx = i
                if res_ns[i] <= delta_tick:
                    break
    return idx, stop_tick


# ----------------------------------------------------------------------------------------------- teo


@compiled(inline=True)
def _teo_decay(v: int) -> int:
    d = v >> DECAY_SHIFT
    if d:
        return v - d
    return 0


@compiled(inline=True)
def _teo_update(g: np.ndarray, c: int, res_ns: np.ndarray, exit_ns: np.ndarray, tick_ns: int) -> None:
    n = res_ns.shape[0]
    hits = _col_hits(n)
    inter = _col_intercepts(n)
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
def _teo_find_shallower(res_ns: np.ndarray, enabled: np.ndarray, state_idx: int, duration_ns: int) -> int:
    for i in range(state_idx - 1, -1, -1):
        if not enabled[i]:
            continue
        state_idx = i
        if res_ns[i] <= duration_ns:
            break
    return state_idx


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
    hits = _col_hits(n)
    inter = _col_intercepts(n)
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
            idx = _teo_find_shallower(res_ns, enabled, idx, duration_ns)
        total = g[c, G_T_TOTAL]
        if res_ns[idx] < tick_ns and g[c, G_T_TICK_INTERCEPTS] > total // 2 + total // 8:
            duration_ns = tick_ns // 2

    if (not (idx == 0 and is_poll0) and duration_ns >= tick_ns) or tick_stopped:
        return idx, True
    if idx > idx0 and res_ns[idx] > delta_tick:
        idx = _teo_find_shallower(res_ns, enabled, idx, delta_tick)
    return idx, False


# -------------------------------------------------------------------------------------------- ladder


@compiled(inline=True)
def _ladder_do_selection(g: np.ndarray, c: int, n: int, old_idx: int, new_idx: int) -> None:
    g[c, _col_promotion(n) + old_idx] = 0
    g[c, _col_demotion(n) + old_idx] = 0
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
    prom = _col_promotion(n)
    dem = _col_demotion(n)
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


# ------------------------------------------------------------------------------------- oracle, fixed


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
) -> tuple[int, bool]:
    """cpuidle_select(): the state to enter and whether to stop the tick."""
    if gov == GOV_MENU:
        return menu_select(
            g, c, res_ns, exit_ns, enabled, is_poll0, latency_req, sleep_length, delta_tick, tick_stopped,
            tick_ns,
        )
    if gov == GOV_TEO:
        return teo_select(
            g, c, res_ns, exit_ns, enabled, is_poll0, latency_req, sleep_length, delta_tick, tick_stopped,
            tick_ns,
        )
    if gov == GOV_LADDER:
        # ladder_select() leaves stop_tick as cpuidle_idle_call() set it: true (kernel/sched/idle.c).
        return ladder_select(g, c, exit_ns, enabled, is_poll0, latency_req), True
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


@compiled(inline=True)
def note_rejected(g: np.ndarray, c: int) -> None:
    """call_cpuidle() returned -EBUSY (NEED_RESCHED already set, kernel/sched/idle.c): it sets
    last_residency_ns to 0 and cpuidle_reflect() is skipped, so menu pushes UINT_MAX at the next
    select. A driver's refusal would do the same; poll_idle() and intel_idle never refuse."""
    g[c, G_LAST_RES] = 0

"""teo (drivers/cpuidle/governors/teo.c) by kernel release, one function per behaviour that changed.

Two lines of code, chosen by V_TEO_LINE:

- TEO_LINE_V6_6: v6.6 up to 13ed5c4a6d9c: `time_span_ns` against the sleep length to recognise
  timer wake-ups, the sleep length read only when the candidate is not shallow. Within it:
  - V_TEO_RECENT: RECENT_KEPT (the NR_RECENT ring of recent intercepts, v6.6), or
    RECENT_REMOVED (449914398083, "Remove recent intercepts metric", v6.12).
  - V_TEO_STATE0: STATE0_SKIPS_SLEEP_LENGTH (state 0 chosen by the intercepts leaves the sleep
    length at KTIME_MAX, so the next wake-up cannot be a hit on a timer),
    STATE0_READS_SLEEP_LENGTH (4b20b07ce72f, "Don't count non-existent intercepts", v6.12), or
    STATE0_CLAMP_FIRST (92ce5c07b7a1, "Reorder candidate state index checks", v6.14: the latency
    limit is applied first, so state 0 forced by it reads the sleep length too).
  - V_TEO_TICK_METRIC: TICK_METRIC_HITS (`tick_hits`, an extra hits-only bin past the deepest
    state when its target residency is below a tick, and the sum of every bin's intercepts
    against the total to keep the tick), or TICK_METRIC_INTERCEPTS (d619b5cc6780, "Simplify
    counting events used for tick management", v6.14: `tick_intercepts` instead).
- TEO_LINE_V6_14: from 13ed5c4a6d9c ("Skip getting the sleep length if wakeups are very
  frequent", v6.14: `short_idles`; a safety net's wake-up, not `time_span_ns`, skips the measured
  duration) on. Within it:
  - V_TEO_TOTAL: TOTAL_FROM_BINS (`total` the sum of the bins, as before), TOTAL_DECAYS
    (ddcfa7964677, "Simplify handling of total events count", v6.14: `total` decays on its own),
    and TOTAL_FROM_BINS again from b54df61c7428.
  - V_TEO_LOW_LATENCY: LOW_LATENCY_READS_SLEEP_LENGTH, or LOW_LATENCY_SKIPS (16c8d7586c19, "Skip
    sleep length computation for low latency constraints", v6.14: a PM QoS limit under 7.5 us
    skips the sleep length like frequent short idles do).
  - V_TEO_SHALLOWER: SHALLOWER_IF_STATE_OK (the state found below a close timer is taken only
    if deep enough for a stopped tick), or SHALLOWER_ALWAYS (a03b2011808a, "Drop misguided target
    residency check", v6.19). The v6.6 line has the check too.
  - V_TEO_DECAY: DECAY_SHIFT_ONLY (`x -= x >> 3`, values below 8 never decay), or DECAY_TO_ZERO
    (b54df61c7428, "Decay metrics below DECAY_SHIFT threshold", v6.19: below 8 a metric becomes
    0; the same commit makes `total` the sum of the bins again).
  - V_TEO_TICK_WAKEUP: TICK_WAKEUP_SAFETY_NET (a tick wake-up with the sleep length beyond a
    tick counts as a long sleep), TICK_WAKEUP_DOMINANT_HITS (083654ded547, "Rework the handling
    of tick wakeups", v6.19: tick wake-ups counted in `total_tick`; when they dominate, a hit on
    the deepest state), TICK_WAKEUP_NO_FAKE_INTERCEPTS (60836533b4c7, "Avoid fake intercepts
    produced by tick", v7.0-rc1: else a hit on the timer's bin unless tick-range intercepts are
    at least twice as frequent as other events).
  - V_TEO_TICK_INTERCEPTS: TICK_INTERCEPTS_ABOVE_TICK (v6.14 counts intercepts with the measured
    idle duration at or above a tick), or TICK_INTERCEPTS_WITHIN_TICK (50db438231dc, "Fix
    tick_intercepts handling in teo_update()", v6.19).
  - V_TEO_LOOKUP, the walk down from the candidate when intercepts dominate: LOOKUP_FIRST_SUITABLE
    (v6.6 to v6.18), LOOKUP_MIN_IDX (d834e68a0e8b, "Simplify intercepts-based state lookup",
    v6.19), LOOKUP_SKIP_EQUAL_RESIDENCY (4bd2221f231d, "Avoid selecting states with zero-size
    bins", v7.0-rc1), LOOKUP_MAX_INTERCEPTS (a971f984b845, "Refine intercepts-based idle state
    lookup", v7.0-rc1: the walk starts no deeper than the bin with the most intercepts).
  - V_TEO_KEEP_TICK: KEEP_TICK_5_8 (`tick_intercepts > total / 2 + total / 8` keeps the tick),
    or KEEP_TICK_2_3 (475ca3470b37, "Refine tick_intercepts vs total events check", v7.0-rc1).
  - V_TEO_HIT: HIT_SAME_BIN, or HIT_AFTER_TIMER (f36de72673ad, "Adjust the classification of
    wakeup events", v7.0-rc1: a hit also needs the wake-up after the timer, `sleep_length -
    measured < exit_latency / 2`).

The other commits of the v6.14 series change nothing teo computes and share their predecessor's
code: 425b75364576 (the lookup loop rearranged), ea185406d1ed (two checks against 0 combined),
b9a6af26bd83 (`prev_intercept_idx` is never 0 where it is tested), e24f8a55de50 (comments),
65e18e654475 (`time_span_ns` replaced with the flag `artificial_wakeup`).

Not modelled: util-awareness (9ce0f7c4bc64, reverted in v6.12) selects differently only on a CPU
whose utilisation is above its threshold; the model has no utilisation, so a CPU going idle is
taken as not utilised, where that code does nothing. `time_span_ns` (v6.6 line) is the stay from
entry to return, `last_residency_ns`: the governor's own time is not modelled.
"""

from __future__ import annotations

import numpy as np

from engine.governors.common import (
    DECAY_SHIFT,
    G_LAST_IDX,
    G_LAST_RES,
    G_POLL_LIMIT,
    G_T_NEXT_RECENT,
    G_T_PENDING,
    G_T_RECENT_IDX,
    G_T_SHORT_IDLES,
    G_T_SLEEP_LENGTH,
    G_T_TICK_HITS,
    G_T_TICK_INTERCEPTS,
    G_T_TOTAL,
    G_T_TOTAL_TICK,
    G_TICK_WAKEUP,
    INF,
    LATENCY_THRESHOLD_NS,
    NR_RECENT,
    PULSE,
    RESIDENCY_THRESHOLD_NS,
    V_BITS,
    V_TEO_DECAY,
    V_TEO_HIT,
    V_TEO_KEEP_TICK,
    V_TEO_LINE,
    V_TEO_LOOKUP,
    V_TEO_LOW_LATENCY,
    V_TEO_RECENT,
    V_TEO_SHALLOWER,
    V_TEO_STATE0,
    V_TEO_TICK_INTERCEPTS,
    V_TEO_TICK_METRIC,
    V_TEO_TICK_WAKEUP,
    V_TEO_TOTAL,
    col_hits,
    col_intercepts,
    col_recent,
    find_shallower,
    variant_field,
)
from engine.jit import compiled

TEO_LINE_V6_6, TEO_LINE_V6_14 = range(2)
RECENT_KEPT, RECENT_REMOVED = range(2)
STATE0_SKIPS_SLEEP_LENGTH, STATE0_READS_SLEEP_LENGTH, STATE0_CLAMP_FIRST = range(3)
TICK_METRIC_HITS, TICK_METRIC_INTERCEPTS = range(2)
TOTAL_FROM_BINS, TOTAL_DECAYS = range(2)
LOW_LATENCY_READS_SLEEP_LENGTH, LOW_LATENCY_SKIPS = range(2)
SHALLOWER_IF_STATE_OK, SHALLOWER_ALWAYS = range(2)
DECAY_SHIFT_ONLY, DECAY_TO_ZERO = range(2)
TICK_WAKEUP_SAFETY_NET, TICK_WAKEUP_DOMINANT_HITS, TICK_WAKEUP_NO_FAKE_INTERCEPTS = range(3)
TICK_INTERCEPTS_ABOVE_TICK, TICK_INTERCEPTS_WITHIN_TICK = range(2)
LOOKUP_FIRST_SUITABLE, LOOKUP_MIN_IDX, LOOKUP_SKIP_EQUAL_RESIDENCY, LOOKUP_MAX_INTERCEPTS = range(4)
KEEP_TICK_5_8, KEEP_TICK_2_3 = range(2)
HIT_SAME_BIN, HIT_AFTER_TIMER = range(2)

U32 = 1 << 32
# teo.c as v6.19 has it (d834e68a0e8b): the codes teo_select() runs when given no release.
V6_19_TEO = sum(code << (V_BITS * f) for f, code in (
    (V_TEO_LINE, TEO_LINE_V6_14), (V_TEO_RECENT, RECENT_REMOVED), (V_TEO_STATE0, STATE0_READS_SLEEP_LENGTH),
    (V_TEO_SHALLOWER, SHALLOWER_ALWAYS), (V_TEO_DECAY, DECAY_TO_ZERO),
    (V_TEO_TICK_WAKEUP, TICK_WAKEUP_DOMINANT_HITS), (V_TEO_TICK_INTERCEPTS, TICK_INTERCEPTS_WITHIN_TICK),
    (V_TEO_LOOKUP, LOOKUP_MIN_IDX), (V_TEO_TICK_METRIC, TICK_METRIC_INTERCEPTS),
    (V_TEO_TOTAL, TOTAL_FROM_BINS), (V_TEO_LOW_LATENCY, LOW_LATENCY_SKIPS),
))


# ---------------------------------------------------------------------------------- shared pieces


@compiled(inline=True)
def _decay(v: int, decay: int) -> int:
    """`v -= v >> DECAY_SHIFT`; teo_decay() (b54df61c7428) also clears what that leaves below 8."""
    d = v >> DECAY_SHIFT
    if d or decay == DECAY_SHIFT_ONLY:
        return v - d
    return 0


@compiled(inline=True)
def _state_ok(res_ns: np.ndarray, i: int, tick_stopped: bool, tick_ns: int) -> bool:
    """teo_state_ok(): with the tick stopped, only states whose residency reaches a tick."""
    return not tick_stopped or res_ns[i] >= tick_ns


@compiled(inline=True)
def _u32(x: int) -> int:
    return x + U32 if x < 0 else x  # an `unsigned int` difference in teo.c


@compiled(inline=True)
def _lookup_first_suitable(
    g: np.ndarray, c: int, res_ns: np.ndarray, enabled: np.ndarray, idx: int, tick_stopped: bool,
    tick_ns: int, alt_intercepts: bool, idx_intercept_sum: int, alt_recent: bool, idx_recent_sum: int,
) -> int:
    """The walk down from the candidate up to v6.18: the deepest state whose residency the idle
    duration reached in over half the intercepts (and of the recent ones, where they count),
    the first deep-enough enabled state on the way where that one is too shallow or disabled."""
    n = res_ns.shape[0]
    inter = col_intercepts(n)
    recent = col_recent(n)
    first_suitable = idx
    intercept_sum = 0
    recent_sum = 0
    for i in range(idx - 1, -1, -1):
        intercept_sum += g[c, inter + i]
        recent_sum += g[c, recent + i]
        if (not alt_recent or 2 * recent_sum > idx_recent_sum) and (
            not alt_intercepts or 2 * intercept_sum > idx_intercept_sum
        ):
            if _state_ok(res_ns, i, tick_stopped, tick_ns) and enabled[i]:
                return i
            return first_suitable
        if not enabled[i]:
            continue
        if not _state_ok(res_ns, i, tick_stopped, tick_ns):
            if first_suitable != idx:
                continue
            break
        first_suitable = i
    return idx


@compiled(inline=True)
def _lookup_min_idx(
    g: np.ndarray, c: int, res_ns: np.ndarray, enabled: np.ndarray, idx: int, idx0: int,
    tick_stopped: bool, tick_ns: int, idx_intercept_sum: int, lookup: int, intercept_max_idx: int,
) -> int:
    """The walk from d834e68a0e8b on: enabled states down to the shallowest one a stopped tick
    allows; 4bd2221f231d keeps the candidate when that one has the same residency; a971f984b845
    goes no deeper than the bin with the most intercepts."""
    inter = col_intercepts(res_ns.shape[0])
    min_idx = idx0
    if tick_stopped:
        while min_idx < idx and res_ns[min_idx] < tick_ns:
            min_idx += 1
        if lookup != LOOKUP_MIN_IDX and res_ns[min_idx] == res_ns[idx]:
            return idx
    by_max = lookup == LOOKUP_MAX_INTERCEPTS
    if by_max and min_idx >= intercept_max_idx and enabled[min_idx]:
        return min_idx
    intercept_sum = 0
    for i in range(idx - 1, min_idx - 1, -1):
        intercept_sum += g[c, inter + i]
        if not enabled[i]:
            continue
        idx = i
        if 2 * intercept_sum > idx_intercept_sum and (not by_max or i <= intercept_max_idx):
            break
    return idx


@compiled(inline=True)
def _finish(
    res_ns: np.ndarray, enabled: np.ndarray, is_poll0: bool, idx: int, idx0: int, duration_ns: int,
    delta_tick: int, tick_stopped: bool, tick_ns: int,
) -> tuple[int, bool]:
    """The common end (`end:` in teo_select()): stop the tick unless the state polls or the
    expected idle duration is under a tick; else keep the state within the time to the tick."""
    if (not (idx == 0 and is_poll0) and duration_ns >= tick_ns) or tick_stopped:
        return idx, True
    if idx > idx0 and res_ns[idx] > delta_tick:
        idx = find_shallower(res_ns, enabled, idx, delta_tick)
    return idx, False


@compiled(inline=True)
def _measured_ns(g: np.ndarray, c: int, exit_ns: np.ndarray) -> int:
    """last_residency_ns less half the exit latency (or halved when shorter than it)."""
    lat = exit_ns[g[c, G_LAST_IDX]]
    measured = g[c, G_LAST_RES]
    if measured >= lat:
        return measured - lat // 2
    return measured // 2


# ---------------------------------------------------------------------------- the v6.6 line


@compiled(inline=True)
def _update_v6_6(g: np.ndarray, c: int, res_ns: np.ndarray, exit_ns: np.ndarray, tick_ns: int,
                 recent_kept: bool, tick_metric: int) -> None:
    """teo_update() of v6.6 (RECENT_KEPT), v6.12 and v6.14's first six commits, after
    teo_reflect()'s `time_span_ns`; `tick_intercepts` instead of `tick_hits` from d619b5cc6780."""
    n = res_ns.shape[0]
    hits, inter, recent = col_hits(n), col_intercepts(n), col_recent(n)
    sleep_length = g[c, G_T_SLEEP_LENGTH]
    # teo_reflect(): a POLL time-out, or a tick with the sleep length beyond it, is a safety net.
    time_span = g[c, G_LAST_RES]
    if g[c, G_POLL_LIMIT] != 0 or (g[c, G_TICK_WAKEUP] != 0 and sleep_length > tick_ns):
        time_span = sleep_length
    measured = INF if time_span >= sleep_length else _measured_ns(g, c, exit_ns)
    total = 0
    idx_timer = 0
    idx_duration = 0
    for i in range(n):
        g[c, hits + i] -= g[c, hits + i] >> DECAY_SHIFT
        g[c, inter + i] -= g[c, inter + i] >> DECAY_SHIFT
        total += g[c, hits + i] + g[c, inter + i]
        if res_ns[i] <= sleep_length:
            idx_timer = i
            if res_ns[i] <= measured:
                idx_duration = i
    slot = 0
    if recent_kept:
        slot = g[c, G_T_NEXT_RECENT]
        g[c, G_T_NEXT_RECENT] = slot + 1 if slot + 1 < NR_RECENT else 0
        old = g[c, G_T_RECENT_IDX + slot]
        if old >= 0:
            g[c, recent + old] = _u32(g[c, recent + old] - 1)  # unsigned: it can wrap
    if tick_metric == TICK_METRIC_INTERCEPTS:
        g[c, G_T_TICK_INTERCEPTS] -= g[c, G_T_TICK_INTERCEPTS] >> DECAY_SHIFT
    elif res_ns[n - 1] < tick_ns:
        g[c, G_T_TICK_HITS] -= g[c, G_T_TICK_HITS] >> DECAY_SHIFT
        total += g[c, G_T_TICK_HITS]
        if tick_ns <= sleep_length:
            idx_timer = n
            if tick_ns <= measured:
                g[c, G_T_TICK_HITS] += PULSE
                g[c, G_T_TOTAL] = total + PULSE
                return  # recent_idx[] keeps its old entry here (the v6.6 underflow)
    if idx_timer == idx_duration:
        g[c, hits + idx_timer] += PULSE
        if recent_kept:
            g[c, G_T_RECENT_IDX + slot] = -1
    else:
        g[c, inter + idx_duration] += PULSE
        if recent_kept:
            g[c, recent + idx_duration] = (g[c, recent + idx_duration] + 1) & (U32 - 1)
            g[c, G_T_RECENT_IDX + slot] = idx_duration
        if tick_metric == TICK_METRIC_INTERCEPTS and tick_ns <= measured:
            g[c, G_T_TICK_INTERCEPTS] += PULSE
    g[c, G_T_TOTAL] = total + PULSE


@compiled(inline=True)
def _select_v6_6(
    g: np.ndarray, c: int, res_ns: np.ndarray, exit_ns: np.ndarray, enabled: np.ndarray, is_poll0: bool,
    latency_req: int, sleep_length: int, delta_tick_in: int, tick_stopped: bool, tick_ns: int,
    variant: int,
) -> tuple[int, bool]:
    """teo_select() of v6.6 to v6.13 and v6.14's first six commits (util-awareness idle: see the
    module's note)."""
    n = res_ns.shape[0]
    hits, inter, recent = col_hits(n), col_intercepts(n), col_recent(n)
    recent_kept = variant_field(variant, V_TEO_RECENT) == RECENT_KEPT
    tick_metric = variant_field(variant, V_TEO_TICK_METRIC)
    state0 = variant_field(variant, V_TEO_STATE0)
    if g[c, G_T_PENDING] != 0:
        _update_v6_6(g, c, res_ns, exit_ns, tick_ns, recent_kept, tick_metric)
        g[c, G_T_PENDING] = 0
    delta_tick = tick_ns // 2
    g[c, G_T_SLEEP_LENGTH] = INF
    if n < 2:
        return 0, False
    idx = 0 if enabled[0] else -1
    idx0 = 0
    intercept_sum = hit_sum = recent_sum = 0
    idx_intercept_sum = idx_hit_sum = idx_recent_sum = 0
    constraint_idx = 0
    for i in range(1, n):
        intercept_sum += g[c, inter + i - 1]
        hit_sum += g[c, hits + i - 1]
        recent_sum += g[c, recent + i - 1]
        if not enabled[i]:
            continue
        if idx < 0:
            idx0 = i
        idx = i
        if exit_ns[i] <= latency_req:
            constraint_idx = i
        idx_intercept_sum = intercept_sum
        idx_hit_sum = hit_sum
        idx_recent_sum = recent_sum
    if idx < 0:
        return 0, False
    if idx == idx0:
        return _finish(res_ns, enabled, is_poll0, idx, idx0, res_ns[idx], delta_tick, tick_stopped, tick_ns)
    if tick_metric == TICK_METRIC_INTERCEPTS:
        tick_intercept_sum = g[c, G_T_TICK_INTERCEPTS]
    else:
        tick_intercept_sum = intercept_sum + g[c, inter + n - 1]
    prev_intercept_idx = idx
    alt_intercepts = 2 * idx_intercept_sum > _u32(g[c, G_T_TOTAL] - idx_hit_sum)
    alt_recent = recent_kept and idx_recent_sum > NR_RECENT // 2
    if alt_recent or alt_intercepts:
        idx = _lookup_first_suitable(
            g, c, res_ns, enabled, idx, tick_stopped, tick_ns, alt_intercepts, idx_intercept_sum,
            alt_recent, idx_recent_sum,
        )
    if state0 == STATE0_CLAMP_FIRST and idx > constraint_idx:
        idx = constraint_idx  # 92ce5c07b7a1: the latency limit first
    if idx == 0 and prev_intercept_idx != 0 and state0 != STATE0_SKIPS_SLEEP_LENGTH:
        g[c, G_T_SLEEP_LENGTH] = sleep_length  # 4b20b07ce72f: know whether the guess was right
        return 0, False
    if idx > constraint_idx:
        idx = constraint_idx
    if idx == 0:
        return 0, False
    if is_poll0 and res_ns[idx] < RESIDENCY_THRESHOLD_NS:
        return idx, False
    duration_ns = sleep_length
    g[c, G_T_SLEEP_LENGTH] = duration_ns
    idx = _shallower_for_timer(res_ns, enabled, idx, duration_ns, tick_stopped, tick_ns, variant)
    total = g[c, G_T_TOTAL]
    if res_ns[idx] < tick_ns and tick_intercept_sum > total // 2 + total // 8:
        duration_ns = tick_ns // 2
    return _finish(res_ns, enabled, is_poll0, idx, idx0, duration_ns, delta_tick_in, tick_stopped, tick_ns)


@compiled(inline=True)
def _shallower_for_timer(
    res_ns: np.ndarray, enabled: np.ndarray, idx: int, duration_ns: int, tick_stopped: bool, tick_ns: int,
    variant: int,
) -> int:
    """A timer before the candidate's residency: the state that fits it (a03b2011808a dropped
    the check that it is deep enough for a stopped tick)."""
    if res_ns[idx] <= duration_ns:
        return idx
    i = find_shallower(res_ns, enabled, idx, duration_ns)
    if variant_field(variant, V_TEO_SHALLOWER) == SHALLOWER_ALWAYS:
        return i
    if _state_ok(res_ns, i, tick_stopped, tick_ns):
        return i
    return idx


# --------------------------------------------------------------------------- the v6.14 line


@compiled(inline=True)
def _update(
    g: np.ndarray, c: int, res_ns: np.ndarray, exit_ns: np.ndarray, tick_ns: int, variant: int
) -> None:
    """teo_update() from 13ed5c4a6d9c (v6.14) on."""
    n = res_ns.shape[0]
    hits = col_hits(n)
    inter = col_intercepts(n)
    decay = variant_field(variant, V_TEO_DECAY)
    tick_wakeup = variant_field(variant, V_TEO_TICK_WAKEUP)
    sleep_length = g[c, G_T_SLEEP_LENGTH]
    lat = exit_ns[g[c, G_LAST_IDX]]
    g[c, G_T_SHORT_IDLES] = _decay(g[c, G_T_SHORT_IDLES], decay)
    if tick_wakeup == TICK_WAKEUP_SAFETY_NET:
        artificial = g[c, G_POLL_LIMIT] != 0 or (g[c, G_TICK_WAKEUP] != 0 and sleep_length > tick_ns)
    else:
        artificial = g[c, G_POLL_LIMIT] != 0  # 083654ded547: only a POLL time-out
    g[c, G_POLL_LIMIT] = 0
    if artificial:
        measured = INF
    elif g[c, G_LAST_RES] >= lat:
        measured = g[c, G_LAST_RES] - lat // 2
        if measured < RESIDENCY_THRESHOLD_NS:
            g[c, G_T_SHORT_IDLES] += PULSE
    else:
        measured = g[c, G_LAST_RES] // 2
        g[c, G_T_SHORT_IDLES] += PULSE  # shorter than the exit latency: short, however long
    total = 0
    idx_timer = 0
    idx_duration = 0
    for i in range(n):
        g[c, hits + i] = _decay(g[c, hits + i], decay)
        total += g[c, hits + i]
        g[c, inter + i] = _decay(g[c, inter + i], decay)
        total += g[c, inter + i]
        if res_ns[i] <= sleep_length:
            idx_timer = i
            if res_ns[i] <= measured:
                idx_duration = i
    if variant_field(variant, V_TEO_TOTAL) == TOTAL_FROM_BINS:
        g[c, G_T_TOTAL] = total + PULSE
    else:
        g[c, G_T_TOTAL] += PULSE - (g[c, G_T_TOTAL] >> DECAY_SHIFT)  # decays on its own
    g[c, G_T_TICK_INTERCEPTS] = _decay(g[c, G_T_TICK_INTERCEPTS], decay)
    if tick_wakeup != TICK_WAKEUP_SAFETY_NET:
        g[c, G_T_TOTAL_TICK] = _decay(g[c, G_T_TOTAL_TICK], decay)
        if g[c, G_TICK_WAKEUP] != 0:
            g[c, G_T_TOTAL_TICK] += PULSE
            if 3 * g[c, G_T_TOTAL_TICK] > 2 * g[c, G_T_TOTAL]:
                g[c, hits + n - 1] += PULSE  # tick wake-ups dominate: a hit on the deepest state
                return
            if tick_wakeup == TICK_WAKEUP_NO_FAKE_INTERCEPTS and 3 * g[c, G_T_TICK_INTERCEPTS] < 2 * total:
                g[c, hits + idx_timer] += PULSE
                return
    hit = idx_timer == idx_duration
    if hit and variant_field(variant, V_TEO_HIT) == HIT_AFTER_TIMER:
        hit = sleep_length - measured < lat // 2
    if hit:
        g[c, hits + idx_timer] += PULSE
    else:
        g[c, inter + idx_duration] += PULSE
        if variant_field(variant, V_TEO_TICK_INTERCEPTS) == TICK_INTERCEPTS_WITHIN_TICK:
            if measured <= tick_ns:
                g[c, G_T_TICK_INTERCEPTS] += PULSE
        elif tick_ns <= measured:
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
    variant: int = V6_19_TEO,
) -> tuple[int, bool]:
    """teo_select() of the release `variant` names (its teo fields); teo_update() first when due."""
    if variant_field(variant, V_TEO_LINE) == TEO_LINE_V6_6:
        return _select_v6_6(
            g, c, res_ns, exit_ns, enabled, is_poll0, latency_req, sleep_length, delta_tick_in, tick_stopped,
            tick_ns, variant,
        )
    n = res_ns.shape[0]
    hits = col_hits(n)
    inter = col_intercepts(n)
    lookup = variant_field(variant, V_TEO_LOOKUP)
    if g[c, G_T_PENDING] != 0:
        _update(g, c, res_ns, exit_ns, tick_ns, variant)
        g[c, G_T_PENDING] = 0
    delta_tick = tick_ns // 2
    g[c, G_T_SLEEP_LENGTH] = INF
    if n < 2:
        return 0, False
    idx = 0 if enabled[0] else -1
    idx0 = 0
    intercept_sum = hit_sum = idx_intercept_sum = idx_hit_sum = 0
    intercept_max = 0
    intercept_max_idx = -1
    constraint_idx = 0
    for i in range(1, n):
        prev_intercepts = g[c, inter + i - 1]
        intercept_sum += prev_intercepts
        hit_sum += g[c, hits + i - 1]
        if prev_intercepts >= intercept_max:
            intercept_max = prev_intercepts
            intercept_max_idx = i - 1
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
    if idx == idx0:
        return _finish(res_ns, enabled, is_poll0, idx, idx0, res_ns[idx], delta_tick, tick_stopped, tick_ns)
    if 2 * idx_intercept_sum > _u32(g[c, G_T_TOTAL] - idx_hit_sum):
        if lookup == LOOKUP_FIRST_SUITABLE:
            idx = _lookup_first_suitable(
                g, c, res_ns, enabled, idx, tick_stopped, tick_ns, True, idx_intercept_sum, False, 0
            )
        else:
            idx = _lookup_min_idx(
                g, c, res_ns, enabled, idx, idx0, tick_stopped, tick_ns, idx_intercept_sum, lookup,
                intercept_max_idx,
            )
    if idx > constraint_idx:
        idx = constraint_idx
    # Short idle periods dominate (13ed5c4a6d9c), or the latency limit is low (16c8d7586c19): no
    # sleep length.
    low_latency = (
        variant_field(variant, V_TEO_LOW_LATENCY) == LOW_LATENCY_SKIPS and latency_req < LATENCY_THRESHOLD_NS
    )
    if (idx == 0 or res_ns[idx] < RESIDENCY_THRESHOLD_NS) and (
        2 * g[c, G_T_SHORT_IDLES] >= g[c, G_T_TOTAL] or low_latency
    ):
        return idx, False
    duration_ns = sleep_length
    g[c, G_T_SLEEP_LENGTH] = duration_ns
    if idx == 0:
        return idx, False
    idx = _shallower_for_timer(res_ns, enabled, idx, duration_ns, tick_stopped, tick_ns, variant)
    total = g[c, G_T_TOTAL]
    ti = g[c, G_T_TICK_INTERCEPTS]
    if variant_field(variant, V_TEO_KEEP_TICK) == KEEP_TICK_2_3:
        keep_tick = 3 * ti >= 2 * total
    else:
        keep_tick = ti > total // 2 + total // 8
    if res_ns[idx] < tick_ns and keep_tick:
        duration_ns = tick_ns // 2
    return _finish(res_ns, enabled, is_poll0, idx, idx0, duration_ns, delta_tick_in, tick_stopped, tick_ns)

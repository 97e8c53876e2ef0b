"""menu (drivers/cpuidle/governors/menu.c), one function per behaviour that changed across releases.

The behaviours, each chosen by a small code that `engine.governors.releases` sets per kernel:

- `get_typical_interval()`:
  - TYPICAL_UPSIDE: two passes (average, then the squared differences from it), only outliers
    above dropped (`thresh = max - 1`, values above INT_MAX never counted): v6.6 to v6.14.
  - TYPICAL_UPSIDE_KEEP_MAX: the same with 85975daeaa4d ("Avoid discarding useful information")
    as 6.1.y and 6.6.y took it (AUTOSEL, May 2025): with 4 to 6 samples left, the maximum.
  - TYPICAL_BOTH_ENDS_KEEP_MAX: v6.15 to v6.17: the February 2025 series ("Use one loop for
    average and variance computations", "Tweak threshold use", "Eliminate outliers on both ends
    of the sample set", then 85975daeaa4d): one pass, E[x^2] - avg^2, min and max thresholds.
  - TYPICAL_BOTH_ENDS: after the revert of 85975daeaa4d (10fad4012234, v6.18).
- The selection loop and its POLL rule:
  - POLL_RULE_LATENCY_CLAMP: the latency limit clamped to the prediction while the tick runs
    (`interactivity_req`, or `latency_req = predicted_ns` after 38f83090f515), the exit
    latency checked after the residency, POLL replaced when `exit <= latency_req` and the
    state's residency is not after the next timer: up to v6.16.
  - POLL_RULE_LATENCY_FIRST: 779b1a1cb13a (6.17-rc3): the latency check first, the clamp gone.
  - POLL_RULE_EXIT_IN_PREDICTION: db86f55bf81a (6.18-rc): and `exit_latency_ns <= predicted_ns`.
  - POLL_RULE_RESIDENCY_THRESHOLD: 07d815701274 on db86f55bf81a (v6.19): and the state's
    residency below RESIDENCY_THRESHOLD_NS.
- The timer and a stopped tick:
  - STOPPED_TICK_SHORT_SKIPS_TIMER: the timer is read only when the typical interval is above
    RESIDENCY_THRESHOLD_NS (5484e31bbbff, v6.6); with the tick stopped a prediction under a
    tick becomes the next timer, KTIME_MAX when it was not read.
  - STOPPED_TICK_NOHZ_FULL_KEPT: 7bcc8bbeca35 ("Special-case nohz_full CPUs"): that
    replacement skipped on `nohz_full` CPUs.
  - STOPPED_TICK_READS_TIMER: 80606f4eb8d7 ("Always check timers with tick stopped"): the timer
    is read whenever the tick is stopped, and the replacement happens only there.
- After an entry the driver refused (-EBUSY, `last_residency_ns` 0, no reflect):
  - REJECTED_NOTHING: nothing is recorded: before fa3fa55de0d6.
  - REJECTED_PUSHES_UINT_MAX: fa3fa55de0d6 (6.17-rc2): UINT_MAX pushed into the intervals.

Without iowait in the model (`nr_iowait_cpu()` is 0), the iowait influence removed by
38f83090f515 (v6.13; b39b62075ab4 in 6.12.y) changes nothing: `which_bucket()` adds no offset and
`performance_multiplier()` is 1, so its clamp is `latency_req = predicted_ns`, as after it.
"""

from __future__ import annotations

import numpy as np

from engine.governors.common import (
    BUCKETS,
    DECAY,
    G_LAST_IDX,
    G_LAST_RES,
    G_M_BUCKET,
    G_M_CF,
    G_M_INTERVALS,
    G_M_NEXT_TIMER,
    G_M_PTR,
    G_M_SORTED,
    G_NEEDS_UPDATE,
    G_POLL_LIMIT,
    G_TICK_WAKEUP,
    INF,
    INT_MAX,
    INTERVALS,
    KTIME_MAX_US_U32,
    MAX_INTERESTING,
    RESIDENCY_THRESHOLD_NS,
    RESOLUTION,
    UINT_MAX,
    find_shallower,
)
from engine.jit import compiled

TYPICAL_UPSIDE, TYPICAL_UPSIDE_KEEP_MAX, TYPICAL_BOTH_ENDS_KEEP_MAX, TYPICAL_BOTH_ENDS = range(4)
(
    POLL_RULE_LATENCY_CLAMP,
    POLL_RULE_LATENCY_FIRST,
    POLL_RULE_EXIT_IN_PREDICTION,
    POLL_RULE_RESIDENCY_THRESHOLD,
) = range(4)
STOPPED_TICK_SHORT_SKIPS_TIMER, STOPPED_TICK_NOHZ_FULL_KEPT, STOPPED_TICK_READS_TIMER = range(3)
REJECTED_NOTHING, REJECTED_PUSHES_UINT_MAX = range(2)

# Sorted-window arithmetic stays exact in int64 below this (8 squares of 2**26 fit).
_NARROW = 1 << 26
_U64_MAX_DIV_36 = (2**64 - 1) // 36


@compiled(inline=True)
def update_intervals(g: np.ndarray, c: int, interval_us: int) -> None:
    """menu_update_intervals(): push an interval into CPU c's ring of 8, and into its sorted copy
    (G_M_SORTED; both start as zeros).

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
def surely_irregular(g: np.ndarray, c: int) -> bool:
    """True when no pass of get_typical_interval() can accept the sorted window: a shortcut.

    With 8 distinct values below 2**26, each pass drops one value, so the passes look at runs
    of 8, 7 and 6 consecutive sorted values (six runs in all; the upside-only variants look at
    three of them). For a run of d values with range R and maximum M, the kernel's integer
    variance is more than R^2 / (2d) - 1 in both ways of computing it (the two extremes alone
    put R^2 / 2 into the sum of squares about the mean, which the differences from a floored
    average only increase, and flooring takes less than 1) and its average is at most M. So the
    run is rejected when R^2 > 802 d (variance > 400) and d M^2 <= 18 R^2 - 36 d (average^2 <= 36
    variance). Irregular windows, the common case, return here without the passes' divisions.
    """
    v = G_M_SORTED
    if g[c, v + INTERVALS - 1] >= _NARROW:
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


@compiled()
def typical_interval_on_ring(g: np.ndarray, c: int, typical: int) -> int:
    """get_typical_interval() transcribed on the ring itself, in the kernel's u64 arithmetic
    (wrapping included): the exact path for windows holding values of 2**26 us and more, such
    as ktime_to_us(KTIME_MAX) as an `unsigned int` (2,783,138,807), which the both-ends variants
    count (below their UINT_MAX threshold) and whose squares overflow."""
    u = np.uint64
    both_ends = typical == TYPICAL_BOTH_ENDS or typical == TYPICAL_BOTH_ENDS_KEEP_MAX
    keep_max = typical == TYPICAL_UPSIDE_KEEP_MAX or typical == TYPICAL_BOTH_ENDS_KEEP_MAX
    min_thresh = -1
    max_thresh = UINT_MAX if both_ends else INT_MAX + 1  # upside: `value <= thresh` counts
    while True:
        mx = 0
        mn = UINT_MAX
        total = u(0)
        squares = u(0)
        divisor = 0
        for i in range(INTERVALS):
            value = g[c, G_M_INTERVALS + i]
            if value <= min_thresh or value >= max_thresh:
                continue
            divisor += 1
            total += u(value)
            squares += u(value) * u(value)
            mx = max(mx, value)
            mn = min(mn, value)
        if mx == 0:
            return UINT_MAX
        if divisor == INTERVALS:
            avg = total >> u(3)
        else:
            avg = total // u(divisor)
        if both_ends:
            variance = squares >> u(3) if divisor == INTERVALS else squares // u(divisor)
            variance = variance - avg * avg
        else:
            variance = u(0)
            for i in range(INTERVALS):
                value = g[c, G_M_INTERVALS + i]
                if value < max_thresh:
                    diff = u(value) - avg  # (int64_t)value - avg, squared: the same bits
                    variance += diff * diff
            variance = variance >> u(3) if divisor == INTERVALS else variance // u(divisor)
        if variance <= u(_U64_MAX_DIV_36):
            if (avg * avg > variance * u(36) and divisor * 4 >= INTERVALS * 3) or variance <= u(400):
                # avg is below 2**32: as int64, so that the function returns int64 (numba unifies
                # uint64 with int64 as float64, and the selection then compared floats).
                return np.int64(avg)
        if divisor * 4 <= INTERVALS * 3:
            if keep_max and divisor >= INTERVALS // 2:
                return mx
            return UINT_MAX
        a = int(avg)
        if both_ends and a - mn > mx - a:
            min_thresh = mn
        else:
            max_thresh = mx  # upside: thresh = max - 1, `value <= thresh`


@compiled(inline=True)
def typical_interval(g: np.ndarray, c: int, typical: int) -> int:
    """get_typical_interval(): the average of the recent intervals if they are steady, else
    UINT_MAX (us); with 85975daeaa4d, the maximum of the 4 to 6 samples left.

    The kernel rescans the 8 intervals once per pass, keeping those strictly between a lower and
    an upper threshold that each pass may tighten to the current min or max. Both thresholds
    are values of the window, so every pass keeps a contiguous run [lo, hi) of the sorted
    intervals (kept sorted as they arrive): each pass only subtracts what it drops (tests check
    this against transcriptions of each tree's loop).
    """
    keep_max = typical == TYPICAL_UPSIDE_KEEP_MAX or typical == TYPICAL_BOTH_ENDS_KEEP_MAX
    if not keep_max and surely_irregular(g, c):
        return UINT_MAX
    both_ends = typical == TYPICAL_BOTH_ENDS or typical == TYPICAL_BOTH_ENDS_KEEP_MAX
    v = G_M_SORTED
    lo = 0
    hi = 0
    s = 0
    sq = 0
    for i in range(INTERVALS):
        value = g[c, v + i]
        if value < _NARROW:
            hi += 1
            s += value
            sq += value * value
        elif value < (UINT_MAX if both_ends else INT_MAX + 1):
            return typical_interval_on_ring(g, c, typical)  # counted and wide: exact u64 path
    while True:
        if hi == lo or g[c, v + hi - 1] == 0:
            return UINT_MAX  # max == 0
        mn = g[c, v + lo]
        mx = g[c, v + hi - 1]
        divisor = hi - lo
        avg = _div_small(s, divisor)
        avg_sq = avg * avg
        if both_ends:
            variance = _div_small(sq, divisor) - avg_sq
        else:
            variance = _div_small(sq - 2 * avg * s + divisor * avg_sq, divisor)
        if (avg_sq > variance * 36 and divisor * 4 >= INTERVALS * 3) or variance <= 400:
            return avg
        if divisor * 4 <= INTERVALS * 3:
            if keep_max and divisor >= INTERVALS // 2:
                return mx
            return UINT_MAX
        if both_ends and avg - mn > mx - avg:
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
def which_bucket(duration_ns: int) -> int:
    """which_bucket(): decades from 10 us (0) to 100 ms and up (5), counted without branches."""
    return (
        int(duration_ns >= 10_000) + int(duration_ns >= 100_000) + int(duration_ns >= 1_000_000)
        + int(duration_ns >= 10_000_000) + int(duration_ns >= 100_000_000)
    )


@compiled(inline=True)
def menu_update(g: np.ndarray, c: int, exit_ns: np.ndarray, is_poll0: bool, tick_ns: int) -> None:
    """menu_update(): learn from the last stay (the same in every release modelled)."""
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
    # ktime_to_us(measured_ns) into an unsigned int: KTIME_MAX (a POLL time-out after menu
    # skipped the timer) becomes 2,783,138,807 us, a value the both-ends passes count.
    update_intervals(g, c, KTIME_MAX_US_U32 if measured >= INF else measured // 1000)


@compiled(inline=True)
def _poll_rule_allows(
    rule: int, res_i: int, exit_i: int, latency_req: int, predicted: int, next_timer: int
) -> bool:
    """Whether state i (not POLL) replaces the POLL state selected so far, in each release."""
    if rule == POLL_RULE_LATENCY_CLAMP:
        return exit_i <= latency_req and res_i <= next_timer
    if rule == POLL_RULE_LATENCY_FIRST:
        return res_i <= next_timer
    if rule == POLL_RULE_EXIT_IN_PREDICTION:
        return res_i <= next_timer and exit_i <= predicted
    return res_i < RESIDENCY_THRESHOLD_NS and res_i <= next_timer and exit_i <= predicted


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
    nohz_full: bool,
    typical: int,
    poll_rule: int,
    stopped_tick: int,
    rejected: int,
) -> tuple[int, bool]:
    """menu_select() of the release whose behaviour codes are given (see the module docstring)."""
    n = res_ns.shape[0]
    if g[c, G_NEEDS_UPDATE] != 0:
        menu_update(g, c, exit_ns, is_poll0, tick_ns)
        g[c, G_NEEDS_UPDATE] = 0
    elif g[c, G_LAST_RES] == 0 and rejected == REJECTED_PUSHES_UINT_MAX:
        update_intervals(g, c, UINT_MAX)

    predicted = typical_interval(g, c, typical) * 1000
    reads_timer = predicted > RESIDENCY_THRESHOLD_NS or (
        tick_stopped and stopped_tick == STOPPED_TICK_READS_TIMER
    )
    if reads_timer:
        next_timer = sleep_length
        delta_tick = delta_tick_in
        b = which_bucket(next_timer)
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

    if tick_stopped:
        replace = predicted < tick_ns
        if stopped_tick == STOPPED_TICK_NOHZ_FULL_KEPT:
            replace = replace and not nohz_full
        elif stopped_tick == STOPPED_TICK_READS_TIMER:
            replace = replace and reads_timer
        if replace:
            predicted = next_timer
    elif poll_rule == POLL_RULE_LATENCY_CLAMP and latency_req > predicted:
        latency_req = predicted
    latency_first = poll_rule != POLL_RULE_LATENCY_CLAMP

    idx = -1
    for i in range(n):
        if not enabled[i]:
            continue
        if idx == -1:
            idx = i
        if latency_first and exit_ns[i] > latency_req:
            break
        if res_ns[i] <= predicted:
            if exit_ns[i] > latency_req:
                break
            idx = i
            continue
        if idx == 0 and is_poll0 and _poll_rule_allows(
            poll_rule, res_ns[i], exit_ns[i], latency_req, predicted, next_timer
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
            idx = find_shallower(res_ns, enabled, idx, delta_tick)
    return idx, stop_tick

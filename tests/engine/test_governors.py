"""Governors, one decision at a time, on hand-made histories (engine/governors/), at the default
release (v6.19); test_governors_releases.py checks each release against its own source.

Every case uses the skx table as cpuidle sees it, in ns:

    state   exit latency   target residency
    POLL          0               0
    C1        2_000           2_000
    C1E      10_000          20_000
    C6      133_000         600_000

HZ is 250, so TICK_NSEC is 4 ms. Each test states the algorithm step (kernel-notes.md 2.2-2.4)
that gives the expected state and stop_tick decision.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.governors import menu as menu_mod
from engine.governors import note_rejected, reflect, releases
from engine.governors.common import (
    BUCKETS,
    G_FIXED_COLS,
    G_LAST_IDX,
    G_LAST_RES,
    G_M_BUCKET,
    G_M_CF,
    G_M_INTERVALS,
    G_M_NEXT_TIMER,
    G_M_PTR,
    G_M_SORTED,
    G_NEEDS_UPDATE,
    G_T_PENDING,
    G_T_SHORT_IDLES,
    G_T_SLEEP_LENGTH,
    G_T_TICK_INTERCEPTS,
    G_T_TOTAL,
    G_T_TOTAL_TICK,
    GOV_FIXED,
    GOV_LADDER,
    GOV_MENU,
    GOV_ORACLE,
    GOV_TEO,
    INF,
    INTERVALS,
    PULSE,
    UINT_MAX,
    init_governor_state,
)
from engine.governors.cpuidle import (
    V_POLL_RULE,
    V_REJECTED,
    V_STOPPED_TICK,
    V_TYPICAL,
    select_state,
    variant_field,
)
from engine.governors.ladder import ladder_select
from engine.governors.teo import teo_select

from .conftest import Table

V619 = releases.resolve("menu", "v6.19").variant
V619_CODES = tuple(variant_field(V619, f) for f in (V_TYPICAL, V_POLL_RULE, V_STOPPED_TICK, V_REJECTED))
_menu_update_intervals = menu_mod.update_intervals
_surely_irregular = menu_mod.surely_irregular


def menu_typical_interval(g: np.ndarray, c: int) -> int:
    return int(menu_mod.typical_interval(g, c, V619_CODES[0]))


def menu_select(*args: object) -> tuple[int, bool]:
    """menu_select() at v6.19, on a CPU that is not nohz_full."""
    return menu_mod.menu_select(*args, False, *V619_CODES)  # type: ignore[no-any-return]

US = 1_000
MS = 1_000_000
TICK_NS = 4 * MS  # HZ=250
POLL, C1, C1E, C6 = 0, 1, 2, 3
N_STATES = 4


def fresh(n_cpus: int = 2) -> np.ndarray:
    """Per-CPU governor data as enable_device() leaves it; first_idx 1 because state 0 is POLL."""
    return init_governor_state(n_cpus, N_STATES, 1)


def hits(i: int) -> int:
    return G_FIXED_COLS + i


def intercepts(i: int) -> int:
    return G_FIXED_COLS + N_STATES + i


def load_intervals(g: np.ndarray, c: int, intervals_us: list[int]) -> None:
    """Set CPU c's window of intervals (the ring and its sorted copy) directly."""
    g[c, G_M_INTERVALS : G_M_INTERVALS + INTERVALS] = intervals_us
    g[c, G_M_SORTED : G_M_SORTED + INTERVALS] = sorted(intervals_us)


def steady_menu(interval_us: int, c: int = 0) -> np.ndarray:
    """menu data after 8 idle periods of `interval_us` each, the last one a normal (non-rejected) entry."""
    g = fresh()
    load_intervals(g, c, [interval_us] * INTERVALS)
    g[c, G_LAST_RES] = interval_us * US  # non-zero: the last entry was not rejected
    return g


def menu(
    g: np.ndarray,
    t: Table,
    *,
    c: int = 0,
    enabled: np.ndarray | None = None,
    latency_req: int = int(INF),
    sleep_length: int = 10 * MS,
    delta_tick: int = 2 * MS,
    tick_stopped: bool = False,
) -> tuple[int, bool]:
    idx, stop = menu_select(
        g,
        c,
        t.res_ns,
        t.exit_ns,
        t.enabled if enabled is None else enabled,
        True,
        latency_req,
        sleep_length,
        delta_tick,
        tick_stopped,
        TICK_NS,
    )
    return int(idx), bool(stop)


def teo(
    g: np.ndarray,
    t: Table,
    *,
    c: int = 0,
    enabled: np.ndarray | None = None,
    latency_req: int = int(INF),
    sleep_length: int = 10 * MS,
    delta_tick: int = 2 * MS,
    tick_stopped: bool = False,
) -> tuple[int, bool]:
    idx, stop = teo_select(
        g,
        c,
        t.res_ns,
        t.exit_ns,
        t.enabled if enabled is None else enabled,
        True,
        latency_req,
        sleep_length,
        delta_tick,
        tick_stopped,
        TICK_NS,
    )
    return int(idx), bool(stop)


def ladder(g: np.ndarray, t: Table, *, enabled: np.ndarray | None = None, latency_req: int = int(INF)) -> int:
    return int(ladder_select(g, 0, t.exit_ns, t.enabled if enabled is None else enabled, True, latency_req))


def select(
    gov: int,
    g: np.ndarray,
    t: Table,
    *,
    enabled: np.ndarray | None = None,
    latency_req: int = int(INF),
    sleep_length: int = 10 * MS,
    delta_tick: int = 2 * MS,
    fixed_idx: int = C1,
    oracle_ns: int = int(INF),
) -> tuple[int, bool]:
    idx, stop = select_state(
        gov,
        V619,
        g,
        0,
        t.res_ns,
        t.exit_ns,
        t.enabled if enabled is None else enabled,
        True,
        latency_req,
        sleep_length,
        delta_tick,
        False,
        TICK_NS,
        fixed_idx,
        oracle_ns,
        False,
    )
    return int(idx), bool(stop)


def typical(intervals_us: list[int]) -> int:
    """get_typical_interval() after the window was pushed in, one interval at a time."""
    g = fresh(1)
    for interval in intervals_us:
        _menu_update_intervals(g, 0, interval)
    return int(menu_typical_interval(g, 0))


# ---------------------------------------------------------------------------------------- fixture


def test_skx_table_as_the_governors_see_it(skx: Table) -> None:
    assert skx.names == ["POLL", "C1", "C1E", "C6"]
    assert skx.res_ns.tolist() == [0, 2_000, 20_000, 600_000]
    assert skx.exit_ns.tolist() == [0, 2_000, 10_000, 133_000]


def test_init_governor_state() -> None:
    g = fresh(3)
    # Correction factors start at RESOLUTION*DECAY (1.0), ladder at first_idx,
    # teo's sleep length at KTIME_MAX.
    assert (g[:, G_M_CF : G_M_CF + BUCKETS] == 8192).all()
    assert (g[:, G_LAST_IDX] == 1).all()
    assert (g[:, G_T_SLEEP_LENGTH] == INF).all()
    assert (g[:, G_M_INTERVALS : G_M_INTERVALS + INTERVALS] == 0).all()


# -------------------------------------------------------------------- menu: get_typical_interval()


def test_typical_interval_steady() -> None:
    # Eight equal intervals: variance 0 <= 400, so the average is accepted.
    assert typical([300] * 8) == 300


def test_typical_interval_rejects_one_outlier() -> None:
    # [300 x7, 5000]: avg 887, variance 2_416_981; 887^2 = 786_769 < 36*variance and variance > 400,
    # so no pattern yet. 8 samples remain (> 6), and the max is farther from the average
    # (5000-887 > 887-300), so 5000 is dropped; the 7 left are 300 with variance 0 -> 300.
    assert typical([300] * 7 + [5000]) == 300


def test_typical_interval_low_outlier_dropped_too() -> None:
    # [2000 x7, 10]: avg 1751; 1751-10 > 2000-1751, so the min side (10) is dropped -> 2000.
    assert typical([2000] * 7 + [10]) == 2000


def test_typical_interval_spread_gives_no_pattern() -> None:
    # 1000..8000 us: the max is dropped twice (avg-min == max-avg, so the max side goes), and
    # with 6 samples left (1000..6000: avg 3500, variance 2_916_667) neither test passes, and
    # 6*4 <= 8*3 ends the search with UINT_MAX ("no pattern").
    assert typical([1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]) == UINT_MAX


def test_typical_interval_small_stddev_accepted_with_few_samples() -> None:
    # [100 x4, 5000 x4]: avg 2550, huge variance; the max side is dropped (ties go to max) and
    # the four 100s have variance 0 <= 400, which is accepted however few samples are left.
    assert typical([100] * 4 + [5000] * 4) == 100


def test_typical_interval_empty_history() -> None:
    # All intervals 0: max == 0 -> UINT_MAX.
    assert typical([0] * 8) == UINT_MAX


def test_typical_interval_ignores_uint_max_entries() -> None:
    # A rejected entry pushes UINT_MAX; it sits on max_thresh (>= UINT_MAX) and is skipped.
    assert typical([300] * 7 + [UINT_MAX]) == 300


def kernel_typical_interval(intervals: list[int]) -> int:
    """get_typical_interval() as menu.c writes it: one scan of the ring per pass."""
    min_thresh, max_thresh = -1, UINT_MAX
    while True:
        kept = [v for v in intervals if min_thresh < v < max_thresh]
        divisor = len(kept)
        mx, mn = max(kept, default=0), min(kept, default=UINT_MAX)
        if mx == 0:
            return UINT_MAX
        avg = sum(kept) // divisor
        variance = sum(v * v for v in kept) // divisor - avg * avg
        if (avg * avg > variance * 36 and divisor * 4 >= INTERVALS * 3) or variance <= 400:
            return avg
        if divisor * 4 <= INTERVALS * 3:
            return UINT_MAX
        if avg - mn > mx - avg:
            min_thresh = mn
        else:
            max_thresh = mx


def test_typical_interval_is_the_kernels_on_any_window() -> None:
    # The compiled version keeps the window sorted as intervals arrive, rules out irregular
    # windows by bounds, and keeps a contiguous run of it per pass; the kernel rescans the ring.
    # Windows with ties, zeros, UINT_MAX, steady runs with outliers, and spreads around the
    # acceptance bounds.
    rng = np.random.default_rng(7)
    # Every 0/1 window: ties in every arrangement.
    windows = [[(m >> i) & 1 for i in range(8)] for m in range(256)]
    windows += [[0] * 8, [UINT_MAX] * 8, [0] * 7 + [UINT_MAX], [5] * 8]
    for _ in range(20_000):
        kind = rng.integers(5)
        if kind == 0:
            w = rng.integers(0, 30, 8)  # small values: many ties, variance <= 400 often
        elif kind == 1:
            w = rng.exponential(rng.choice([50, 500, 5000]), 8).astype(np.int64)
        elif kind == 2:
            w = np.full(8, rng.integers(1, 3000)) + rng.integers(-40, 41, 8)
            w[rng.integers(8, size=rng.integers(1, 4))] = rng.choice([0, 7, 90_000, UINT_MAX])
        elif kind == 3:
            w = rng.choice([0, 3, 3, 100, 100, 2000, UINT_MAX], 8)
        else:
            # Around both acceptance bounds (variance 400, average = 6 standard deviations).
            base = rng.choice([60, 120, 200, 400, 1000, 5000, 40_000, 2**26 - 10_000])
            w = base + (base * rng.uniform(0.02, 0.6) * rng.uniform(-1, 1, 8)).astype(np.int64)
        windows.append([int(x) for x in np.maximum(w, 0)])
    got = [typical(w) for w in windows]
    want = [kernel_typical_interval(w) for w in windows]
    assert got == want
    assert len(set(want)) > 100 and UINT_MAX in want  # the windows reach every branch
    shortcut = sum(map(surely_irregular, windows))
    assert 2_000 < shortcut < sum(x == UINT_MAX for x in want)  # taken often, not always


def test_sorted_window_follows_the_ring() -> None:
    # Each push takes one copy of the value it evicts out of the sorted copy and puts the new
    # one in: after every push the copy is the ring sorted. Few distinct values, so pushes
    # evict duplicates, values equal to neighbours, the minimum and the maximum.
    rng = np.random.default_rng(5)
    g = fresh(2)
    for _ in range(5_000):
        _menu_update_intervals(g, 1, int(rng.choice([0, 1, 1, 7, 7, 7, 300, 5000, UINT_MAX])))
        ring = g[1, G_M_INTERVALS : G_M_INTERVALS + INTERVALS]
        assert g[1, G_M_SORTED : G_M_SORTED + INTERVALS].tolist() == sorted(ring.tolist())
    assert (g[0] == fresh(1)[0]).all()  # the other CPU's row is untouched


def surely_irregular(intervals_us: list[int]) -> bool:
    g = fresh(1)
    load_intervals(g, 0, intervals_us)
    return bool(_surely_irregular(g, 0))


# --------------------------------------------------------------------------------- menu: select


def test_menu_steady_300us_picks_c1e_and_keeps_tick(skx: Table) -> None:
    # typical = 300 us > 15 us, so the timer is read: 10 ms, bucket 4 ([10 ms, 100 ms)), factor
    # 1.0 -> timer_us 10_000; predicted = min(10 ms, 300 us) = 300 us. Walk: C1 (2 us) and C1E
    # (20 us) fit, C6 (600 us) does not, and predicted < TICK_NSEC ends the walk at C1E.
    # predicted < TICK_NSEC keeps the tick; C1E's 20 us fits delta_tick (2 ms).
    g = steady_menu(300)
    assert menu(g, skx) == (C1E, False)
    assert g[0, G_M_NEXT_TIMER] == 10 * MS
    assert g[0, G_M_BUCKET] == 4


def test_menu_steady_1ms_picks_c6_but_keeps_tick(skx: Table) -> None:
    # predicted 1 ms >= C6's 600 us: C6. 1 ms < TICK_NSEC, so the tick stays; C6 fits delta_tick 2 ms.
    assert menu(steady_menu(1000), skx) == (C6, False)


def test_menu_keeping_tick_steps_down_to_fit_delta_tick(skx: Table) -> None:
    # Same choice (C6), but the next tick is 500 us away: the tick is kept, and C6's 600 us does
    # not fit delta_tick, so menu steps down to the first enabled state that does: C1E (20 us).
    assert menu(steady_menu(1000), skx, delta_tick=500 * US) == (C1E, False)


def test_menu_no_pattern_uses_timer_and_stops_tick(skx: Table) -> None:
    # No typical interval (UINT_MAX): predicted = timer_us = 50 ms (factor 1.0, bucket 4).
    # C6 fits; predicted >= TICK_NSEC and C6 is not POLL: stop the tick.
    g = steady_menu(1000)
    load_intervals(g, 0, [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000])
    assert menu(g, skx, sleep_length=50 * MS) == (C6, True)


def test_menu_correction_factor_scales_the_timer(skx: Table) -> None:
    # No pattern, next timer 1 ms: which_bucket() puts [1 ms, 10 ms) in bucket 3.
    # Factor 1.0 -> predicted 1 ms -> C6. Factor 0.5 (4096) -> timer_us = round(1000 * 0.5) =
    # 500 us < C6's 600 us -> C1E.
    g = steady_menu(1000)
    load_intervals(g, 0, [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000])
    g2 = g.copy()
    assert menu(g, skx, sleep_length=1 * MS)[0] == C6
    g2[0, G_M_CF + 3] = 4096
    assert menu(g2, skx, sleep_length=1 * MS)[0] == C1E


def test_menu_latency_req_zero_gives_poll(skx: Table) -> None:
    # latency_req == 0: state 0 at once; POLL is a polling state, so the tick is kept.
    assert menu(steady_menu(1000), skx, latency_req=0) == (POLL, False)


def test_menu_next_timer_below_c1_residency_gives_poll(skx: Table) -> None:
    # typical 300 us > 15 us, so the timer is read: 1.5 us < C1's target residency (2 us) -> POLL.
    assert menu(steady_menu(300), skx, sleep_length=1_500) == (POLL, False)


def test_menu_latency_req_below_c1_exit_gives_poll(skx: Table) -> None:
    # latency_req 1 us < C1's exit latency 2 us, and POLL is enabled -> POLL.
    assert menu(steady_menu(1000), skx, latency_req=1 * US) == (POLL, False)


def test_menu_short_typical_interval_skips_the_timer(skx: Table) -> None:
    # typical 10 us <= 15 us: the timer is not read (next_timer = KTIME_MAX, bucket BUCKETS-1,
    # delta_tick = TICK_NSEC/2). predicted 10 us: C1 fits, C1E (20 us) does not -> C1, tick kept.
    g = steady_menu(10)
    assert menu(g, skx, sleep_length=1_000) == (C1, False)
    assert g[0, G_M_NEXT_TIMER] == INF
    assert g[0, G_M_BUCKET] == BUCKETS - 1


def test_menu_keeps_poll_when_c1_exit_latency_exceeds_prediction(skx: Table) -> None:
    # typical 1 us: POLL fits (0 <= 1 us), C1 (2 us) does not. C1's residency is < 15 us and <=
    # next_timer (KTIME_MAX), but its exit latency (2 us) is over the prediction (1 us), so
    # db86f55bf81a keeps POLL; POLL keeps the tick.
    assert menu(steady_menu(1), skx) == (POLL, False)


def test_menu_prefers_c1_over_poll_when_its_exit_fits() -> None:
    # wsm's C1 is 3 us exit / 6 us residency. typical 4 us: C1's residency does not fit, but it is
    # < 15 us, <= next_timer, and its exit latency (3 us) <= the prediction (4 us): C1 instead of
    # POLL. typical 2 us: the exit latency does not fit, POLL stays.
    wsm = Table("wsm")
    assert menu(steady_menu(4), wsm) == (C1, False)
    assert menu(steady_menu(2), wsm) == (POLL, False)


def test_menu_pm_qos_limit(skx: Table) -> None:
    # Long prediction (no pattern, 50 ms timer) would give C6, but its 133 us exit latency is
    # over the 50 us limit: the walk stops at C6 and keeps C1E. predicted >= TICK_NSEC: stop the tick.
    g = steady_menu(1000)
    load_intervals(g, 0, [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000])
    assert menu(g, skx, sleep_length=50 * MS, latency_req=50 * US) == (C1E, True)


def test_menu_skips_disabled_states(skx: Table) -> None:
    # 300 us steady gives C1E; with C1E disabled the walk keeps C1 and stops at C6 (600 us > 300 us).
    assert menu(steady_menu(300), skx, enabled=skx.without("C1E")) == (C1, False)
    # 50 ms without pattern gives C6; with C6 disabled the deepest enabled state that fits is C1E.
    g = steady_menu(1000)
    load_intervals(g, 0, [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000])
    assert menu(g, skx, enabled=skx.without("C6"), sleep_length=50 * MS) == (C1E, True)


def test_menu_tick_already_stopped_uses_next_timer(skx: Table) -> None:
    # Tick stopped and predicted (300 us) < TICK_NSEC: menu uses the next timer (10 ms) instead,
    # since a shallow misprediction would last until that timer. -> C6, tick stays stopped.
    assert menu(steady_menu(300), skx, tick_stopped=True) == (C6, True)


def test_menu_works_on_its_cpu_row_only(skx: Table) -> None:
    g = steady_menu(300, c=1)
    before = g[0].copy()
    assert menu(g, skx, c=1) == (C1E, False)
    assert (g[0] == before).all()


KTIME_MAX = (1 << 63) - 1
RESIDENCY_THRESHOLD_NS = 15 * US


def kernel_menu_select(
    intervals_us: list[int],
    correction: list[int],
    t: Table,
    enabled: np.ndarray,
    latency_req: int,
    sleep_length: int,
    delta_tick: int,
    tick_stopped: bool,
) -> tuple[int, bool]:
    """menu_select() of v6.18.y with 07d815701274 backported, no update pending, state 0 POLL.

    Transcribed from drivers/cpuidle/governors/menu.c as 6.18.y has it after the January 2026
    stable backport of 07d815701274 (on db86f55bf81a and 779b1a1cb13a): the latency check comes
    first in the walk, and a real state replaces POLL only if its target residency is below
    RESIDENCY_THRESHOLD_NS, not after the next timer, and its exit latency is within the
    prediction. `stop_tick` starts true, as cpuidle_idle_call() passes it.
    """
    res, ext = t.res_ns.tolist(), t.exit_ns.tolist()
    stop_tick = True
    predicted_ns = kernel_typical_interval(intervals_us) * US
    if predicted_ns > RESIDENCY_THRESHOLD_NS:
        next_timer_ns = max(sleep_length, 0)
        bucket = sum(next_timer_ns >= b for b in (10 * US, 100 * US, MS, 10 * MS, 100 * MS))
        timer_us = (1024 * 8 * US // 2 + next_timer_ns * correction[bucket]) // (1024 * 8 * US)
        predicted_ns = min(timer_us * US, predicted_ns)
    else:
        next_timer_ns = KTIME_MAX
        delta_tick = TICK_NS // 2
    if latency_req == 0 or ((next_timer_ns < res[1] or latency_req < ext[1]) and enabled[0]):
        return 0, False  # state 0 is POLL: keep the tick
    if tick_stopped and predicted_ns < TICK_NS:
        predicted_ns = next_timer_ns
    idx = -1
    for i in range(len(res)):
        if not enabled[i]:
            continue
        if idx == -1:
            idx = i
        if ext[i] > latency_req:
            break
        if res[i] <= predicted_ns:
            idx = i
            continue
        polling = idx == 0  # drv->states[idx].flags & CPUIDLE_FLAG_POLLING
        if polling and res[i] < RESIDENCY_THRESHOLD_NS and res[i] <= next_timer_ns and ext[i] <= predicted_ns:
            predicted_ns = res[i]
            idx = i
            break
        if predicted_ns < TICK_NS:
            break
        if not tick_stopped:
            predicted_ns = res[idx]
            break
        if res[idx] < TICK_NS and res[i] <= delta_tick:
            idx = i
        return idx, stop_tick
    if idx == -1:
        idx = 0
    if (idx == 0 or predicted_ns < TICK_NS) and not tick_stopped:
        stop_tick = False
        if idx > 0 and res[idx] > delta_tick:
            for i in range(idx - 1, -1, -1):
                if not enabled[i]:
                    continue
                idx = i
                if res[i] <= delta_tick:
                    break
    return idx, stop_tick


def test_menu_select_is_the_kernels_on_random_short_intervals() -> None:
    # 24,000 selections on the skx, icx and wsm tables with mostly short recent intervals (where
    # the POLL rule decides), random correction factors, timers, tick distances, PM QoS limits,
    # disabled states and tick states, against the transcription of v6.18.y's menu_select().
    rng = np.random.default_rng(18)
    tables = [Table("skx"), Table("icx"), Table("wsm")]
    poll_rule = 0
    for _ in range(24_000):
        t = tables[int(rng.integers(3))]
        n = len(t.names)
        if rng.random() < 0.7:
            intervals = [int(x) for x in rng.integers(0, 8 if rng.random() < 0.5 else 30, INTERVALS)]
        else:
            intervals = [int(x) for x in rng.exponential(rng.choice([5, 50, 500, 5000]), INTERVALS)]
        correction = [int(x) for x in rng.integers(512, 8193, BUCKETS)]
        enabled = np.ones(n, dtype=np.bool_)
        if rng.random() < 0.3:
            enabled[rng.integers(n, size=rng.integers(1, n))] = False
        latency_req = int(INF) if rng.random() < 0.8 else int(rng.choice([0, 1, 2, 3, 5, 20, 200]) * US)
        sleep_length = int(np.exp(rng.uniform(np.log(500), np.log(60 * MS))))
        delta_tick = int(rng.integers(1, TICK_NS + 1))
        tick_stopped = bool(rng.random() < 0.2)
        g = init_governor_state(1, n, 1)
        load_intervals(g, 0, intervals)
        g[0, G_LAST_RES] = 1  # the last entry was not refused: no UINT_MAX push
        g[0, G_M_CF : G_M_CF + BUCKETS] = correction
        got = menu_select(
            g, 0, t.res_ns, t.exit_ns, enabled, True, latency_req, sleep_length, delta_tick, tick_stopped,
            TICK_NS,
        )
        want = kernel_menu_select(
            intervals, correction, t, enabled, latency_req, sleep_length, delta_tick, tick_stopped
        )
        assert (int(got[0]), bool(got[1])) == want, (t.names, intervals, enabled, latency_req, sleep_length)
        poll_rule += want[0] == 0 and kernel_typical_interval(intervals) * US < RESIDENCY_THRESHOLD_NS
    assert poll_rule > 1_000  # the POLL rule decided many of them


# --------------------------------------------------------------------------------- menu: update


def test_menu_update_learns_from_the_last_residency(skx: Table) -> None:
    g = steady_menu(300)
    assert menu(g, skx) == (C1E, False)  # next_timer 10 ms, bucket 4 saved for the update
    # C1E entered, woken after 300 us (residency measured including the exit latency).
    reflect(GOV_MENU, g, 0, C1E, 300 * US, False, False)
    assert g[0, G_NEEDS_UPDATE] == 1
    ptr = int(g[0, G_M_PTR])
    menu(g, skx)
    # measured = 300 us - 10 us (residency > 2 * exit latency) = 290 us.
    # factor[4] = 8192 - 8192/8 + 1024 * 290_000 / 10_000_000 = 7168 + 29 = 7197.
    assert g[0, G_M_CF + 4] == 7197
    assert g[0, G_M_INTERVALS + ptr] == 290
    assert g[0, G_NEEDS_UPDATE] == 0


def test_menu_update_short_residency_halved(skx: Table) -> None:
    g = steady_menu(300)
    menu(g, skx)
    ptr = int(g[0, G_M_PTR])
    # 15 us in C1E is not more than 2 * 10 us: measured = 15 us / 2 = 7.5 us -> 7 us pushed.
    reflect(GOV_MENU, g, 0, C1E, 15 * US, False, False)
    menu(g, skx)
    assert g[0, G_M_INTERVALS + ptr] == 7


def test_menu_update_tick_wakeup_counts_as_long_idle(skx: Table) -> None:
    g = steady_menu(300)
    menu(g, skx)  # next_timer 10 ms > TICK_NSEC
    ptr = int(g[0, G_M_PTR])
    # Woken by the tick with the next timer beyond TICK_NSEC: measured = 0.9 * MAX_INTERESTING
    # (45 ms), clamped to next_timer (10 ms). factor = 7168 + 1024 * 10 ms / 10 ms = 8192.
    reflect(GOV_MENU, g, 0, C1E, 4 * MS, True, False)
    menu(g, skx)
    assert g[0, G_M_INTERVALS + ptr] == 10_000
    assert g[0, G_M_CF + 4] == 8192


def test_menu_update_poll_timeout_measures_next_timer(skx: Table) -> None:
    g = steady_menu(300)
    menu(g, skx)
    ptr = int(g[0, G_M_PTR])
    # POLL ran out of its time limit: measured = next_timer (10 ms).
    reflect(GOV_MENU, g, 0, POLL, 20 * US, False, True)
    menu(g, skx)
    assert g[0, G_M_INTERVALS + ptr] == 10_000


def test_menu_rejected_entry_pushes_uint_max(skx: Table) -> None:
    g = steady_menu(300)
    menu(g, skx)
    reflect(GOV_MENU, g, 0, C1E, 300 * US, False, False)
    menu(g, skx)  # consumes the update
    ptr = int(g[0, G_M_PTR])
    note_rejected(g, 0)  # last_residency_ns = 0, no reflect
    assert g[0, G_LAST_RES] == 0
    # No update pending and last_residency == 0: UINT_MAX goes into the ring, and the typical
    # interval detector ignores it (still 300-ish from the other seven).
    assert menu(g, skx) == (C1E, False)
    assert g[0, G_M_INTERVALS + ptr] == UINT_MAX


# ------------------------------------------------------------------------------------------ teo


def test_teo_fresh_data_follows_the_timer(skx: Table) -> None:
    # No history: no intercepts, so the candidate stays the deepest state, C6. C6's residency is
    # not < 15 us, so the sleep length is read (10 ms): C6 fits; 10 ms >= TICK_NSEC: stop the tick.
    g = fresh()
    assert teo(g, skx) == (C6, True)
    assert g[0, G_T_SLEEP_LENGTH] == 10 * MS


def test_teo_timer_closer_than_candidate(skx: Table) -> None:
    # Timer in 300 us < C6's 600 us: the deepest shallower state that fits is C1E (20 us).
    # 300 us < TICK_NSEC: keep the tick; C1E fits delta_tick (2 ms).
    assert teo(fresh(), skx, sleep_length=300 * US) == (C1E, False)


def test_teo_intercepts_in_shallow_bins_pick_shallower(skx: Table) -> None:
    # total 10_000; C1's bin has 8_000 intercepts, no hits anywhere. Candidate C6:
    # intercepts below it = 8_000, 2 * 8_000 > total - hits below (10_000), so walk down summing
    # intercepts: C1E's bin (0) is not > half of 8_000, C1's bin makes 8_000 -> C1.
    # C1's residency (2 us) < 15 us but short_idles (0) is not >= total/2, so the sleep length is
    # read: 10 ms, C1 fits; tick_intercepts 0; 10 ms >= TICK_NSEC and C1 is not POLL: stop.
    g = fresh()
    g[0, G_T_TOTAL] = 10_000
    g[0, intercepts(C1)] = 8_000
    assert teo(g, skx) == (C1, True)


def test_teo_tick_intercepts_keep_the_tick(skx: Table) -> None:
    # As above, but most intercepts came before the tick: tick_intercepts (8_000) >
    # total/2 + total/8 (6_250), so the duration is taken as TICK_NSEC/2 and the tick is kept.
    g = fresh()
    g[0, G_T_TOTAL] = 10_000
    g[0, intercepts(C1)] = 8_000
    g[0, G_T_TICK_INTERCEPTS] = 8_000
    assert teo(g, skx) == (C1, False)


def test_teo_intercept_walk_stops_at_majority(skx: Table) -> None:
    # Intercepts: C1 2_000, C1E 6_000; total 10_000. Below C6: 8_000, 16_000 > 10_000 -> walk:
    # C1E's bin alone (6_000) is more than half of 8_000 -> C1E.
    g = fresh()
    g[0, G_T_TOTAL] = 10_000
    g[0, intercepts(C1)] = 2_000
    g[0, intercepts(C1E)] = 6_000
    assert teo(g, skx) == (C1E, True)


def test_teo_hits_on_deep_state_outweigh_intercepts(skx: Table) -> None:
    # Intercepts below C6: 4_000; hits below C6: 0; 2 * 4_000 = 8_000 is not > 10_000 -> C6.
    g = fresh()
    g[0, G_T_TOTAL] = 10_000
    g[0, intercepts(C1)] = 4_000
    g[0, hits(C6)] = 6_000
    assert teo(g, skx) == (C6, True)


def test_teo_short_idles_skip_the_sleep_length(skx: Table) -> None:
    # Candidate C1 (intercepts as above) with residency < 15 us and 2 * short_idles (12_000) >=
    # total (10_000): return C1 with the tick kept, without reading the sleep length: the sleep
    # length stays KTIME_MAX even though the timer (1 us) is closer than C1's residency.
    g = fresh()
    g[0, G_T_TOTAL] = 10_000
    g[0, intercepts(C1)] = 8_000
    g[0, G_T_SHORT_IDLES] = 6_000
    assert teo(g, skx, sleep_length=1_000) == (C1, False)
    assert g[0, G_T_SLEEP_LENGTH] == INF


def test_teo_latency_req_zero_gives_poll(skx: Table) -> None:
    # No state but POLL has exit latency <= 0: constraint_idx 0 clamps C6 to POLL; state 0 and
    # latency_req < 7.5 us: return it with the tick kept.
    assert teo(fresh(), skx, latency_req=0) == (POLL, False)


def test_teo_pm_qos_limit(skx: Table) -> None:
    # latency 50 us: the deepest state within it is C1E (constraint_idx 2); 10 ms timer: stop.
    assert teo(fresh(), skx, latency_req=50 * US) == (C1E, True)


def test_teo_skips_disabled_states(skx: Table) -> None:
    # C6 disabled: the candidate is C1E; timer 10 ms: C1E, stop the tick.
    assert teo(fresh(), skx, enabled=skx.without("C6")) == (C1E, True)


def test_teo_single_enabled_state(skx: Table) -> None:
    # Only C6 enabled: idx == idx0, duration = C6's residency (600 us) < TICK_NSEC: keep the tick,
    # and there is no shallower enabled state to step down to.
    assert teo(fresh(), skx, enabled=skx.without("POLL", "C1", "C1E")) == (C6, False)


def test_teo_tick_stopped_never_restarts_it(skx: Table) -> None:
    # Tick already stopped: teo returns with stop_tick set whatever the duration.
    assert teo(fresh(), skx, sleep_length=300 * US, tick_stopped=True) == (C1E, True)


def test_teo_update_hit(skx: Table) -> None:
    g = fresh()
    g[0, hits(C6)] = 8_000
    g[0, G_T_TOTAL] = 8_000
    assert teo(g, skx) == (C6, True)  # sleep length 10 ms saved
    # 1 ms in C6: measured = 1 ms - 133 us / 2 = 933.5 us; both the sleep length and the
    # measured duration fall into C6's bin: a hit. Decay first: 8_000 - 8_000/8 = 7_000.
    reflect(GOV_TEO, g, 0, C6, 1 * MS, False, False)
    assert g[0, G_T_PENDING] == 1
    teo(g, skx)
    assert g[0, hits(C6)] == 7_000 + PULSE
    assert g[0, G_T_TOTAL] == 7_000 + PULSE
    assert g[0, G_T_PENDING] == 0


def test_teo_update_intercept(skx: Table) -> None:
    g = fresh()
    teo(g, skx)  # sleep length 10 ms -> timer bin C6
    # 100 us in C1E: measured = 100 - 10/2 = 95 us -> C1E's bin: an intercept there, and one
    # before the tick (95 us <= TICK_NSEC). total = decayed sum (0) + PULSE.
    reflect(GOV_TEO, g, 0, C1E, 100 * US, False, False)
    teo(g, skx)
    assert g[0, intercepts(C1E)] == PULSE
    assert g[0, G_T_TICK_INTERCEPTS] == PULSE
    assert g[0, G_T_TOTAL] == PULSE
    assert g[0, hits(C6)] == 0
    assert g[0, G_T_SHORT_IDLES] == 0  # 95 us is not short


def test_teo_update_short_idle(skx: Table) -> None:
    g = fresh()
    teo(g, skx)
    # 12 us in C1E: measured = 12 - 5 = 7 us < 15 us -> short_idles += PULSE; bin C1 (intercept).
    reflect(GOV_TEO, g, 0, C1E, 12 * US, False, False)
    teo(g, skx)
    assert g[0, G_T_SHORT_IDLES] == PULSE
    assert g[0, intercepts(C1)] == PULSE


def test_teo_update_tick_wakeups_count_as_deepest_hits(skx: Table) -> None:
    g = fresh()
    teo(g, skx)
    # A tick wakeup after 100 us in C1E: total_tick = PULSE, total = PULSE; 3 * PULSE > 2 * PULSE,
    # so tick wakeups dominate and it counts as a hit on the deepest state instead of an intercept.
    reflect(GOV_TEO, g, 0, C1E, 100 * US, True, False)
    teo(g, skx)
    assert g[0, G_T_TOTAL_TICK] == PULSE
    assert g[0, hits(C6)] == PULSE
    assert g[0, intercepts(C1E)] == 0


def test_teo_update_poll_timeout_is_a_long_idle(skx: Table) -> None:
    g = fresh()
    g[0, G_T_SLEEP_LENGTH] = 10 * MS
    # POLL timed out: measured = S64_MAX, so it lands in the sleep length's bin (C6): a hit.
    reflect(GOV_TEO, g, 0, POLL, 50 * US, False, True)
    teo(g, skx)
    assert g[0, hits(C6)] == PULSE


# --------------------------------------------------------------------------------------- ladder


def ladder_after(g: np.ndarray, t: Table, idx: int, residency_ns: int, **kw: object) -> int:
    """Reflect a stay of `residency_ns` in `idx`, then select."""
    reflect(GOV_LADDER, g, 0, idx, residency_ns, False, False)
    return ladder(g, t, **kw)  # type: ignore[arg-type]


def test_ladder_promotes_after_four_long_residencies(skx: Table) -> None:
    # Start at first_idx = C1. A stay of 100 us - 2 us exit > C1's promotion time (2 us): the
    # promotion count grows, and the 4th consecutive long stay promotes to C1E.
    g = fresh()
    picks = []
    idx = C1
    for _ in range(4):
        idx = ladder_after(g, skx, idx, 100 * US)
        picks.append(idx)
    assert picks == [C1, C1, C1, C1E]


def test_ladder_demotes_after_one_short_residency(skx: Table) -> None:
    # In C1E: four long stays (100 us - 10 us > 10 us) promote to C6; one short C6 stay
    # (200 us - 133 us = 67 us < 133 us) demotes at once (DEMOTION_COUNT 1).
    g = fresh()
    g[0, G_LAST_IDX] = C1E
    picks = [ladder_after(g, skx, C1E, 100 * US) for _ in range(4)]
    assert picks == [C1E, C1E, C1E, C6]
    assert ladder_after(g, skx, C6, 200 * US) == C1E


def test_ladder_stays_at_first_idx_on_short_stays(skx: Table) -> None:
    # C1 is first_idx: a short stay cannot demote below it (POLL is never a demotion target).
    g = fresh()
    assert ladder_after(g, skx, C1, 1 * US) == C1


def test_ladder_never_promotes_into_disabled_state(skx: Table) -> None:
    g = fresh()
    picks = [ladder_after(g, skx, C1, 100 * US, enabled=skx.without("C1E")) for _ in range(8)]
    assert set(picks) == {C1}


def test_ladder_pm_qos_blocks_promotion(skx: Table) -> None:
    # C1E's exit latency (10 us) is over the 5 us limit: never promoted into.
    g = fresh()
    picks = [ladder_after(g, skx, C1, 100 * US, latency_req=5 * US) for _ in range(8)]
    assert set(picks) == {C1}


def test_ladder_demotes_out_of_disabled_state(skx: Table) -> None:
    # Last state C6, now disabled: demote at once to the deepest state within the limit (C1E).
    g = fresh()
    g[0, G_LAST_IDX] = C6
    g[0, G_LAST_RES] = 10 * MS
    assert ladder(g, skx, enabled=skx.without("C6")) == C1E


def test_ladder_demotes_below_pm_qos_limit(skx: Table) -> None:
    # Last state C6, limit 5 us: C1E (10 us) is over it too; the walk stops at first_idx, C1.
    g = fresh()
    g[0, G_LAST_IDX] = C6
    g[0, G_LAST_RES] = 10 * MS
    assert ladder(g, skx, latency_req=5 * US) == C1


def test_ladder_latency_req_zero_gives_poll(skx: Table) -> None:
    assert ladder(fresh(), skx, latency_req=0) == POLL


def test_ladder_asks_to_stop_the_tick(skx: Table) -> None:
    # ladder_select() never writes stop_tick, which cpuidle_idle_call() sets to true first.
    g = fresh()
    g[0, G_LAST_IDX] = C6
    g[0, G_LAST_RES] = 10 * MS  # a long stay: no demotion
    assert select(GOV_LADDER, g, skx, sleep_length=100 * MS, delta_tick=4 * MS) == (C6, True)
    assert select(GOV_LADDER, fresh(), skx, sleep_length=100 * US, delta_tick=4 * MS) == (C1, True)


def kernel_ladder_select(
    last_idx: int, last_residency_ns: int, promotion: int, demotion: int, t: Table, enabled: np.ndarray,
    latency_req: int,
) -> tuple[int, bool]:
    """ladder_select_state() of drivers/cpuidle/governors/ladder.c (v6.18), called as
    cpuidle_idle_call() calls it (kernel/sched/idle.c): with `stop_tick = true`, which ladder
    never writes. Thresholds as ladder_enable_device() sets them (promotion and demotion time =
    the state's exit latency; counts 4 and 1). Returns (state, stop_tick)."""
    ext = t.exit_ns.tolist()
    first_idx = 1
    if latency_req == 0:
        return 0, True
    last_residency = last_residency_ns - ext[last_idx]
    if (
        last_idx < len(ext) - 1 and enabled[last_idx + 1] and last_residency > ext[last_idx]
        and ext[last_idx + 1] <= latency_req
    ):
        if promotion + 1 >= 4:
            return last_idx + 1, True
    if last_idx > first_idx and (not enabled[last_idx] or ext[last_idx] > latency_req):
        i = last_idx - 1
        while i > first_idx and ext[i] > latency_req:
            i -= 1
        return i, True
    if last_idx > first_idx and last_residency < ext[last_idx]:
        if demotion + 1 >= 1:
            return last_idx - 1, True
    return last_idx, True


def test_ladder_select_is_the_kernels_and_asks_to_stop_the_tick() -> None:
    # Random last states, residencies, pending promotion counts, limits and disabled states.
    rng = np.random.default_rng(10)
    for _ in range(5_000):
        t = Table(str(rng.choice(["skx", "icx", "wsm"])))
        n = len(t.names)
        enabled = rng.random(n) < 0.8
        last_idx = int(rng.integers(1, n))
        promotion = int(rng.integers(0, 4))
        g = init_governor_state(1, n, 1)
        g[0, G_LAST_IDX] = last_idx
        g[0, G_LAST_RES] = int(rng.integers(0, 2 * t.exit_ns[last_idx] + 2 * US))
        g[0, G_FIXED_COLS + 2 * n + last_idx] = promotion
        latency_req = int(INF) if rng.random() < 0.7 else int(rng.choice([0, 2, 5, 50, 150]) * US)
        got = select_state(
            GOV_LADDER, V619, g, 0, t.res_ns, t.exit_ns, enabled, True, latency_req, 100 * MS, 2 * MS, False,
            TICK_NS, 1, int(INF), False,
        )
        want = kernel_ladder_select(last_idx, int(g[0, G_LAST_RES]), promotion, 0, t, enabled, latency_req)
        assert (int(got[0]), bool(got[1])) == want, (t.names, enabled, last_idx, promotion, latency_req)


def test_ladder_reflect_ignores_state_zero() -> None:
    # ladder_reflect() only records index > 0.
    g = fresh()
    reflect(GOV_LADDER, g, 0, POLL, 5 * US, False, False)
    assert g[0, G_LAST_IDX] == C1
    assert g[0, G_LAST_RES] == 5 * US


# -------------------------------------------------------------------------------- oracle, fixed


@pytest.mark.parametrize(
    ("oracle_ns", "expected"),
    [
        (1 * US, (POLL, False)),  # 1 us < C1's 2 us: POLL, tick kept
        (300 * US, (C1E, False)),  # C1E fits, C6 does not; 300 us < delta_tick (2 ms): keep
        (5 * MS, (C6, True)),  # C6 fits; 5 ms > delta_tick: stop
    ],
)
def test_oracle_picks_deepest_state_that_fits(skx: Table, oracle_ns: int, expected: tuple[int, bool]) -> None:
    assert select(GOV_ORACLE, fresh(), skx, oracle_ns=oracle_ns) == expected


def test_oracle_respects_pm_qos_and_disabled(skx: Table) -> None:
    assert select(GOV_ORACLE, fresh(), skx, oracle_ns=5 * MS, latency_req=50 * US)[0] == C1E
    assert select(GOV_ORACLE, fresh(), skx, oracle_ns=5 * MS, enabled=skx.without("C6", "C1E"))[0] == C1


def test_fixed_uses_its_state(skx: Table) -> None:
    # fixed on C1: C1 whatever the timer; tick stopped only if the timer is beyond the next tick.
    assert select(GOV_FIXED, fresh(), skx, fixed_idx=C1, sleep_length=10 * MS) == (C1, True)
    assert select(GOV_FIXED, fresh(), skx, fixed_idx=C1, sleep_length=1 * MS) == (C1, False)


def test_fixed_steps_down_for_pm_qos_and_disabled(skx: Table) -> None:
    assert select(GOV_FIXED, fresh(), skx, fixed_idx=C6, latency_req=50 * US)[0] == C1E
    assert select(GOV_FIXED, fresh(), skx, fixed_idx=C6, enabled=skx.without("C6"))[0] == C1E


def test_select_state_dispatches_to_menu_and_teo(skx: Table) -> None:
    g1, g2 = steady_menu(300), steady_menu(300)
    assert select(GOV_MENU, g1, skx) == menu(g2, skx)
    g3, g4 = fresh(), fresh()
    assert select(GOV_TEO, g3, skx, sleep_length=300 * US) == teo(g4, skx, sleep_length=300 * US)


def test_fixed_never_picks_a_disabled_state(skx: Table) -> None:
    idx, _ = select(GOV_FIXED, fresh(), skx, fixed_idx=C1, latency_req=1 * US, enabled=skx.without("POLL"))
    assert idx == C1

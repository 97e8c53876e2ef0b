"""menu at each release, against transcriptions of that tree's menu.c (engine/governors/menu.py).

The oracle below is the kernel's code as plain Python, on the ring of recent intervals as the
kernel keeps it (no sorted copy, no shortcut), u64 and `unsigned int` arithmetic spelled out.
Each tree's pieces cite the patch that made them, by its linux-pm Message-ID:

- v6.6: menu.c after 5484e31bbbff "Skip tick_nohz_get_sleep_length() call in some cases"
  (<12275372.O9o76ZdvQC@kreacher>), whose get_typical_interval() is the pre-image of "Drop a
  redundant local variable" (<13699686.uLZWGnKmhe@rjwysocki.net>); v6.12 is the same code (the
  iowait removal <20240905092645.2885200-2-christian.loehle@arm.com> changes nothing without
  iowaiters).
- 85975daeaa4d: the February 2025 series ending in "Avoid discarding useful information"
  (<3339073.aeNJFYEL58@rjwysocki.net>, <8490144.T7Z3S40VBb@rjwysocki.net>,
  <2301940.iZASKD2KPV@rjwysocki.net>, <7770672.EvYhyI6sBW@rjwysocki.net>).
- fa3fa55de0d6 <2793874.mvXUDI8C0e@rafael.j.wysocki>; 779b1a1cb13a
  <5043159.31r3eYUQgx@rafael.j.wysocki>; 10fad4012234 <3663603.iIbC2pHGDl@rafael.j.wysocki>;
  db86f55bf81a <12786727.O9o76ZdvQC@rafael.j.wysocki>; 07d815701274
  <20251006013954.17972-1-aboorvad@linux.ibm.com>; 80606f4eb8d7
  <5959091.DvuYhMxLoT@rafael.j.wysocki>; 7bcc8bbeca35 <2244365.irdbgypaU6@rafael.j.wysocki>;
  the v7.0-rc2 core skip <20260216185005.1131593-2-aboorvad@linux.ibm.com>.

Sequences of select, enter (or -EBUSY) and reflect on generated inputs compare every decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from engine import SimConfig
from engine.governors import menu as M
from engine.governors import reflect, releases
from engine.governors.common import (
    G_LAST_RES,
    G_M_INTERVALS,
    G_M_NEXT_TIMER,
    GOV_MENU,
    INF,
    UINT_MAX,
    init_governor_state,
)
from engine.governors.cpuidle import V_TYPICAL, note_rejected, select_state, variant_field

from .conftest import Table

US = 1_000
MS = 1_000_000
TICK_NS = 4 * MS
KTIME_MAX = (1 << 63) - 1
U64 = (1 << 64) - 1
INT_MAX = (1 << 31) - 1
RESIDENCY_THRESHOLD_NS = 15 * US
MAX_INTERESTING = 50_000 * US


# ------------------------------------------------------------------------ get_typical_interval()


def typical_v6_6(intervals: list[int], keep_max: bool = False) -> int:
    """v6.6 to v6.14 (two passes, upside only); `keep_max`: with 85975daeaa4d as 6.6.y took it
    (<20250505225634.2688578-162-sashal@kernel.org>)."""
    thresh = INT_MAX
    while True:
        mx, total, divisor = 0, 0, 0
        for value in intervals:
            if value <= thresh:
                total += value
                divisor += 1
                mx = max(mx, value)
        if not mx:
            return UINT_MAX
        avg = total >> 3 if divisor == 8 else total // divisor
        variance = 0
        for value in intervals:
            if value <= thresh:
                variance = (variance + (value - avg) ** 2) & U64
        variance = variance >> 3 if divisor == 8 else variance // divisor
        if variance <= U64 // 36:
            if (avg * avg > variance * 36 and divisor * 4 >= 24) or variance <= 400:
                return avg
        if divisor * 4 <= 24:
            if keep_max and divisor >= 4:
                return mx
            return UINT_MAX
        thresh = mx - 1


def typical_both_ends(intervals: list[int], keep_max: bool) -> int:
    """v6.15 (keep_max, 85975daeaa4d) and after 10fad4012234 (not keep_max)."""
    min_thresh, max_thresh = -1, UINT_MAX
    while True:
        mx, mn, avg, variance, divisor = 0, UINT_MAX, 0, 0, 0
        for value in intervals:
            if value <= min_thresh or value >= max_thresh:
                continue
            divisor += 1
            avg = (avg + value) & U64
            variance = (variance + value * value) & U64
            mx, mn = max(mx, value), min(mn, value)
        if not mx:
            return UINT_MAX
        if divisor == 8:
            avg >>= 3
            variance >>= 3
        else:
            avg //= divisor
            variance //= divisor
        avg_sq = (avg * avg) & U64
        variance = (variance - avg_sq) & U64
        if variance <= U64 // 36:
            if (avg_sq > variance * 36 and divisor * 4 >= 24) or variance <= 400:
                return avg
        if divisor * 4 <= 24:
            if keep_max and divisor >= 4:
                return mx
            return UINT_MAX
        if avg - mn > mx - avg:
            min_thresh = mn
        else:
            max_thresh = mx


ORACLE_TYPICAL = {
    M.TYPICAL_UPSIDE: lambda w: typical_v6_6(w),
    M.TYPICAL_UPSIDE_KEEP_MAX: lambda w: typical_v6_6(w, keep_max=True),
    M.TYPICAL_BOTH_ENDS_KEEP_MAX: lambda w: typical_both_ends(w, keep_max=True),
    M.TYPICAL_BOTH_ENDS: lambda w: typical_both_ends(w, keep_max=False),
}


def random_window(rng: np.random.Generator) -> list[int]:
    pool = [0, 1, 7, 300, 301, 5000, 45_000, UINT_MAX, M.KTIME_MAX_US_U32, INT_MAX, INT_MAX + 1]
    kind = rng.random()
    if kind < 0.3:
        return [int(rng.choice(pool)) for _ in range(8)]
    if kind < 0.6:
        base = int(rng.integers(1, 3000))
        return [
            base + int(rng.integers(0, 40)) if rng.random() < 0.8 else int(rng.choice(pool)) for _ in range(8)
        ]
    return [int(x) for x in rng.exponential(rng.choice([5, 50, 500, 5000]), 8)]


@pytest.mark.parametrize("typical", sorted(ORACLE_TYPICAL))
def test_typical_interval_is_each_trees(typical: int) -> None:
    # The sorted-window passes, the irregularity shortcut and the u64 path on the ring, against
    # each tree's loop on 6,000 windows pushed one interval at a time (ring order matters only
    # to the kernel's code, never to its answer).
    rng = np.random.default_rng(100 + typical)
    for _ in range(6_000):
        g = init_governor_state(1, 4, 1)
        window = random_window(rng)
        for x in [*[int(v) for v in rng.integers(0, 9000, 3)], *window]:
            M.update_intervals(g, 0, x)
        assert int(M.typical_interval(g, 0, typical)) == ORACLE_TYPICAL[typical](window), window


def test_ktime_max_interval_is_counted_by_the_both_ends_passes_only() -> None:
    # ktime_to_us(KTIME_MAX) as an unsigned int is 2,783,138,807: below the both-ends passes'
    # UINT_MAX threshold, so counted; above v6.6's INT_MAX threshold, so not. With five of them
    # and [0, 3, 21]: v6.6 sees three samples, variance 86 <= 400, and predicts 8 us; the both-ends
    # passes count all eight, whose squares wrap in u64, and end with no prediction (UINT_MAX),
    # where treating them like UINT_MAX (skipped) would predict 8 as well.
    assert M.KTIME_MAX_US_U32 == 2_783_138_807
    window = [0, 3, 21] + [M.KTIME_MAX_US_U32] * 5
    assert typical_v6_6(window) == 8
    assert typical_both_ends(window, keep_max=False) == UINT_MAX
    assert typical_both_ends([0, 3, 21] + [UINT_MAX] * 5, keep_max=False) == 8
    g = init_governor_state(1, 4, 1)
    for x in window:
        M.update_intervals(g, 0, x)
    assert int(M.typical_interval(g, 0, M.TYPICAL_UPSIDE)) == 8
    assert int(M.typical_interval(g, 0, M.TYPICAL_BOTH_ENDS)) == UINT_MAX


def test_poll_timeout_after_a_skipped_timer_stores_ktime_max_as_unsigned_int() -> None:
    # Eight 1 us intervals: predicted 1 us <= RESIDENCY_THRESHOLD_NS, so menu skips the timer
    # (next_timer_ns = KTIME_MAX), and C1's 2 us exit latency is above the prediction, so POLL
    # stays (skx). POLL times out; the next selection's menu_update() stores the interval.
    t = Table("skx")
    variant = releases.resolve("menu", "v6.19").variant
    g = init_governor_state(1, 4, 1)
    for _ in range(8):
        M.update_intervals(g, 0, 1)
    g[0, G_LAST_RES] = 1_000
    idx, stop = select_state(
        GOV_MENU, variant, g, 0, t.res_ns, t.exit_ns, t.enabled, True, int(INF), 10 * MS, 2 * MS, False,
        TICK_NS, 1, int(INF), False,
    )
    assert (int(idx), bool(stop)) == (0, False)
    assert int(g[0, G_M_NEXT_TIMER]) == int(INF)  # the timer was not read
    reflect(GOV_MENU, g, 0, 0, 30_000, False, True)  # POLL ran into its time limit
    select_state(
        GOV_MENU, variant, g, 0, t.res_ns, t.exit_ns, t.enabled, True, int(INF), 10 * MS, 2 * MS, False,
        TICK_NS, 1, int(INF), False,
    )
    # menu_update(): measured_ns = next_timer_ns = KTIME_MAX, stored as ktime_to_us() in an
    # unsigned int.
    assert int(g[0, G_M_INTERVALS + 0]) == 2_783_138_807


# ------------------------------------------------------------------------------- menu_select()


@dataclass
class KernelMenu:
    """One CPU's struct menu_device and the cpuidle_device fields menu reads, as the kernel has
    them, for the tree `tree` (a name releases.py knows)."""

    tree: str
    needs_update: int = 0
    tick_wakeup: bool = False
    next_timer_ns: int = 0
    bucket: int = 0
    correction_factor: list[int] = field(default_factory=lambda: [1024 * 8] * 6)
    intervals: list[int] = field(default_factory=lambda: [0] * 8)
    interval_ptr: int = 0
    last_state_idx: int = 1
    last_residency_ns: int = 0
    poll_time_limit: bool = False

    # What each tree has, by commit (the walk of releases.MAINLINE, read from the patches).
    def has(self, commit: str) -> bool:
        tree = self.tree
        if tree in releases.SIDE_COMMITS:
            base, _ = releases.SIDE_COMMITS[tree]
            return commit == tree or KernelMenu(base).has(commit)
        if tree in releases.STABLE:
            rel = releases.STABLE[tree]
            return commit in [b.upstream for b in rel.backports] or KernelMenu(rel.base).has(commit)
        order = [s.commit or s.release for s in releases.MAINLINE]
        if tree.startswith("v"):
            k = releases._ORDER.index(tree)
            inside = [
                s.commit or s.release for s in releases.MAINLINE if releases._ORDER.index(s.release) <= k
            ]
            return commit in inside
        return commit in order and order.index(commit) <= order.index(tree)

    def typical(self) -> int:
        if self.has("85975daeaa4d"):
            return typical_both_ends(self.intervals, keep_max=not self.has("10fad4012234"))
        return typical_v6_6(self.intervals)

    def update_intervals(self, interval_us: int) -> None:
        self.intervals[self.interval_ptr] = interval_us & 0xFFFFFFFF
        self.interval_ptr = (self.interval_ptr + 1) % 8

    def update(self, t: Table) -> None:
        """menu_update(), the same in every tree here."""
        last_idx = self.last_state_idx
        if self.tick_wakeup and self.next_timer_ns > TICK_NS:
            measured = 9 * MAX_INTERESTING // 10
        elif last_idx == 0 and self.poll_time_limit:  # states[0] is POLL in these tables
            measured = self.next_timer_ns
        else:
            measured = self.last_residency_ns
            lat = int(t.exit_ns[last_idx])
            measured = measured - lat if measured > 2 * lat else measured // 2
        measured = min(measured, self.next_timer_ns)
        nf = self.correction_factor[self.bucket]
        nf -= nf // 8
        if self.next_timer_ns > 0 and measured < MAX_INTERESTING:
            nf += 1024 * measured // self.next_timer_ns
        else:
            nf += 1024
        self.correction_factor[self.bucket] = nf
        self.update_intervals(measured // 1000)  # ktime_to_us() into an unsigned int

    def select(
        self, t: Table, enabled: list[bool], latency_req: int, sleep_length: int, delta_tick: int,
        tick_stopped: bool, nohz_full: bool,
    ) -> tuple[int, bool]:
        res, ext = [int(x) for x in t.res_ns], [int(x) for x in t.exit_ns]
        n = len(res)
        if n <= 1 and self.tree == "v7.0-rc2":
            return 0, False  # cpuidle_select() skips the governor
        stop_tick = True
        if self.needs_update:
            self.update(t)
            self.needs_update = 0
        elif not self.last_residency_ns and self.has("fa3fa55de0d6"):
            self.update_intervals(UINT_MAX)
        predicted_ns = self.typical() * US
        reads_timer = predicted_ns > RESIDENCY_THRESHOLD_NS or (tick_stopped and self.has("80606f4eb8d7"))
        if reads_timer:
            self.next_timer_ns = sleep_length
            self.bucket = sum(sleep_length >= b for b in (10 * US, 100 * US, MS, 10 * MS, 100 * MS))
            cf = self.correction_factor[self.bucket]
            timer_us = (1024 * 8 * US // 2 + sleep_length * cf) // (1024 * 8 * US)
            predicted_ns = min(timer_us * US, predicted_ns)
            if self.has("80606f4eb8d7") and tick_stopped and predicted_ns < TICK_NS:
                predicted_ns = self.next_timer_ns
        else:
            self.next_timer_ns = KTIME_MAX
            delta_tick = TICK_NS // 2
            self.bucket = 5  # which_bucket(KTIME_MAX)
        if n <= 1 or latency_req == 0 or (
            (self.next_timer_ns < res[1] or latency_req < ext[1]) and enabled[0]
        ):
            return 0, False  # state 0 is POLL here
        if self.has("80606f4eb8d7"):
            pass
        elif tick_stopped:
            if predicted_ns < TICK_NS and not (self.has("7bcc8bbeca35") and nohz_full):
                predicted_ns = self.next_timer_ns
        elif not self.has("779b1a1cb13a"):
            latency_req = min(latency_req, predicted_ns)  # interactivity_req, iowaiters 0
        idx = -1
        for i in range(n):
            if not enabled[i]:
                continue
            if idx == -1:
                idx = i
            if self.has("779b1a1cb13a") and ext[i] > latency_req:
                break
            if res[i] > predicted_ns:
                if self.has("07d815701274"):
                    fits = res[i] <= self.next_timer_ns and ext[i] <= predicted_ns
                    poll_ok = res[i] < RESIDENCY_THRESHOLD_NS and fits
                elif self.has("db86f55bf81a"):
                    poll_ok = res[i] <= self.next_timer_ns and ext[i] <= predicted_ns
                elif self.has("779b1a1cb13a"):
                    poll_ok = res[i] <= self.next_timer_ns
                else:
                    poll_ok = ext[i] <= latency_req and res[i] <= self.next_timer_ns
                if idx == 0 and poll_ok:
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
            if ext[i] > latency_req:
                break
            idx = i
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

    def reflect(self, index: int, residency_ns: int, tick_wakeup: bool, poll_time_limit: bool) -> None:
        self.last_state_idx = index
        self.last_residency_ns = residency_ns
        self.poll_time_limit = poll_time_limit
        self.needs_update = 1
        self.tick_wakeup = tick_wakeup


def run_sequence(name: str, seed: int, steps: int = 60) -> tuple[int, int]:
    """One CPU through `steps` idle periods under generated inputs, engine against oracle; returns
    (decisions compared, POLL time-outs after a skipped timer)."""
    rng = np.random.default_rng(seed)
    t = Table(str(rng.choice(["skx", "icx", "wsm"])))
    n = len(t.names)
    variant = releases.resolve("menu", name).variant
    oracle = KernelMenu(name)
    g = init_governor_state(1, n, 1)
    short = rng.random() < 0.7  # mostly the short intervals where the versions differ
    ktime_pushes = 0
    for _ in range(steps):
        enabled = [True] * n
        if rng.random() < 0.1:
            enabled[int(rng.integers(1, n))] = False
        latency_req = int(INF) if rng.random() < 0.85 else int(rng.choice([0, 2, 5, 20, 200]) * US)
        sleep_length = int(np.exp(rng.uniform(np.log(2 * US), np.log(60 * MS))))
        delta_tick = int(rng.integers(1, TICK_NS + 1))
        tick_stopped = bool(rng.random() < 0.3)
        nohz_full = bool(rng.random() < 0.5)
        want = oracle.select(t, enabled, latency_req if latency_req < INF else KTIME_MAX, sleep_length,
                             delta_tick, tick_stopped, nohz_full)
        got = select_state(
            GOV_MENU, variant, g, 0, t.res_ns, t.exit_ns, np.array(enabled), True, latency_req, sleep_length,
            delta_tick, tick_stopped, TICK_NS, 1, int(INF), nohz_full,
        )
        assert (int(got[0]), bool(got[1])) == want, (name, t.names, oracle.intervals)
        idx = want[0]
        if rng.random() < 0.1:
            oracle.last_residency_ns = 0  # -EBUSY: no reflect
            note_rejected(g, 0)
            continue
        poll_timeout = idx == 0 and rng.random() < 0.5
        ktime_pushes += poll_timeout and oracle.next_timer_ns == KTIME_MAX
        stay = int(rng.exponential(20 * US if short else 2 * MS)) + 1
        tick = rng.random() < 0.2
        oracle.reflect(idx, stay, tick, poll_timeout)
        reflect(GOV_MENU, g, 0, idx, stay, tick, poll_timeout)
    return steps, ktime_pushes


@pytest.mark.parametrize("name", releases.known_names("menu"))
def test_menu_is_each_trees_on_generated_sequences(name: str) -> None:
    # 150 sequences of 60 idle periods per name: tables, disabled states, PM QoS limits, timers,
    # tick states, nohz_full, -EBUSY entries, POLL time-outs and tick wake-ups drawn at random.
    pushes = 0
    for seed in range(150):
        pushes += run_sequence(name, seed)[1]
    assert pushes > 50  # POLL time-outs after a skipped timer were exercised


def test_every_release_differs_from_its_predecessor_somewhere() -> None:
    # Each step of the mainline walk changes a behaviour code, except the iowait removal
    # (no iowaiters in the model) and the one-state skip (a table of one state).
    walk = releases.mainline_walk("menu", "v6.12", "v7.0-rc2")
    assert walk[0] == "v6.12" and walk[-1] == "v7.0-rc2"
    variants = [releases.resolve("menu", x).variant for x in walk]
    same = [walk[i] for i in range(1, len(walk)) if variants[i] == variants[i - 1]]
    assert same == ["38f83090f515"]
    assert variant_field(releases.resolve("menu", "v6.6").variant, V_TYPICAL) == M.TYPICAL_UPSIDE


# ------------------------------------------------------------------------------------- names


def test_kernel_names_resolve_and_unknown_ones_list_the_known() -> None:
    assert releases.resolve("menu", None).name == "v6.19"
    assert releases.resolve("menu", "85975daeaa4").name == "85975daeaa4d"  # an 11-hex prefix
    assert releases.resolve("teo", None).name == "v6.19"
    stable = releases.resolve("menu", "v6.12.60").description
    assert "b39b62075ab4" in stable and "779b1a1cb13a" in stable
    with pytest.raises(ValueError, match="governor.kernel: unknown 'v6.7' for menu; known: v6.6, v6.12"):
        SimConfig.model_validate({"governor": {"name": "menu", "kernel": "v6.7"}})
    with pytest.raises(ValueError, match="unknown 'v6.7' for teo; known: v6.6, v6.12"):
        SimConfig.model_validate({"governor": {"name": "teo", "kernel": "v6.7"}})
    with pytest.raises(ValueError, match="oracle is not a kernel governor"):
        SimConfig.model_validate({"governor": {"name": "oracle", "kernel": "v6.6"}})


def test_the_walk_goes_commit_by_commit() -> None:
    walk = releases.mainline_walk("menu", "v6.18", "v7.0-rc1")
    assert walk == ["v6.18", "07d815701274", "80606f4eb8d7", "v7.0-rc1"]


# ------------------------------------------------------------------------------------ haltpoll


def kernel_haltpoll(events: list[tuple[int, bool]]) -> list[tuple[int, bool, int]]:
    """drivers/cpuidle/governors/haltpoll.c (torvalds/linux 2cc2c3cb54de; the same in behaviour
    through v7.0-rc2) on a sequence of (residency_ns, poll timed out) outcomes: each step's
    (state, stop_tick, poll_limit_ns) as haltpoll_select() returns and adjust_poll_limit() leaves."""
    poll_limit_ns, last_state_idx, poll_time_limit = 0, 0, False
    out = []
    for residency_ns, timed_out in events:
        stop_tick = True
        if poll_limit_ns == 0:
            idx = 1
        elif last_state_idx == 0:
            if poll_time_limit:
                idx = 1
            else:
                stop_tick, idx = False, 0
        else:
            stop_tick, idx = False, 0
        poll_time_limit = timed_out and idx == 0
        last_state_idx = idx  # haltpoll_reflect()
        if idx != 0:
            block_ns = residency_ns
            if poll_limit_ns < block_ns <= 200_000:
                val = max(poll_limit_ns * 2, 50_000)
                poll_limit_ns = min(val, 200_000)
            elif block_ns > 200_000:
                poll_limit_ns //= 2
        out.append((idx, stop_tick, poll_limit_ns))
    return out


def test_haltpoll_is_the_kernels_on_generated_sequences() -> None:
    # Halts of random lengths around the 50-200 us window and polls that time out or not: the
    # window grows from 0 to 50, 100, 200 us after short halts and halves after long ones; a
    # timed-out poll makes the next entry halt.
    from engine.governors.common import G_HP_POLL_LIMIT_NS, GOV_HALTPOLL

    t = Table("skx")
    variant = releases.resolve("haltpoll", None).variant
    rng = np.random.default_rng(7)
    for _ in range(200):
        lengths = [10_000, 60_000, 150_000, 199_000, 250_000, 900_000]
        events = [(int(rng.choice(lengths)), bool(rng.random() < 0.4)) for _ in range(30)]
        want = kernel_haltpoll(events)
        g = init_governor_state(1, 4, 1)
        g[0, 0] = 0  # dev->last_state_idx starts at 0 (haltpoll_enable_device() sets only the window)
        for (residency_ns, timed_out), expected in zip(events, want, strict=True):
            idx, stop = select_state(
                GOV_HALTPOLL, variant, g, 0, t.res_ns, t.exit_ns, t.enabled, True, int(INF), 10 * MS, 2 * MS,
                False, TICK_NS, 1, int(INF), False,
            )
            reflect(GOV_HALTPOLL, g, 0, int(idx), residency_ns, False, timed_out and int(idx) == 0)
            assert (int(idx), bool(stop), int(g[0, G_HP_POLL_LIMIT_NS])) == expected, events


def test_names_take_their_place_in_the_merged_history() -> None:
    names = ["v6.14", "v6.6", "16c8d7586c19", "v6.12.60", "v6.13", "7bcc8bbeca35", "425b75364576", "v7.0-rc1"]
    ordered = sorted(names, key=lambda n: releases.history_position("teo", n))
    # A commit before the tag that has it last; a stable release and a side commit just after
    # their base; the default sits where v6.19 does.
    assert ordered == [
        "v6.6", "v6.12.60", "v6.13", "425b75364576", "16c8d7586c19", "v6.14", "7bcc8bbeca35", "v7.0-rc1",
    ]
    assert releases.history_position("teo", None) == releases.history_position("teo", "v6.19")


def test_the_steps_between_two_trees_are_the_governors_and_the_cores() -> None:
    added, absent = releases.steps_between("teo", "v6.13", "v6.14")
    assert [s.commit for s in added][:2] == ["425b75364576", "92ce5c07b7a1"] and len(added) == 10
    assert absent == [] and all(s.file == "teo" for s in added)
    # menu's commits are not teo's; v6.12.60's backports are what v6.13 lacks, and the other way
    # round v6.13 has nothing v6.12.60 lacks (its one menu commit is backported there).
    assert releases.steps_between("teo", "v6.13", "v6.15")[0] == added
    added, absent = releases.steps_between("menu", "v6.13", "v6.12.60")
    assert [s.commit for s in added] == ["779b1a1cb13a", "db86f55bf81a"] and absent == []
    added, absent = releases.steps_between("menu", "v6.19", "v6.6")
    assert added == [] and "85975daeaa4d" in [s.commit for s in absent]
    # ladder has no commits of its own: only the core's.
    (step,) = releases.steps_between("ladder", "v6.19", "v7.0-rc2")[0]
    assert step.file == "cpuidle" and step.commit is None

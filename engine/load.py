"""The idle load of a real machine (`wakeups.load`): its arrivals, drawn before the run.

Each load class (`config.LoadClass`) gives its CPUs long governor-visible timers, governor-
invisible wake-ups in bursts, follow-up chains after every wake-up, and a run time per wake-up.
Everything is drawn here, up front, from per-CPU generators (`engine.streams`): CPU c's streams
are the words of `SeedSequence(seed)`'s child c that follow the kernel's own N_SOURCES, one
stream per (class, source), so a CPU's arrivals depend on neither the number of CPUs nor the
other classes, and the same seed gives common random numbers across load parameters (what a fit
needs to compare two parameter sets).

The simulation gets these from here (`LoadArrivals`): timer rows, each CPU's expiries of one
timer as a sorted sequence (the kernel re-arms the timer with the next one, and the governor sees
it), and the governor-invisible wake-ups merged per CPU with their run time each (the kernel
takes them like device interrupts, with the interrupt handler time of `wakeups.interrupts`),
and a third: the spans where a latency hold lowers the governor's latency limit (`HeldLimits`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from engine.config import SimConfig
from engine.jit import compiled
from engine.load_config import (
    MAX_LOAD_CLASSES,
    MAX_LOAD_TIMERS,
    BurstSource,
    FollowUps,
    LatencyHolds,
    LoadClass,
    LongTimer,
    PollingWork,
)
from engine.streams import N_SOURCES, exponential, normal_quantile, stream_seeds, uniform

INF_NS = np.iinfo(np.int64).max  # no limit held

# Per class: one stream per timer slot, then the bursts, the follow-ups and the run times.
_STREAM_BURSTS = MAX_LOAD_TIMERS
_STREAM_FOLLOW = MAX_LOAD_TIMERS + 1
_STREAM_RUN = MAX_LOAD_TIMERS + 2
STREAMS_PER_CLASS = MAX_LOAD_TIMERS + 3
N_LOAD_STREAMS = MAX_LOAD_CLASSES * STREAMS_PER_CLASS
# Polling work (`LoadClass.polls`): one stream per class after all of the above (stream_seeds'
# first words do not change when more are asked for, so the other streams stay as they were).
_STREAM_POLLS = N_LOAD_STREAMS
# Latency holds (`LoadClass.latency_holds`): one more per class, after those; a system-wide
# request draws its holds from CPU 0's word of it, the same for every CPU of the class.
_STREAM_HOLDS = N_LOAD_STREAMS + MAX_LOAD_CLASSES
N_ALL_LOAD_STREAMS = N_LOAD_STREAMS + 2 * MAX_LOAD_CLASSES

# kernel/time/timer.c: LVL_CLK_SHIFT = 3, LVL_BITS = 6; level n's buckets are LVL_GRAN(n) = 8^n
# jiffies wide and hold timeouts from LVL_START(n) = 63 << 3(n-1) jiffies (calc_wheel_index()).
_LVL_CLK_SHIFT = 3
_LVL_SIZE = 64
_LVL_DEPTH = 9  # HZ > 100


class TimerRow(NamedTuple):
    """One load timer on the CPUs of its class: every CPU's expiries, back to back."""

    times: np.ndarray  # int ns, CPU c's from off[c] to off[c + 1], increasing
    off: np.ndarray
    handler_ns: int
    work_ns: int
    timer_wheel: bool  # a timer-wheel timer keeps the tick; an hrtimer only without high-res timers


class HeldLimits(NamedTuple):
    """The latency limit the load's holds set, per CPU: from start[i] to end[i] (exclusive), the
    limit limit_ns[i]; CPU c's spans are off[c] to off[c + 1], increasing and disjoint."""

    start: np.ndarray
    end: np.ndarray
    limit_ns: np.ndarray
    off: np.ndarray


class LoadArrivals(NamedTuple):
    """What the load adds to a run."""

    timers: list[TimerRow]
    wake_t: np.ndarray  # governor-invisible wake-ups of every CPU, back to back, sorted per CPU
    wake_work: np.ndarray  # the CPU time each one runs after its handler (ns)
    wake_off: np.ndarray  # CPU c's are wake_t[wake_off[c]:wake_off[c + 1]]
    holds: HeldLimits


def load_seeds(seed: int, n_cpus: int) -> np.ndarray:
    """The load's generators, shape (n_cpus, N_ALL_LOAD_STREAMS): class k's stream j is column
    k * STREAMS_PER_CLASS + j; its polling work's is column _STREAM_POLLS + k, its latency
    holds' _STREAM_HOLDS + k."""
    return stream_seeds(seed, n_cpus, N_SOURCES + N_ALL_LOAD_STREAMS)[:, N_SOURCES:]


def class_cpus(load_class: LoadClass, n_cpus: int) -> np.ndarray:
    """A boolean mask of the class's CPUs."""
    mask = np.zeros(n_cpus, dtype=np.bool_)
    if load_class.cpus == "all":
        mask[:] = True
    else:
        mask[np.array(sorted(set(load_class.cpus)), dtype=np.int64)] = True
    return mask


def draw_load(config: SimConfig, n_cpus: int, t_end: int) -> LoadArrivals:
    """Every arrival of `config.wakeups.load` in [0, t_end) on CPUs 0..n_cpus-1."""
    seeds = load_seeds(config.seed, n_cpus)
    jiffy_ns = 1_000_000_000 // config.wakeups.tick.hz
    rows: list[TimerRow] = []
    wake_cpu: list[np.ndarray] = []
    wake_t: list[np.ndarray] = []
    wake_work: list[np.ndarray] = []
    held: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []  # mask, starts, ends, limit
    for k, load_class in enumerate(config.wakeups.load):
        mask = class_cpus(load_class, n_cpus)
        streams = seeds[:, k * STREAMS_PER_CLASS : (k + 1) * STREAMS_PER_CLASS]
        chain_from_t: list[np.ndarray] = []
        chain_from_off: list[np.ndarray] = []
        for j, timer in enumerate(load_class.timers):
            times, off = _draw_timer(streams[:, j], mask, t_end, timer, jiffy_ns)
            rows.append(
                TimerRow(
                    times,
                    off,
                    int(round(timer.handler_us * 1000)),
                    int(round(timer.work_us * 1000)),
                    timer.kind == "timer_wheel",
                )
            )
            chain_from_t.append(times)
            chain_from_off.append(off)
        invisible_t, invisible_off = _empty(n_cpus)
        if load_class.bursts is not None:
            invisible_t, invisible_off = _draw_bursts(
                streams[:, _STREAM_BURSTS], mask, t_end, load_class.bursts
            )
        chain_from_t.append(invisible_t)
        chain_from_off.append(invisible_off)
        f = load_class.follow_ups
        if f is not None and f.probability > 0:
            base_t, base_off = _merge_times(chain_from_t, chain_from_off)
            follow_t, follow_off = _draw_follow_ups(streams[:, _STREAM_FOLLOW], base_t, base_off, t_end, f)
            invisible_t, invisible_off = _merge_times([invisible_t, follow_t], [invisible_off, follow_off])
        work = np.empty(len(invisible_t), dtype=np.int64)
        run = load_class.run_time
        _run_times(streams[:, _STREAM_RUN].copy(), invisible_off, run.median_us * 1000.0, run.sigma, work)
        wake_cpu.append(np.repeat(np.arange(n_cpus, dtype=np.int64), np.diff(invisible_off)))
        wake_t.append(invisible_t)
        wake_work.append(work)
        if load_class.latency_holds is not None:  # after the draws above: they stay as they were
            h = load_class.latency_holds
            starts, ends = _draw_holds(seeds[0, _STREAM_HOLDS + k], t_end, h)
            held.append((mask, starts, ends, int(round(h.limit_us * 1000))))
            # wake_up_all_idle_cpus() at each change: one wake-up per start and end, no run time.
            edges = np.sort(np.concatenate([starts, ends[ends < t_end]]))
            cpus = np.flatnonzero(mask)
            wake_cpu.append(np.repeat(cpus, len(edges)))
            wake_t.append(np.tile(edges, len(cpus)))
            wake_work.append(np.zeros(len(edges) * len(cpus), dtype=np.int64))
        if load_class.polls is not None:  # after the class's other rows: they stay as they were
            rows += _draw_polls(seeds[:, _STREAM_POLLS + k], mask, t_end, load_class.polls, jiffy_ns)
    holds = held_limits(held, n_cpus)
    if not wake_t:
        t, o = _empty(n_cpus)
        return LoadArrivals(rows, t, np.empty(0, dtype=np.int64), o, holds)
    cpu = np.concatenate(wake_cpu)
    times = np.concatenate(wake_t)
    works = np.concatenate(wake_work)
    order = np.lexsort((times, cpu))  # stable: classes in order on equal times
    off = np.searchsorted(cpu[order], np.arange(n_cpus + 1)).astype(np.int64)
    return LoadArrivals(rows, times[order], works[order], off, holds)


def held_limits(held: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]], n_cpus: int) -> HeldLimits:
    """Each CPU's spans of a held latency limit: where classes' holds overlap on a CPU, the
    lowest request holds (pm_qos_update_target() keeps the minimum of the requests)."""
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    limits: list[np.ndarray] = []
    counts = np.zeros(n_cpus, dtype=np.int64)
    groups: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for c in range(n_cpus):
        mine = tuple(j for j, h in enumerate(held) if h[0][c])
        if not mine:
            continue
        if mine not in groups:
            groups[mine] = _union_of_holds([held[j] for j in mine])
        s, e, lim = groups[mine]
        starts.append(s)
        ends.append(e)
        limits.append(lim)
        counts[c] = len(s)
    off = np.zeros(n_cpus + 1, dtype=np.int64)
    off[1:] = np.cumsum(counts)
    if not starts:
        empty = np.empty(0, dtype=np.int64)
        return HeldLimits(empty, empty.copy(), empty.copy(), off)
    return HeldLimits(np.concatenate(starts), np.concatenate(ends), np.concatenate(limits), off)


def _union_of_holds(
    held: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint spans where some hold is on, each with the lowest limit held over it."""
    if len(held) == 1:
        _, s, e, lim = held[0]
        return s, e, np.full(len(s), lim, dtype=np.int64)
    edges = np.unique(np.concatenate([a for _, s, e, _ in held for a in (s, e)]))
    lowest = np.full(len(edges), INF_NS, dtype=np.int64)
    for _, s, e, lim in held:
        i = np.searchsorted(s, edges, side="right") - 1
        on = (i >= 0) & (e[np.maximum(i, 0)] > edges)
        lowest = np.where(on, np.minimum(lowest, lim), lowest)
    keep = lowest[:-1] < INF_NS  # span [edges[i], edges[i + 1]) held at lowest[i]
    return edges[:-1][keep], edges[1:][keep], lowest[:-1][keep]


def merge_wakeups(
    t: np.ndarray, off: np.ndarray, load: LoadArrivals
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The device interrupt stream (t, off) with the load's invisible wake-ups merged in, per CPU.

    Returns (times, work, offsets); the device interrupts' work is -1 (the kernel draws it as
    `wakeups.interrupts` says); on equal times a device interrupt comes first.
    """
    n = len(off) - 1
    cpus = np.arange(n, dtype=np.int64)
    cpu = np.concatenate([np.repeat(cpus, np.diff(off)), np.repeat(cpus, np.diff(load.wake_off))])
    times = np.concatenate([t, load.wake_t])
    work = np.concatenate([np.full(len(t), -1, dtype=np.int64), load.wake_work])
    order = np.lexsort((times, cpu))
    merged_off = np.searchsorted(cpu[order], np.arange(n + 1)).astype(np.int64)
    return times[order], work[order], merged_off


# ------------------------------------------------------------------------------------- helpers


def _draw_timer(
    stream: np.ndarray, mask: np.ndarray, t_end: int, timer: LongTimer, jiffy_ns: int
) -> tuple[np.ndarray, np.ndarray]:
    wheel_jiffy_ns = jiffy_ns if timer.kind == "timer_wheel" else 0

    def fill(times: np.ndarray, off: np.ndarray) -> bool:
        period_ns = timer.period_us * 1000.0
        return bool(_timers(stream.copy(), mask, t_end, period_ns, timer.jitter, wheel_jiffy_ns, times, off))

    return _grow(fill, len(mask), _room(mask, t_end, 1e6 / timer.period_us))


def _draw_bursts(
    stream: np.ndarray, mask: np.ndarray, t_end: int, b: BurstSource
) -> tuple[np.ndarray, np.ndarray]:
    quiet_ns, burst_ns = b.quiet_mean_ms * 1e6, b.burst_mean_us * 1e3
    mean_hz = (b.quiet_rate_hz * quiet_ns + b.burst_rate_hz * burst_ns) / (quiet_ns + burst_ns)

    def fill(times: np.ndarray, off: np.ndarray) -> bool:
        return bool(
            _bursts(
                stream.copy(), mask, t_end, b.quiet_rate_hz, b.burst_rate_hz, quiet_ns, burst_ns, times, off
            )
        )

    return _grow(fill, len(mask), _room(mask, t_end, mean_hz))


def _draw_follow_ups(
    stream: np.ndarray, base_t: np.ndarray, base_off: np.ndarray, t_end: int, f: FollowUps
) -> tuple[np.ndarray, np.ndarray]:
    log_min, log_max = math.log(f.delay_min_us * 1000.0), math.log(f.delay_max_us * 1000.0)

    def fill(times: np.ndarray, off: np.ndarray) -> bool:
        return bool(
            _follow_ups(stream.copy(), base_t, base_off, t_end, f.probability, log_min, log_max, times, off)
        )

    expected = np.diff(base_off).astype(np.float64) * f.probability / (1.0 - f.probability)
    return _grow(fill, len(base_off) - 1, int((expected + 8.0 * np.sqrt(expected) + 32.0).sum()))


def _draw_polls(
    stream: np.ndarray, mask: np.ndarray, t_end: int, polls: PollingWork, jiffy_ns: int
) -> list[TimerRow]:
    """Polling work's two timer rows: the delayed work's timer (a timer-wheel timer) and the
    sleeps between reads (hrtimers)."""
    handler_ns = int(round(polls.handler_us * 1000))
    work_ns = int(round(polls.work_us * 1000))
    q = polls.sleeps_mean / (1.0 + polls.sleeps_mean)  # another sleep after a read
    starts_room = _room(mask, t_end, 1e6 / (polls.period_us + polls.sleep_us))
    sleeps_room = _room(mask, t_end, polls.expected_rate_hz())
    while True:
        starts = np.empty(starts_room, dtype=np.int64)
        sleeps = np.empty(sleeps_room, dtype=np.int64)
        starts_off = np.zeros(len(mask) + 1, dtype=np.int64)
        sleeps_off = np.zeros(len(mask) + 1, dtype=np.int64)
        done = _polls(
            stream.copy(), mask, t_end, polls.period_us * 1000.0, polls.jitter, jiffy_ns,
            int(round(polls.sleep_us * 1000)), handler_ns + work_ns, q,
            starts, starts_off, sleeps, sleeps_off,
        )  # fmt: skip
        if done == 0:
            break
        starts_room *= 2 if done & 1 else 1
        sleeps_room *= 2 if done & 2 else 1
    return [
        TimerRow(starts[: starts_off[-1]], starts_off, handler_ns, work_ns, True),
        TimerRow(sleeps[: sleeps_off[-1]], sleeps_off, handler_ns, work_ns, False),
    ]


def _draw_holds(word: np.uint64, t_end: int, h: LatencyHolds) -> tuple[np.ndarray, np.ndarray]:
    """The holds' starts and ends in [0, t_end) (an end may be t_end: held to the run's end)."""
    gap_ns, hold_ns = h.gap_ms * 1e6, h.hold_us * 1e3
    room = int(2.0 * t_end / (gap_ns + hold_ns)) + 16
    while True:
        starts = np.empty(room, dtype=np.int64)
        ends = np.empty(room, dtype=np.int64)
        n = _holds(np.array([word], dtype=np.uint64), t_end, gap_ns, hold_ns, starts, ends)
        if n >= 0:
            return starts[:n], ends[:n]
        room *= 2


def _empty(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.empty(0, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)


def _room(mask: np.ndarray, t_end: int, rate_hz: float) -> int:
    """Room for a Poisson-like stream on the masked CPUs: the mean plus 8 sd, each."""
    expected = rate_hz * t_end / 1e9
    return int(mask.sum() * (expected + 8.0 * math.sqrt(expected) + 32.0))


def _grow(fill: Callable[[np.ndarray, np.ndarray], bool], n: int, room: int) -> tuple[np.ndarray, np.ndarray]:
    """fill(times, off) into ever larger buffers until everything fits (it says so)."""
    while True:
        times = np.empty(room, dtype=np.int64)
        off = np.zeros(n + 1, dtype=np.int64)
        if fill(times, off):
            return times[: off[-1]], off
        room *= 2


def _merge_times(ts: list[np.ndarray], offs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per-CPU streams merged per CPU, sorted (stable: earlier streams first on equal times)."""
    n = len(offs[0]) - 1
    cpu = np.concatenate([np.repeat(np.arange(n, dtype=np.int64), np.diff(o)) for o in offs])
    times = np.concatenate(ts)
    order = np.lexsort((times, cpu))
    return times[order], np.searchsorted(cpu[order], np.arange(n + 1)).astype(np.int64)


# ---------------------------------------------------------------------------- compiled draws


@compiled()
def _timers(
    state: np.ndarray,
    mask: np.ndarray,
    t_end: int,
    period_ns: float,
    jitter: float,
    wheel_jiffy_ns: int,
    times: np.ndarray,
    off: np.ndarray,
) -> bool:
    """Expiries of one jittered timer on every masked CPU; wheel_jiffy_ns > 0 rounds each one
    up to its timer-wheel bucket (calc_index(): `(expires >> LVL_SHIFT(lvl)) + 1`, shifted back)."""
    n = state.shape[0]
    room = times.shape[0]
    k = 0
    for c in range(n):
        off[c] = k
        if not mask[c]:
            continue
        t = int(uniform(state, c) * period_ns)  # the phase of the first expiry
        while t < t_end:
            if k >= room:
                return False
            times[k] = t
            k += 1
            gap = period_ns * (1.0 + jitter * (2.0 * uniform(state, c) - 1.0))
            nxt = t + max(int(gap), 1)
            if wheel_jiffy_ns > 0:
                delta = max(int(gap) // wheel_jiffy_ns, 1)
                lvl = 0
                while lvl < _LVL_DEPTH - 1 and delta >= (_LVL_SIZE - 1) << (lvl * _LVL_CLK_SHIFT):
                    lvl += 1
                shift = lvl * _LVL_CLK_SHIFT
                expires = t // wheel_jiffy_ns + delta
                nxt = (((expires >> shift) + 1) << shift) * wheel_jiffy_ns
            t = nxt
    off[n] = k
    return True


@compiled(inline=True)
def _wheel_expiry(armed: int, gap: float, jiffy_ns: int) -> int:
    """A timer-wheel timer armed at `armed` for `gap` ns: its expiry rounded up to its bucket
    (calc_index(): `(expires >> LVL_SHIFT(lvl)) + 1`, shifted back)."""
    delta = max(int(gap) // jiffy_ns, 1)
    lvl = 0
    while lvl < _LVL_DEPTH - 1 and delta >= (_LVL_SIZE - 1) << (lvl * _LVL_CLK_SHIFT):
        lvl += 1
    shift = lvl * _LVL_CLK_SHIFT
    expires = armed // jiffy_ns + delta
    return (((expires >> shift) + 1) << shift) * jiffy_ns


@compiled()
def _polls(
    state: np.ndarray,
    mask: np.ndarray,
    t_end: int,
    period_ns: float,
    jitter: float,
    jiffy_ns: int,
    sleep_ns: int,
    step_ns: int,
    q: float,
    starts: np.ndarray,
    starts_off: np.ndarray,
    sleeps: np.ndarray,
    sleeps_off: np.ndarray,
) -> int:
    """Polling episodes on every masked CPU: the delayed work's expiry (the first at a uniform
    phase of the period, then re-queued `period_ns` jittered after the episode's last read, on
    the wheel), then sleeps of `sleep_ns` each `step_ns` after the previous expiry, one more with
    probability q after each read. Returns 0, or which buffers were too small (1: starts,
    2: sleeps, both bits for both)."""
    n = state.shape[0]
    k = 0
    j = 0
    full = 0
    for c in range(n):
        starts_off[c] = k
        sleeps_off[c] = j
        if not mask[c]:
            continue
        t = int(uniform(state, c) * period_ns)
        while t < t_end:
            if k >= starts.shape[0]:
                full |= 1
                break
            starts[k] = t
            k += 1
            s = t
            while uniform(state, c) < q:
                s += step_ns + sleep_ns
                if s >= t_end:
                    break
                if j >= sleeps.shape[0]:
                    full |= 2
                    break
                sleeps[j] = s
                j += 1
            if full:
                break
            gap = period_ns * (1.0 + jitter * (2.0 * uniform(state, c) - 1.0))
            t = _wheel_expiry(s + step_ns, gap, jiffy_ns)
        if full:
            break
    starts_off[n] = k
    sleeps_off[n] = j
    return full


@compiled()
def _bursts(
    state: np.ndarray,
    mask: np.ndarray,
    t_end: int,
    quiet_hz: float,
    burst_hz: float,
    quiet_mean_ns: float,
    burst_mean_ns: float,
    times: np.ndarray,
    off: np.ndarray,
) -> bool:
    """A two-phase Markov-modulated Poisson process on every masked CPU."""
    n = state.shape[0]
    room = times.shape[0]
    p_burst = burst_mean_ns / (burst_mean_ns + quiet_mean_ns)
    k = 0
    for c in range(n):
        off[c] = k
        if not mask[c]:
            continue
        in_burst = uniform(state, c) < p_burst
        t = 0.0
        while t < t_end:
            phase_end = t + exponential(state, c, burst_mean_ns if in_burst else quiet_mean_ns)
            rate = burst_hz if in_burst else quiet_hz
            if rate > 0.0:
                a = t + exponential(state, c, 1e9 / rate)
                while a < phase_end and a < t_end:
                    if k >= room:
                        return False
                    times[k] = int(a)
                    k += 1
                    a += exponential(state, c, 1e9 / rate)
            t = phase_end
            in_burst = not in_burst
    off[n] = k
    return True


@compiled()
def _follow_ups(
    state: np.ndarray,
    base_t: np.ndarray,
    base_off: np.ndarray,
    t_end: int,
    probability: float,
    log_min_ns: float,
    log_max_ns: float,
    times: np.ndarray,
    off: np.ndarray,
) -> bool:
    """Each base wake-up's chain: another after a log-uniform delay with `probability`, and so on.

    The chains of one CPU are emitted in base order, each increasing; the caller sorts."""
    n = base_off.shape[0] - 1
    room = times.shape[0]
    k = 0
    for c in range(n):
        off[c] = k
        for i in range(base_off[c], base_off[c + 1]):
            t = base_t[i]
            while uniform(state, c) < probability:
                t += int(math.exp(log_min_ns + (log_max_ns - log_min_ns) * uniform(state, c)))
                if t >= t_end:
                    break
                if k >= room:
                    return False
                times[k] = t
                k += 1
    off[n] = k
    return True


@compiled()
def _holds(
    state: np.ndarray, t_end: int, gap_ns: float, hold_ns: float, starts: np.ndarray, ends: np.ndarray
) -> int:
    """Alternating gaps and holds from 0, starting in a gap (a hold at a stationary phase would
    rarely matter and ties the first one to the run's start); -1 when the buffers are too small."""
    k = 0
    t = exponential(state, 0, gap_ns)
    while t < t_end:
        if k >= starts.shape[0]:
            return -1
        end = t + max(exponential(state, 0, hold_ns), 1.0)
        starts[k] = int(t)
        ends[k] = min(int(end), t_end)
        k += 1
        t = end + exponential(state, 0, gap_ns)
    return k


@compiled()
def _run_times(state: np.ndarray, off: np.ndarray, median_ns: float, sigma: float, out: np.ndarray) -> None:
    """A log-normal run time per wake-up (CPU c's from its own stream)."""
    for c in range(off.shape[0] - 1):
        for i in range(off[c], off[c + 1]):
            if sigma <= 0.0:
                out[i] = int(median_ns)
            else:
                u = uniform(state, c) + 0.5 / 9007199254740992.0  # (0, 1): the quantile is finite
                out[i] = int(median_ns * math.exp(sigma * normal_quantile(u)))

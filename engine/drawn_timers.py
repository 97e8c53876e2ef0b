"""The expiries of timers whose intervals are drawn (`TimerSource.interval`), drawn before the run.

Each such timer becomes a timer row as the idle load's timers are (`engine.load.TimerRow`): every
CPU's expiries as a sorted sequence that the kernel re-arms the timer with, one after the other,
and that the governor sees. Expiry k + 1 is expiry k plus `rearm_after_us` plus a distance drawn
from the interval's quantile function (a uniform range is its two-point case); the first is one
drawn distance after the start. Config timer k of CPU c draws from its own stream, the word of
`SeedSequence(seed)`'s child c after the kernel's and the load's streams (`engine.streams`), so
adding a drawn timer changes no other draw: a config without one runs exactly as before.
"""

from __future__ import annotations

import numpy as np

from engine.config import SimConfig, TimerSource
from engine.jit import compiled
from engine.load import N_LOAD_STREAMS, TimerRow, _grow
from engine.streams import N_SOURCES, stream_seeds, uniform


def drawn_timer_rows(config: SimConfig, n_cpus: int, t_end: int) -> dict[int, TimerRow]:
    """Per config timer with a drawn interval (by its index in `wakeups.timers`), its expiries."""
    timers = config.wakeups.timers
    drawn = [k for k, t in enumerate(timers) if t.interval is not None]
    if not drawn:
        return {}
    first = N_SOURCES + N_LOAD_STREAMS
    seeds = stream_seeds(config.seed, n_cpus, first + len(timers))
    return {k: _row(seeds[:, first + k].copy(), timers[k], n_cpus, t_end) for k in drawn}


def _row(stream: np.ndarray, timer: TimerSource, n_cpus: int, t_end: int) -> TimerRow:
    interval = timer.interval
    assert interval is not None
    mask = np.zeros(n_cpus, dtype=np.bool_)
    if timer.cpus == "all":
        mask[:] = True
    else:
        mask[np.array(sorted(set(timer.cpus)), dtype=np.int64)] = True
    quantiles_ns = np.array(interval.quantiles(), dtype=np.float64) * 1000.0
    rearm_ns = interval.rearm_after_us * 1000.0
    mean_ns = max(interval.mean_us() * 1000.0, 1.0)
    room = int(mask.sum() * (t_end / mean_ns + 32.0))

    def fill(times: np.ndarray, off: np.ndarray) -> bool:
        return bool(_expiries(stream.copy(), mask, t_end, rearm_ns, quantiles_ns, times, off))

    times, off = _grow(fill, n_cpus, room)
    return TimerRow(
        times, off, int(round(timer.handler_us * 1000)), int(round(timer.work_us * 1000)),
        timer.kind == "timer_wheel",
    )  # fmt: skip


@compiled(inline=True)
def _draw(state: np.ndarray, c: int, quantiles_ns: np.ndarray) -> float:
    """A distance from the piecewise-linear quantile function (inverse transform sampling)."""
    steps = quantiles_ns.shape[0] - 1
    place = uniform(state, c) * steps
    i = min(int(place), steps - 1)
    return float(quantiles_ns[i] + (quantiles_ns[i + 1] - quantiles_ns[i]) * (place - i))


@compiled()
def _expiries(
    state: np.ndarray,
    mask: np.ndarray,
    t_end: int,
    rearm_ns: float,
    quantiles_ns: np.ndarray,
    times: np.ndarray,
    off: np.ndarray,
) -> bool:
    """Every masked CPU's expiries in [0, t_end): each the previous one, plus the rearm delay, plus a
    drawn distance (at least 1 ns on)."""
    n = state.shape[0]
    room = times.shape[0]
    k = 0
    for c in range(n):
        off[c] = k
        if not mask[c]:
            continue
        t = max(int(_draw(state, c, quantiles_ns)), 1)
        while t < t_end:
            if k >= room:
                return False
            times[k] = t
            k += 1
            t += max(int(rearm_ns + _draw(state, c, quantiles_ns)), 1)
    off[n] = k
    return True

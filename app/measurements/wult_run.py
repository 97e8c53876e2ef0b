"""wult's experiment as a run: the timer that reproduces its delayed events, on the CPU it measured.

What wult does (intel/wult `drivers/idle/wult/main.c`, `docs/wult-start.rst`): a kernel thread bound
to the measured CPU (`--cpu`, default CPU 0) arms one delayed event at a time, each at a launch
distance drawn uniformly from the `--ldist` range (`pick_ldist()`), and arms the next only after
the previous event happened and its datapoint was sent (`armer_kthread()`). The run gives that CPU
alone a timer with a drawn interval (`engine.timer_interval`), and leaves the others idle.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from engine import Platform

# --ldist's default range, [0, 4 ms]: 0 means the event source's smallest, and the driver's floor
# is 1 us (DEFAULT_LDIST_FROM, 1000 ns).
_WULT_DEFAULT_LDIST_US = (1.0, 4000.0)
_WULT_DEFAULT_CPU = 0  # `--cpu`: "default is CPU 0"
# A guess, not measured: the armer thread's run after each wake-up (checks, sending the datapoint)
# before it arms the next event; the CPU is busy for it.
_ARMER_WORK_US = 5.0
# ~1000 wake-ups, within 50..2000 simulated ms (one CPU busy, the others idle: a cheap run).
_WULT_WAKEUPS = 1000
_MIN_MS, _MAX_MS = 50.0, 2000.0


def cpu_count(table: Platform) -> int:
    """The platform's logical CPUs in its own layout (an imported machine's online CPUs)."""
    t = table.topology
    if t.cpus_per_socket:
        return sum(t.cpus_per_socket)
    return t.sockets * t.cores_per_socket * t.threads_per_core


def measured_cpu(cpu: int | None, n_cpus: int) -> tuple[int, str]:
    """The CPU carrying wult's timer, and the note saying where it comes from."""
    if cpu is None:
        return _WULT_DEFAULT_CPU, "info.yml names no measured CPU: CPU 0 carries the timer (wult's default)"
    if cpu >= n_cpus:
        return _WULT_DEFAULT_CPU, f"the measured CPU {cpu} is beyond the platform's {n_cpus}: CPU 0 instead"
    return cpu, f"CPU {cpu} alone carries wult's timer (info.yml's measured CPU; assumed numbered as there)"


def uniformity_distance(quantiles: Sequence[float]) -> float:
    """Kolmogorov-Smirnov distance between the distribution with these evenly spaced quantiles and
    the uniform one over their range (0 for a single value)."""
    lo, hi = quantiles[0], quantiles[-1]
    if hi <= lo:
        return 0.0
    steps = len(quantiles) - 1
    return max(abs(i / steps - (q - lo) / (hi - lo)) for i, q in enumerate(quantiles))


def wult_timer(
    view: dict[str, Any], quantiles: list[float] | None
) -> tuple[dict[str, Any], float, list[str]]:
    """wult's timer as a config timer (its cpus left to the caller), the run's duration, and notes,
    from a wult measurement's view and its LDist percentiles (us; None without an LDist column).

    Each launch distance is drawn as wult draws it, uniformly over the measured LDist's range (its
    smallest and largest values: wult's --ldist range is not in the result), unless the measured
    distribution is clearly not uniform (Kolmogorov-Smirnov distance above its 5% critical value,
    1.36 / sqrt(n), and above 0.05), then from LDist's measured percentiles. Each is armed after the
    previous wake-up: expiry + the median measured WakeLatency + the armer's work (a guess) + LDist.
    """
    notes = []
    if quantiles is None:
        lo, hi = _WULT_DEFAULT_LDIST_US
        interval: dict[str, Any] = {"distribution": "uniform", "min_us": lo, "max_us": hi}
        notes.append(f"no LDist column: launch distances uniform in {lo:g}..{hi:g} us, wult's default range")
    else:
        n = int(view["count"])
        distance = uniformity_distance(quantiles)
        critical = max(0.05, 1.36 / math.sqrt(max(n, 1)))
        lo, hi = quantiles[0], quantiles[-1]
        if distance > critical:
            interval = {"distribution": "quantiles", "quantiles_us": quantiles}
            notes.append(
                f"launch distances resampled from the measured LDist's percentiles ({lo:g}..{hi:g} us): "
                f"not uniform over its range (Kolmogorov-Smirnov distance {distance:.2f} > {critical:.2f})"
            )
        else:
            interval = {"distribution": "uniform", "min_us": lo, "max_us": hi}
            notes.append(
                f"launch distances uniform in {lo:g}..{hi:g} us, as wult draws them: the measured LDist's "
                f"smallest and largest (its Kolmogorov-Smirnov distance from uniform, {distance:.2f}, is "
                f"within the {critical:.2f} chance allows)"
            )
    wake = (view.get("overall") or {}).get("WakeLatency") or {}
    wake_us = float(wake.get("p50_ns") or 0.0) / 1000.0
    interval["rearm_after_us"] = round(wake_us + _ARMER_WORK_US, 3)
    notes.append(
        f"each event armed after the previous wake-up: {wake_us:g} us (the measured median WakeLatency) "
        f"plus {_ARMER_WORK_US:g} us of the armer thread's work (a guess, not measured) after each expiry"
    )
    timer = {"interval": interval, "work_us": _ARMER_WORK_US, "kind": "hrtimer"}
    mean_us = interval["rearm_after_us"] + (
        (lo + hi) / 2 if interval["distribution"] == "uniform" else statistics.fmean(quantiles or [0.0])
    )
    duration = min(_MAX_MS, max(_MIN_MS, mean_us * _WULT_WAKEUPS / 1000.0))
    notes.append(f"{duration:g} simulated ms: about {duration * 1000 / max(mean_us, 1e-3):,.0f} wake-ups")
    return timer, round(duration, 3), notes

"""Fit a C-state's exit latency from measured samples, in the engine's log-normal family.

The engine draws a state's hardware exit latency as median * exp(sigma * Z), Z standard normal,
with the table's worst case at the 99.99th percentile: sigma = ln(worst / median) / Z_9999
(engine/simulate.py, engine/kernel/). A fit therefore yields the same two numbers, the median
and the 99.99th percentile, from wult's samples of one state (one class of wake-ups: see
app/measurements/wult.py for which samples measure the exit). No I/O here: arrays in, numbers out.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict

from engine.kernel.cores import Z_9999
from engine.platforms import CState, Param

# Below this many samples neither the median nor the spread means much.
MIN_SAMPLES = 100
# A 99.99th percentile read straight from n samples rests on the n * 1e-4 largest: 10 of them at
# 10^5. With fewer, the tail is extrapolated from the body of the distribution (and said so).
P9999_SAMPLES = 100_000
# Phi^-1(0.9): the body's spread is read between the 10th and 90th percentiles, which a few
# outliers (an SMI, a late interrupt) do not move.
_Z_90 = 1.2815515655446004


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExitLatencyFit(_Model):
    """A state's exit latency as the engine's family describes it: median and 99.99th percentile."""

    count: int
    median_ns: float
    p9999_ns: float
    sigma: float  # ln(p9999 / median) / Z_9999, the engine's shape parameter
    sigma_body: float  # from the 10th-90th percentiles; far from `sigma`: the tail is not log-normal
    method: Literal["empirical", "lognormal"]  # p99.99 read from the samples, or extrapolated
    enough_for_p9999: bool
    note: str

    @property
    def median_us(self) -> float:
        return self.median_ns / 1000.0

    @property
    def p9999_us(self) -> float:
        return self.p9999_ns / 1000.0


def fit_exit_latency(samples_ns: npt.ArrayLike, *, min_samples: int = MIN_SAMPLES) -> ExitLatencyFit:
    """Fit median and 99.99th percentile to exit-latency samples (ns, all positive).

    With at least P9999_SAMPLES samples both are read from the samples; with fewer, the median
    is read and the tail is extrapolated with the spread of the body (10th-90th percentiles).
    """
    x = np.asarray(samples_ns, dtype=np.float64).ravel()
    n = int(x.size)
    if n < min_samples:
        raise ValueError(f"samples: {n} exit latencies, at least {min_samples} needed for a fit")
    if not np.isfinite(x).all():
        raise ValueError("samples: not all finite")
    if (x <= 0).any():
        raise ValueError("samples: exit latencies must be positive (a log-normal has no zero)")
    median = float(np.median(x))
    q10, q90 = (float(v) for v in np.quantile(x, [0.1, 0.9]))
    sigma_body = math.log(q90 / q10) / (2.0 * _Z_90)
    if n >= P9999_SAMPLES:
        p9999 = float(np.quantile(x, 0.9999))
        method: Literal["empirical", "lognormal"] = "empirical"
        note = f"median and 99.99th percentile read from {n:,} samples"
    else:
        p9999 = median * math.exp(sigma_body * Z_9999)
        method = "lognormal"
        note = (
            f"only {n:,} samples (a 99.99th percentile needs ~{P9999_SAMPLES:,}): the tail is extrapolated "
            "from the 10th-90th percentile spread, assuming a log-normal"
        )
    sigma = math.log(p9999 / median) / Z_9999 if p9999 > median else 0.0
    return ExitLatencyFit(
        count=n,
        median_ns=median,
        p9999_ns=p9999,
        sigma=sigma,
        sigma_body=sigma_body,
        method=method,
        enough_for_p9999=n >= P9999_SAMPLES,
        note=note,
    )


class HousekeepingEstimate(_Model):
    """`h + e` (exit housekeeping plus interrupt entry), from IntrLatency - WakeLatency per wake-up."""

    count: int
    median_ns: float
    mean_ns: float
    p10_ns: float
    p90_ns: float


def estimate_h_plus_e(
    wake_latency_ns: npt.ArrayLike, intr_latency_ns: npt.ArrayLike, intr_off: npt.ArrayLike
) -> HousekeepingEstimate:
    """h + e from the wake-ups taken with interrupts off (IntrOff = 1).

    There the CPU leaves the state, cpuidle does its exit housekeeping (h), re-enables interrupts
    and only then takes the interrupt (e): IntrLatency - WakeLatency = h + e for each wake-up.
    With interrupts on (POLL, IRQ_ENABLE C1) the handler runs first, so those rows say nothing of h.
    """
    wake = np.asarray(wake_latency_ns, dtype=np.float64).ravel()
    intr = np.asarray(intr_latency_ns, dtype=np.float64).ravel()
    off = np.asarray(intr_off).ravel().astype(bool)
    if not (wake.size == intr.size == off.size):
        raise ValueError(
            f"lengths differ: {wake.size} WakeLatency, {intr.size} IntrLatency, {off.size} IntrOff"
        )
    d = (intr - wake)[off]
    d = d[np.isfinite(d)]
    if d.size == 0:
        raise ValueError("no wake-up with IntrOff = 1 and both latencies: h + e cannot be estimated")
    p10, p50, p90 = (float(v) for v in np.quantile(d, [0.1, 0.5, 0.9]))
    return HousekeepingEstimate(
        count=int(d.size), median_ns=p50, mean_ns=float(d.mean()), p10_ns=p10, p90_ns=p90
    )


def apply_fit(state: CState, fit: ExitLatencyFit, source: str, *, replace_worst_case: bool = False) -> CState:
    """`state` with its exit-latency median set from `fit`, labelled `measured` with `source`.

    The table's exit latency is what the governor sees, so by default it stays the kernel's and
    the engine keeps it as the 99.99th percentile; `replace_worst_case` puts the measured
    99.99th percentile there instead (and so changes what the governor sees too).
    """
    median_us = fit.median_us
    worst_us = fit.p9999_us if replace_worst_case else state.exit_latency_us
    if median_us > worst_us:
        raise ValueError(
            f"{state.name}: the measured median exit latency ({median_us:g} us) exceeds the table's "
            f"{worst_us:g} us, which the engine takes as the 99.99th percentile"
        )
    label = f"{source}: median of {fit.count:,} samples ({fit.note})"
    update: dict[str, object] = {
        "exit_latency_median_us": Param(value=round(median_us, 3), kind="measured", source=label)
    }
    if replace_worst_case:
        update["exit_latency_us"] = round(fit.p9999_us, 3)
    return CState.model_validate({**state.model_dump(), **update})

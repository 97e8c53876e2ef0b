"""Calibration: fitting exit latencies recovers the parameters the engine's own draws were made with."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from numba import njit

from engine import load_platform, streams
from engine.calibrate import (
    P9999_SAMPLES,
    Z_9999,
    apply_fit,
    estimate_h_plus_e,
    fit_exit_latency,
)


@njit(cache=False)
def _draws(seeds: np.ndarray, table: np.ndarray, median: float, sigma: float, n: int) -> np.ndarray:
    out = np.empty(n, dtype=np.int64)
    for k in range(n):
        # As the kernel's _exit_draw does: one log-normal draw from row 0, truncated to whole ns.
        out[k] = int(streams.lognormal(seeds, 0, table, 0, median, sigma))
    return out


def engine_exit_samples(median_ns: float, worst_ns: float, n: int, seed: int) -> np.ndarray:
    """n exit latencies drawn exactly as the engine draws them for a state with this median and worst case."""
    sigma = math.log(worst_ns / median_ns) / Z_9999  # engine/simulate.py's formula
    table = np.empty((1, streams.QUANTILE_STEPS + 1))
    streams.lognormal_table(np.array([median_ns]), np.array([sigma]), table)
    seeds = streams.stream_seeds(seed, 1)[:, 0].copy()
    return _draws(seeds, table, median_ns, sigma, n)


def test_z_9999_is_the_normal_quantile() -> None:
    assert Z_9999 == pytest.approx(statistics.NormalDist().inv_cdf(0.9999), rel=1e-12)


def test_recovers_icx_c6_from_the_engines_own_draws() -> None:
    # icx C6: median 128 us published, 170 us the 99.99th percentile (d484b8bfc6fa).
    samples = engine_exit_samples(128_000.0, 170_000.0, 400_000, seed=11)
    fit = fit_exit_latency(samples)
    assert fit.method == "empirical" and fit.enough_for_p9999 and fit.count == 400_000
    # Standard errors at 4e5 draws, sigma = ln(170/128)/3.719 = 0.0763: median ~0.015 %, p99.99
    # ~0.3 % (40 draws beyond it). The bounds are several of those.
    assert fit.median_ns == pytest.approx(128_000, rel=0.002)
    assert fit.p9999_ns == pytest.approx(170_000, rel=0.015)
    assert fit.sigma == pytest.approx(math.log(170 / 128) / Z_9999, rel=0.06)
    assert fit.sigma_body == pytest.approx(fit.sigma, rel=0.05)  # the samples are log-normal throughout
    assert (fit.median_us, fit.p9999_us) == (fit.median_ns / 1000, fit.p9999_ns / 1000)


def test_few_samples_extrapolate_the_tail_and_say_so() -> None:
    # skx C6 with its default median share: 93.1 of 133 us.
    samples = engine_exit_samples(93_100.0, 133_000.0, 5_000, seed=3)
    fit = fit_exit_latency(samples)
    assert fit.method == "lognormal" and not fit.enough_for_p9999
    assert "5,000 samples" in fit.note and f"{P9999_SAMPLES:,}" in fit.note
    assert fit.median_ns == pytest.approx(93_100, rel=0.005)
    # sigma from the 10-90 spread of 5,000 draws is within ~3 %; the tail then within ~1.5 %.
    assert fit.p9999_ns == pytest.approx(133_000, rel=0.03)


def test_a_tail_heavier_than_log_normal_shows_in_the_two_sigmas() -> None:
    body = engine_exit_samples(50_000.0, 60_000.0, 200_000, seed=5)
    spiky = body.copy()
    spiky[::1000] = 400_000  # one wake-up in 1000 hits something slow (an SMI, a late snoop)
    fit = fit_exit_latency(spiky)
    assert fit.p9999_ns == pytest.approx(400_000)
    assert fit.sigma > 5 * fit.sigma_body


def test_refuses_what_it_cannot_fit() -> None:
    with pytest.raises(ValueError, match="at least 100"):
        fit_exit_latency(np.full(99, 1000.0))
    with pytest.raises(ValueError, match="positive"):
        fit_exit_latency(np.r_[np.full(200, 1000.0), 0.0])
    with pytest.raises(ValueError, match="finite"):
        fit_exit_latency(np.r_[np.full(200, 1000.0), np.nan])


def test_h_plus_e_from_intr_off_wakeups_only() -> None:
    wake = [10_000, 20_000, 30_000, 40_000, 50_000]
    intr = [13_000, 24_000, 33_000, 47_000, 52_000]  # the third is an IntrOff=0 row: handler first
    off = [1, 1, 0, 1, 1]
    est = estimate_h_plus_e(wake, intr, off)
    # IntrOff=1 differences: 3000, 4000, 7000, 2000 -> median 3500, mean 4000.
    assert est.count == 4
    assert (est.median_ns, est.mean_ns) == (3500.0, 4000.0)
    with pytest.raises(ValueError, match="IntrOff = 1"):
        estimate_h_plus_e(wake, intr, [0] * 5)
    with pytest.raises(ValueError, match="lengths differ"):
        estimate_h_plus_e(wake, intr[:4], off)


def test_apply_fit_labels_the_median_measured_and_keeps_the_governors_table() -> None:
    c6 = load_platform("icx").states[3]
    fit = fit_exit_latency(engine_exit_samples(120_000.0, 160_000.0, 150_000, seed=9))
    out = apply_fit(c6, fit, "measurement m-42")
    assert out.exit_latency_us == 170  # the kernel's number, what menu and teo see
    med = out.exit_latency_median_us
    assert med is not None and med.kind == "measured" and med.source.startswith("measurement m-42")
    assert med.value == pytest.approx(120, rel=0.002)
    wider = apply_fit(c6, fit, "measurement m-42", replace_worst_case=True)
    assert wider.exit_latency_us == pytest.approx(160, rel=0.015)
    slow = fit_exit_latency(engine_exit_samples(180_000.0, 200_000.0, 1_000, seed=1))
    with pytest.raises(ValueError, match="exceeds the table's 170 us"):
        apply_fit(c6, slow, "m")

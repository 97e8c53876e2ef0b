"""Random streams: the normal quantile, Poisson arrival counts and request targets."""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np
import pytest
from numba import njit

from engine import streams
from engine.streams import SRC_CALLS, SRC_IRQ, arrival_streams, first_uniforms, stream_seeds


@pytest.mark.parametrize("p", [1e-9, 1e-4, 0.01, 0.02425, 0.2, 0.5, 0.8, 0.97575, 0.9999, 1 - 1e-7])
def test_normal_quantile_is_phi_inverse(p: float) -> None:
    # Phi^-1(p) on both sides of the central/tail boundary, to Acklam's documented 1.2e-9
    # relative error (the log-normal exit latency draw's table and tails rest on it).
    want = statistics.NormalDist().inv_cdf(p)
    assert streams.normal_quantile(p) == pytest.approx(want, rel=2e-9, abs=1e-12)


def test_uniforms_are_uniform_and_streams_differ() -> None:
    u = first_uniforms(stream_seeds(7, 200)[:, SRC_IRQ], 500)
    assert u.min() >= 0.0 and u.max() < 1.0
    # 100,000 draws: mean 1/2 with standard error 1/sqrt(12 * 10^5) ~ 0.0009.
    assert u.mean() == pytest.approx(0.5, abs=0.004)
    assert len({row[0] for row in u.tolist()}) == 200


def test_poisson_counts_match_the_rate() -> None:
    n, rate, t_end = 64, 2000.0, 500_000_000
    times, dst, off = arrival_streams(stream_seeds(3, n)[:, SRC_IRQ], np.full(n, rate), t_end)
    counts = np.diff(off)
    # Each CPU: Poisson with mean 1000 (sd ~32); all 64: 64,000 (sd ~253).
    assert counts.sum() == pytest.approx(n * 1000, abs=4 * math.sqrt(n * 1000))
    assert len(dst) == 0  # no targets asked for
    for c in range(n):
        mine = times[off[c] : off[c + 1]]
        assert (np.diff(mine) >= 0).all() and mine[0] >= 0 and mine[-1] < t_end


def test_request_targets_follow_the_same_socket_share() -> None:
    cores, n, share = 4, 16, 0.25  # 4 sockets of 4
    times, dst, off = arrival_streams(
        stream_seeds(5, n)[:, SRC_CALLS], np.full(n, 4000.0), 1_000_000_000, cores, share, np.arange(n)
    )
    src = np.repeat(np.arange(n), np.diff(off))
    assert (dst != src).all()  # never to itself
    same = (dst // cores == src // cores).mean()
    assert same == pytest.approx(share, abs=0.02)  # ~64,000 requests
    # Uniform within the side: each of a sender's 3 socket-mates gets a third of its same-socket calls.
    mates = dst[(src == 0) & (dst // cores == 0)]
    assert np.bincount(mates, minlength=4)[1:] == pytest.approx([len(mates) / 3] * 3, rel=0.15)


def test_a_sender_without_targets_sends_nothing() -> None:
    times, _, off = arrival_streams(
        stream_seeds(5, 4)[:, SRC_CALLS], np.full(4, 1000.0), 100_000_000, 2, 1.0, np.array([1])
    )
    counts = np.diff(off)
    # CPU 1 is the only target: it has no one to call; CPU 0 (its socket-mate) calls it.
    assert counts[1] == 0 and counts[0] > 0


@pytest.mark.parametrize("seed", [0, 11, 2**32 - 1, 2**32 + 5, 2**63 - 1])
def test_seeds_come_from_seed_sequence_children(seed: int) -> None:
    # Computed in compiled code: word for word what numpy's SeedSequence gives each child.
    seeds = stream_seeds(seed, 300)
    children = np.random.SeedSequence(seed).spawn(300)
    want = np.array([child.generate_state(5, np.uint64) for child in children]) | np.uint64(1)
    assert seeds.dtype == np.uint64 and (seeds == want).all()
    assert (stream_seeds(seed, 2) == seeds[:2]).all()


def test_exponential_ziggurat_has_the_exponential_distribution() -> None:
    # 10^6 draws over 8 generators. CDF 1 - exp(-x) at each point, within 5 standard errors
    # (sqrt(p(1-p)/n) <= 0.0005); the tail beyond the base layer (x > 7.697) is drawn too.
    draws = _draws(streams.standard_exponential, 1_000_000)
    for x in (0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 7.0, 9.0):
        p = 1 - math.exp(-x)
        assert (draws < x).mean() == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / len(draws)) + 1e-6)
    assert draws.mean() == pytest.approx(1.0, abs=0.005)
    assert draws.var() == pytest.approx(1.0, abs=0.01)
    assert draws.min() >= 0.0 and draws.max() > streams.ZIG_R


def test_lognormal_table_is_exact_at_the_median_and_the_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    median, sigma = np.array([128_000.0]), np.array([math.log(170 / 128) / 3.719016485455709])
    table = np.empty((1, streams.QUANTILE_STEPS + 1))
    streams.lognormal_table(median, sigma, table)
    normal = statistics.NormalDist()

    def draw(u: float) -> float:
        monkeypatch.setattr(streams, "uniform", lambda state, i: u)
        return float(streams.lognormal.py_func(None, 0, table, 0, median[0], sigma[0]))

    assert draw(0.5) == median[0]  # a grid point: the median itself
    # The 99.99th percentile is computed, not interpolated: the table's worst case, 170 us.
    assert draw(0.9999) == pytest.approx(170_000.0, rel=1e-8)
    # Between grid points the interpolated quantile stays within 1e-3 * sigma of the exact one.
    for u in np.linspace(0.0, 1.0, 4001)[1:-1]:
        exact = median[0] * math.exp(sigma[0] * normal.inv_cdf(u + 0.5 / 2**53))
        assert abs(draw(u) / exact - 1) <= 1e-3 * sigma[0]


def _draws(fn: Any, n: int) -> np.ndarray:
    """n draws of the compiled `fn(state, i)`, cycling over 8 generators."""

    @njit
    def fill(state: np.ndarray, out: np.ndarray) -> None:
        for k in range(out.shape[0]):
            out[k] = fn(state, k % state.shape[0])

    out = np.empty(n)
    fill(stream_seeds(3, 8)[:, SRC_IRQ].copy(), out)
    return out

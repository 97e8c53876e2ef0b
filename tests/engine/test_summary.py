"""Latency summaries: the same figures as sorting every sample, on samples built to trip them."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.result import LatencyStats
from engine.summary import HIST_EDGES_NS, N_BINS, PERCENTILES, latency_stats


def sorted_reference(samples: np.ndarray) -> dict[str, object]:
    """What the summary must equal: sort everything, read ranks, count bins by binary search."""
    ordered = np.sort(samples)
    n = len(ordered)
    below = np.searchsorted(ordered, HIST_EDGES_NS[1:-1], side="left")  # samples under each inner edge
    counts = np.diff(np.concatenate([[0], below, [n]])).tolist()

    def percentile(q: float) -> float:
        pos = q / 100.0 * (n - 1)
        a, b = float(ordered[int(pos)]), float(ordered[min(int(pos) + 1, n - 1)])
        return a + (b - a) * (pos - int(pos))

    p50, p90, p99, p999 = (percentile(q) for q in PERCENTILES)
    return {
        "count": n, "mean_ns": int(ordered.sum()) / n, "p50_ns": p50, "p90_ns": p90, "p99_ns": p99,
        "p999_ns": p999, "max_ns": float(ordered[-1]), "counts": counts,
    }


def check(samples: np.ndarray) -> LatencyStats:
    stats = latency_stats(samples.astype(np.int64))
    got = stats.model_dump()
    got["counts"] = got.pop("histogram")["counts"]
    assert got == sorted_reference(samples)
    return stats


EDGES = np.ceil(HIST_EDGES_NS).astype(np.int64)
rng = np.random.default_rng(11)

CASES = {
    # Every integer on and beside every bin edge: a sample one below ceil(edge) is in the lower bin.
    "edges": np.concatenate([EDGES - 1, EDGES, EDGES + 1]),
    # Every value below 4096, each once, shuffled: every cell of the small keys, exact.
    "dense": rng.permutation(4096),
    "lognormal": rng.lognormal(8, 2, 20_001).astype(np.int64),
    # Most samples equal, so the median's cell holds nearly all of them.
    "peaked": np.concatenate([np.full(5000, 77_777), rng.integers(0, 10**6, 50)]),
    "narrow": rng.integers(99_990, 100_010, 3333),
    "one": np.array([5]),
    "two": np.array([200, 100]),
    "zeros": np.zeros(7, dtype=np.int64),
    # Past the last edge and up to the largest int64: the last bin takes them.
    "huge": np.array([10**8, 3 * 10**8, 2**40, 2**62, 2**63 - 1, 0, 1]),
    "wide": rng.integers(0, 2**31, 1000),
}


@pytest.mark.parametrize("name", CASES)
def test_summary_is_the_sorted_one(name: str) -> None:
    check(CASES[name])


def test_ranks_in_different_cells_and_ties_across_cells() -> None:
    # p50 falls between two cells (the 5000th and 5001st samples are 1000 and 2000), and the p99.9
    # pair straddles a value repeated at the top.
    samples = np.concatenate([np.full(5000, 1000), np.full(4990, 2000), np.full(10, 9_999_999)])
    stats = check(rng.permutation(samples))
    assert stats.p50_ns == 1500.0
    assert stats.max_ns == 9_999_999.0


def test_agrees_with_numpy_percentile_and_histogram() -> None:
    samples = CASES["lognormal"]
    stats = latency_stats(samples)
    want = np.percentile(samples, PERCENTILES)
    assert [stats.p50_ns, stats.p90_ns, stats.p99_ns, stats.p999_ns] == pytest.approx(want, rel=1e-12)
    # np.histogram's last bin is closed; clipping to inside the edges counts what ours does.
    clipped = np.clip(samples, HIST_EDGES_NS[0], math.nextafter(HIST_EDGES_NS[-1], 0))
    assert stats.histogram.counts == np.histogram(clipped, bins=HIST_EDGES_NS)[0].tolist()
    assert stats.mean_ns == pytest.approx(samples.mean(), rel=1e-15)


def test_empty_and_negative() -> None:
    empty = latency_stats(np.empty(0, dtype=np.int64))
    assert empty.count == 0 and empty.histogram.counts == [0] * N_BINS
    with pytest.raises(ValueError, match="negative: -3 ns"):
        latency_stats(np.array([10, -3, 5], dtype=np.int64))

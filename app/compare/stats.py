"""The statistics of a comparison of repeated runs: per metric each side's mean and %stddev, the
change with its 95% interval, a test, and a verdict that survives many metrics at once.

Pure functions over plain numbers (no database, no web). The rules (DESIGN.md section 7,
"Comparisons"):

- `%` metrics (counts, rates, latencies, energy) change in percent of the base's mean; `pp`
  metrics (shares, given in percent: 0..100) change in percentage points.
- Test: a paired t-test on per-seed differences when both sides ran the same seed list (on log
  ratios for `%` metrics whose values are all positive), Welch's t-test otherwise.
- Interval: `pp`, the t interval of the difference; `%`, the delta method on the log of the means
  (null, with a reason, when the base's own 95% interval includes 0: a percentage of a base that
  may be 0 says nothing); with 20 or more repeats on both sides a percentile bootstrap instead,
  seeded from the run ids so the same comparison gives the same bytes.
- Zero variance on both sides is an exact answer: no test, the interval is the change itself.
- A verdict needs significance after Benjamini-Hochberg at 5% across every metric of every pair
  of the comparison, and |change| at or above the metric's practical threshold. None when a side
  has fewer than 3 repeats.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import numpy as np
from scipy import stats as sps

UnitKind = Literal["%", "pp"]
Direction = Literal["up", "down"]
Verdict = Literal["better", "worse", "higher", "lower", "no_significant_change"]
TestName = Literal["paired_t_log_ratio", "paired_t", "welch_t", "exact"]
IntervalMethod = Literal["t", "delta_log_means", "bootstrap", "exact"]

ALPHA = 0.05
CONFIDENCE = 0.95
MIN_REPEATS_FOR_VERDICT = 3
MIN_REPEATS_FOR_BOOTSTRAP = 20
BOOTSTRAP_RESAMPLES = 4000
DEFAULT_THRESHOLD: dict[str, float] = {"%": 1.0, "pp": 0.5}

REASON_FEW_REPEATS = f"fewer than {MIN_REPEATS_FOR_VERDICT} repeats on a side"
REASON_BASE_INCLUDES_ZERO = "the base's 95% interval includes 0, so a percentage of it is not meaningful"
REASON_BASE_ZERO = "the base is 0 and the other side is not: no percentage"
REASON_NOT_POSITIVE = "a mean is not positive, so a percentage interval on log means is not defined"


class MetricAttributes(Protocol):
    """What the statistics need of a metric; the metric registry's entries provide it.

    `direction`: "up" when an increase is better, "down" when a decrease is, None when the metric
    describes the workload rather than a quality. `threshold`: the smallest |change| (in the
    metric's unit) that counts as a verdict; None for the default (1% or 0.5 pp).
    """

    @property
    def key(self) -> str: ...
    @property
    def unit_kind(self) -> UnitKind: ...
    @property
    def direction(self) -> Direction | None: ...
    @property
    def threshold(self) -> float | None: ...


@dataclass(frozen=True)
class MetricSpec:
    """A plain `MetricAttributes`."""

    key: str
    unit_kind: UnitKind
    direction: Direction | None = None
    threshold: float | None = None


def practical_threshold(metric: MetricAttributes) -> float:
    """The metric's practical threshold in its own unit."""
    return DEFAULT_THRESHOLD[metric.unit_kind] if metric.threshold is None else float(metric.threshold)


@dataclass(frozen=True)
class Side:
    """One run of a comparison: its id, the seed of each repeat, and per metric key one value per
    repeat in seed order (None where the repeat has no such figure, e.g. a latency without samples)."""

    run_id: str
    seeds: Sequence[int]
    values: Mapping[str, Sequence[float | None]]


@dataclass(frozen=True)
class SideSummary:
    n: int
    mean: float | None
    stddev: float | None
    stddev_pct: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean": self.mean, "stddev": self.stddev, "stddev_pct": self.stddev_pct}


@dataclass(frozen=True)
class Significance:
    """The test behind a verdict: `p_value` as the test gives it, `p_adjusted` after
    Benjamini-Hochberg over the comparison (both None for an exact answer)."""

    name: TestName
    p_value: float | None = None
    p_adjusted: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "p_value": self.p_value, "p_adjusted": self.p_adjusted}


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one pair (base, other): the figures of the compare contract."""

    key: str
    base: SideSummary
    other: SideSummary
    change: float | None
    change_unit: UnitKind
    ci95: tuple[float, float] | None
    ci95_method: IntervalMethod | None
    ci95_reason: str | None
    test: Significance | None
    verdict: Verdict | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "base": self.base.to_dict(),
            "other": self.other.to_dict(),
            "change": self.change,
            "change_unit": self.change_unit,
            "ci95": None if self.ci95 is None else list(self.ci95),
            "ci95_method": self.ci95_method,
            "ci95_reason": self.ci95_reason,
            "test": None if self.test is None else self.test.to_dict(),
            "verdict": self.verdict,
        }


@dataclass(frozen=True)
class PairComparison:
    """A side against the base (the comparison's first side), metric by metric in the given order."""

    base_id: str
    other_id: str
    paired: bool  # both sides ran the same seed list
    metrics: tuple[MetricComparison, ...]

    def metric(self, key: str) -> MetricComparison:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_id": self.base_id,
            "other_id": self.other_id,
            "paired": self.paired,
            "metrics": [m.to_dict() for m in self.metrics],
        }


def compare_sides(metrics: Sequence[MetricAttributes], sides: Sequence[Side]) -> list[PairComparison]:
    """Every side after the first against the first, for each metric; the Benjamini-Hochberg
    correction counts every tested metric of every pair."""
    if len(sides) < 2:
        raise ValueError(f"sides: a comparison needs at least 2 runs, got {len(sides)}")
    for i, metric in enumerate(metrics):
        _check_metric(f"metrics[{i}]", metric)
    keys = [m.key for m in metrics]
    if len(set(keys)) != len(keys):
        raise ValueError("metrics: keys must be unique")
    for i, side in enumerate(sides):
        _check_side(f"sides[{i}]", side)
    base = sides[0]
    drafts = [[_compare_metric(m, base, other) for m in metrics] for other in sides[1:]]
    tested = [
        (d, d.test.p_value)
        for pair in drafts
        for d in pair
        if d.test is not None and d.test.p_value is not None
    ]
    adjusted = benjamini_hochberg([p for _, p in tested])
    q_of = {id(d): q for (d, _), q in zip(tested, adjusted, strict=True)}
    return [
        PairComparison(
            base_id=base.run_id,
            other_id=other.run_id,
            paired=_same_seed_list(base.seeds, other.seeds),
            metrics=tuple(_finish(m, d, q_of.get(id(d))) for m, d in zip(metrics, pair, strict=True)),
        )
        for other, pair in zip(sides[1:], drafts, strict=True)
    ]


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (q-values), in the given order."""
    if not p_values:
        return []
    return [float(q) for q in sps.false_discovery_control(np.asarray(p_values, dtype=float), method="bh")]


def summarize(values: Sequence[float] | np.ndarray) -> SideSummary:
    """n, mean, sample standard deviation (ddof 1; None below 2 values) and it in percent of |mean|
    (None when the mean is 0)."""
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    if n == 0:
        return SideSummary(0, None, None, None)
    mean = float(x.mean())
    # Equal values have no spread: say 0 exactly (np.std of [0.1] * 3 is not 0), so that the
    # exact-answer rule sees them.
    stddev = None if n < 2 else 0.0 if x.min() == x.max() else float(x.std(ddof=1))
    pct = None if stddev is None or mean == 0 else 100.0 * stddev / abs(mean)
    return SideSummary(n, mean, stddev, pct)


def change_of(unit_kind: UnitKind, base_mean: float, other_mean: float) -> float | None:
    """The change from the base's mean: percent of it (`%`; 0 when both are 0, None when only the
    base is) or the difference in percentage points (`pp`)."""
    if unit_kind == "pp":
        return other_mean - base_mean
    if base_mean == 0:
        return 0.0 if other_mean == 0 else None
    return 100.0 * (other_mean - base_mean) / base_mean


# --- inside --------------------------------------------------------------------------------------


def _check_metric(where: str, metric: MetricAttributes) -> None:
    if metric.unit_kind not in DEFAULT_THRESHOLD:
        raise ValueError(f"{where}.unit_kind: must be '%' or 'pp', got {metric.unit_kind!r}")
    if metric.direction not in ("up", "down", None):
        raise ValueError(f"{where}.direction: must be 'up', 'down' or None, got {metric.direction!r}")
    if metric.threshold is not None and not (math.isfinite(metric.threshold) and metric.threshold >= 0):
        raise ValueError(f"{where}.threshold: must be a number >= 0 or None, got {metric.threshold!r}")


def _check_side(where: str, side: Side) -> None:
    seeds = list(side.seeds)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{where}.seeds: the seeds of a run's repeats must be distinct")
    for key, values in side.values.items():
        if len(values) != len(seeds):
            raise ValueError(
                f"{where}.values[{key!r}]: {len(values)} values for {len(seeds)} seeds; one per repeat"
            )
        for v in values:
            if v is not None and not math.isfinite(v):
                raise ValueError(f"{where}.values[{key!r}]: values must be finite numbers or None, got {v}")


def _same_seed_list(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and set(a) == set(b)


def _present(side: Side, key: str) -> dict[int, float]:
    """Seed -> value of one metric, repeats without a value left out."""
    values = side.values.get(key, [None] * len(side.seeds))
    return {s: float(v) for s, v in zip(side.seeds, values, strict=True) if v is not None}


def _compare_metric(metric: MetricAttributes, base: Side, other: Side) -> MetricComparison:
    """A metric's figures before the correction across the comparison (no verdict yet)."""
    unit = metric.unit_kind
    a_by_seed, b_by_seed = _present(base, metric.key), _present(other, metric.key)
    paired = bool(a_by_seed) and set(a_by_seed) == set(b_by_seed)
    if paired:
        order = sorted(a_by_seed)
        a = np.array([a_by_seed[s] for s in order])
        b = np.array([b_by_seed[s] for s in order])
    else:
        a, b = np.array(list(a_by_seed.values())), np.array(list(b_by_seed.values()))
    sa, sb = summarize(a), summarize(b)
    change = None if sa.mean is None or sb.mean is None else change_of(unit, sa.mean, sb.mean)
    ci: tuple[float, float] | None = None
    method: IntervalMethod | None = None
    reason: str | None = None
    test: Significance | None = None
    if sa.n < MIN_REPEATS_FOR_VERDICT or sb.n < MIN_REPEATS_FOR_VERDICT:
        reason = REASON_FEW_REPEATS
    elif sa.stddev == 0 and sb.stddev == 0:
        test = Significance("exact")
        if change is None:
            reason = REASON_BASE_ZERO
        else:
            ci, method = (change, change), "exact"
    else:
        test = _paired_test(unit, a, b) if paired else _welch_test(a, b)
        ci, method, reason = _interval(
            unit, a, b, paired, _bootstrap_seed(base.run_id, other.run_id, metric.key)
        )
    return MetricComparison(metric.key, sa, sb, change, unit, ci, method, reason, test, verdict=None)


def _t_p_value(t: float, df: float) -> float:
    return float(2.0 * sps.t.sf(abs(t), df))


def _t_quantile(df: float) -> float:
    return float(sps.t.ppf(0.5 + CONFIDENCE / 2, df))


def _paired_differences(unit: UnitKind, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, TestName]:
    if unit == "%" and bool(np.all(a > 0)) and bool(np.all(b > 0)):
        return np.log(b) - np.log(a), "paired_t_log_ratio"
    return b - a, "paired_t"


def _paired_test(unit: UnitKind, a: np.ndarray, b: np.ndarray) -> Significance:
    d, name = _paired_differences(unit, a, b)
    mean, sd, n = float(d.mean()), float(d.std(ddof=1)), d.size
    if d.min() == d.max():
        # Every seed moved by the same amount: certain, whatever the sides' own spread.
        return Significance(name, 0.0 if mean != 0 else 1.0)
    return Significance(name, _t_p_value(mean / (sd / math.sqrt(n)), n - 1))


def _welch_df(va: float, na: int, vb: float, nb: int) -> float:
    """Welch-Satterthwaite degrees of freedom of va + vb, each a variance of a mean."""
    return (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))


def _welch_test(a: np.ndarray, b: np.ndarray) -> Significance:
    va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
    t = (float(b.mean()) - float(a.mean())) / math.sqrt(va + vb)
    return Significance("welch_t", _t_p_value(t, _welch_df(va, a.size, vb, b.size)))


Interval = tuple[tuple[float, float] | None, IntervalMethod | None, str | None]


def _interval(unit: UnitKind, a: np.ndarray, b: np.ndarray, paired: bool, seed: int) -> Interval:
    ma, mb = float(a.mean()), float(b.mean())
    if unit == "%":
        half_base = _t_quantile(a.size - 1) * float(a.std(ddof=1)) / math.sqrt(a.size)
        if ma - half_base <= 0 <= ma + half_base:
            return None, None, REASON_BASE_INCLUDES_ZERO
        if ma < 0 or mb < 0:
            return None, None, REASON_NOT_POSITIVE
    if a.size >= MIN_REPEATS_FOR_BOOTSTRAP and b.size >= MIN_REPEATS_FOR_BOOTSTRAP:
        return _bootstrap(unit, a, b, paired, seed), "bootstrap", None
    if unit == "pp":
        return _t_interval_difference(a, b, paired), "t", None
    if mb == 0:
        # Every repeat of the other side is 0 (the values are not negative): the ratio is exactly 0.
        return (-100.0, -100.0), "delta_log_means", None
    return _delta_log_means(a, b, paired), "delta_log_means", None


def _t_interval_difference(a: np.ndarray, b: np.ndarray, paired: bool) -> tuple[float, float]:
    if paired:
        d = b - a
        centre, se, df = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), float(d.size - 1)
    else:
        va, vb = float(a.var(ddof=1)) / a.size, float(b.var(ddof=1)) / b.size
        centre, se = float(b.mean()) - float(a.mean()), math.sqrt(va + vb)
        df = _welch_df(va, a.size, vb, b.size) if va + vb > 0 else 1.0
    half = _t_quantile(df) * se
    return centre - half, centre + half


def _delta_log_means(a: np.ndarray, b: np.ndarray, paired: bool) -> tuple[float, float]:
    """The 95% interval of 100 (mean_b / mean_a - 1) from log(mean_b) - log(mean_a), whose variance
    the delta method gives as var_a / (n_a mean_a^2) + var_b / (n_b mean_b^2) (minus the covariance
    term when paired: then the variance of each seed's relative deviations b_i/mean_b - a_i/mean_a)."""
    ma, mb = float(a.mean()), float(b.mean())
    if paired:
        u = (b - mb) / mb - (a - ma) / ma
        var, df = float(u.var(ddof=1)) / u.size, float(u.size - 1)
    else:
        va = float(a.var(ddof=1)) / (a.size * ma**2)
        vb = float(b.var(ddof=1)) / (b.size * mb**2)
        var = va + vb
        df = _welch_df(va, a.size, vb, b.size) if var > 0 else 1.0
    centre, half = math.log(mb / ma), _t_quantile(df) * math.sqrt(var)
    return 100.0 * math.expm1(centre - half), 100.0 * math.expm1(centre + half)


def _bootstrap_seed(base_id: str, other_id: str, key: str) -> int:
    digest = hashlib.sha256(f"{base_id}\0{other_id}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _bootstrap(unit: UnitKind, a: np.ndarray, b: np.ndarray, paired: bool, seed: int) -> tuple[float, float]:
    """Percentile bootstrap of the change (resampling seeds jointly when paired)."""
    rng = np.random.default_rng(seed)
    ia = rng.integers(0, a.size, size=(BOOTSTRAP_RESAMPLES, a.size))
    ib = ia if paired else rng.integers(0, b.size, size=(BOOTSTRAP_RESAMPLES, b.size))
    ma, mb = a[ia].mean(axis=1), b[ib].mean(axis=1)
    if unit == "pp":
        changes = mb - ma
    else:
        keep = ma != 0  # a resample of zeros only (the base's interval excluded 0, so rare)
        changes = 100.0 * (mb[keep] / ma[keep] - 1.0)
    low, high = np.quantile(changes, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2])
    return float(low), float(high)


def _verdict(metric: MetricAttributes, m: MetricComparison) -> Verdict | None:
    if m.test is None or m.base.mean is None or m.other.mean is None:
        return None
    if m.test.name == "exact":
        significant = m.other.mean != m.base.mean
    else:
        significant = m.test.p_adjusted is not None and m.test.p_adjusted <= ALPHA
    # A change from a base of 0 has no percentage: it is as large as a change gets.
    large = m.change is None or abs(m.change) >= practical_threshold(metric)
    if not (significant and large) or m.other.mean == m.base.mean:
        return "no_significant_change"
    up = m.other.mean > m.base.mean
    if metric.direction is None:
        return "higher" if up else "lower"
    return "better" if up == (metric.direction == "up") else "worse"


def _finish(metric: MetricAttributes, m: MetricComparison, p_adjusted: float | None) -> MetricComparison:
    """The metric with its adjusted p-value and verdict."""
    if m.test is not None and m.test.p_value is not None:
        m = replace(m, test=replace(m.test, p_adjusted=p_adjusted))
    return replace(m, verdict=_verdict(metric, m))

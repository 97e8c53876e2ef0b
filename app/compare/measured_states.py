"""Runs against wult measurements per requested C-state: like with like.

wult's rows carry the state Linux requested (`ReqCState`); a run's wake-ups carry the state they
left (`StateStats.wake_latency` and `intr_latency`, the same figures per state). Their overall
distributions mix the states in each side's own proportions, so an overall percentile can differ
only because one side spent more wake-ups in C6. Here each state present on both sides gets its
own row per metric (WakeLatency, and IntrLatency where both have it): count, mean, p50, p90, p99
and p99.9, each side's share of wake-ups in that state, and each run against the first measurement
that has the row. The overall row stays, marked `mixed`, with both sides' proportions.

Few samples are marked as wult's page marks them (`PERCENTILE_SAMPLES`): a percentile p has a
sample beyond it only from 1 / (1 - p) samples on, so with fewer it is just the largest sample.
Runs made before the result kept per-state figures have per-state means only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.measurements.wult import PERCENTILE_SAMPLES

Metric = Literal["WakeLatency", "IntrLatency"]
METRICS: tuple[tuple[Metric, str], ...] = (("WakeLatency", "wake"), ("IntrLatency", "intr"))
# The figures compared, as the result and the measurement's view name them, and as shown.
FIGURES = (("mean_ns", "mean"), ("p50_ns", "p50"), ("p90_ns", "p90"), ("p99_ns", "p99"), ("p999_ns", "p99.9"))
_PERCENTILE_OF = {"p90_ns": "p90", "p99_ns": "p99", "p999_ns": "p99.9"}
ALL_STATES = "all"


class LatencyFigures(BaseModel):
    count: int | None = Field(description="Samples (null for a run made before per-state figures).")
    mean_ns: float | None
    p50_ns: float | None
    p90_ns: float | None
    p99_ns: float | None
    p999_ns: float | None
    few_samples: list[str] = Field(
        default_factory=list,
        description="Percentiles with fewer than 1 / (1 - p) samples (p90: 10, p99: 100, p99.9: 1,000): "
        "each is just the largest sample.",
    )


class StateRow(BaseModel):
    """One requested C-state (or `all`) and one metric, on every side."""

    state: str = Field(description="The requested C-state; `all` for the overall row.")
    metric: Metric
    mixed: bool = Field(
        default=False, description="The overall row: the states mixed in each side's own proportions."
    )
    measured: list[LatencyFigures | None] = Field(description="Per wult measurement (null: not there).")
    simulated: list[LatencyFigures | None] = Field(description="Per run (null: no wake-up from the state).")
    measured_share: list[float | None] = Field(description="The state's share of each measurement's rows.")
    simulated_share: list[float | None] = Field(description="The state's share of each run's wake-ups.")
    deltas_pct: list[dict[str, float | None] | None] = Field(
        description="Per run against the first measurement with the row: % change of each figure."
    )


class StateComparison(BaseModel):
    """The runs against the wult measurements, per requested C-state present on both sides."""

    measurements: list[str] = Field(description="The wult measurements' ids, in the compare's order.")
    states: list[str] = Field(description="Requested states with wake-ups on both sides, shallow to deep.")
    only_measured: list[str] = Field(default_factory=list)
    only_simulated: list[str] = Field(default_factory=list)
    rows: list[StateRow]
    measured_proportions: list[dict[str, float]] = Field(
        description="Per measurement: its datapoints by requested state, as shares (the `all` rows' mix)."
    )
    simulated_proportions: list[dict[str, float] | None] = Field(
        description="Per run: its wake-ups by the state they left, as shares (null: not known)."
    )
    note: str


def few_samples(count: int | None) -> list[str]:
    """The shown percentiles that `count` samples are too few for."""
    if count is None:
        return []
    return [p for p in _PERCENTILE_OF.values() if count < PERCENTILE_SAMPLES[p]]


def _figures(stats: Mapping[str, Any] | None) -> LatencyFigures | None:
    if not stats or not stats.get("count"):
        return None
    values = {key: None if stats.get(key) is None else float(stats[key]) for key, _ in FIGURES}
    count = int(stats["count"])
    return LatencyFigures(count=count, **values, few_samples=few_samples(count))


def _run_state(state: Mapping[str, Any], source: str) -> LatencyFigures | None:
    """A run's figures of one state: its per-state distribution, or (a result made before the
    engine kept them) its mean alone."""
    figures = _figures(state.get(f"{source}_latency"))
    if figures is not None or f"{source}_latency" in state:
        return figures
    mean = state.get(f"{source}_latency_mean_ns")
    if mean is None:
        return None
    return LatencyFigures.model_validate(
        {"count": None, "mean_ns": float(mean), **dict.fromkeys(("p50_ns", "p90_ns", "p99_ns", "p999_ns"))}
    )


def _delta(measured: LatencyFigures | None, simulated: LatencyFigures | None) -> dict[str, float | None] | None:  # noqa: E501
    if measured is None or simulated is None:
        return None
    out: dict[str, float | None] = {}
    for key, _ in FIGURES:
        m, s = getattr(measured, key), getattr(simulated, key)
        out[key] = None if m is None or s is None or m == 0 else (s - m) / abs(m) * 100.0
    return out


def _row(
    state: str,
    metric: Metric,
    measured: list[LatencyFigures | None],
    simulated: list[LatencyFigures | None],
    shares: tuple[list[float | None], list[float | None]],
) -> StateRow:
    ref = next((m for m in measured if m is not None), None)
    return StateRow(
        state=state, metric=metric, mixed=state == ALL_STATES, measured=measured, simulated=simulated,
        measured_share=shares[0], simulated_share=shares[1], deltas_pct=[_delta(ref, s) for s in simulated],
    )  # fmt: skip


def state_comparison(
    measurements: Sequence[tuple[str, Mapping[str, Any]]], results: Sequence[Mapping[str, Any] | None]
) -> StateComparison | None:
    """Per requested C-state, the runs' `results` against the wult measurements' views (`(id,
    view)`); None without a wult measurement or a finished run."""
    wult = [(mid, v) for mid, v in measurements if v.get("kind") == "wult"]
    done = [r for r in results if r is not None]
    if not wult or not done:
        return None
    measured_states: dict[str, list[Mapping[str, Any] | None]] = {}
    for j, (_, view) in enumerate(wult):
        for req in view.get("requested", []):
            measured_states.setdefault(req["req_cstate"], [None] * len(wult))[j] = req
    simulated_states: dict[str, list[Mapping[str, Any] | None]] = {}
    order: list[str] = []
    for i, result in enumerate(results):
        for s in (result or {}).get("states", []):
            if s["name"] not in order:
                order.append(s["name"])
            woke = s.get("wake_latency") or s.get("wake_latency_mean_ns") is not None
            if woke:
                simulated_states.setdefault(s["name"], [None] * len(results))[i] = s
    both = [s for s in order if s in measured_states and s in simulated_states]
    by_measured, by_run = _proportions(wult, results)
    rows: list[StateRow] = []
    for metric, source in METRICS:
        for state in both:
            measured = [_figures((req or {}).get("stats", {}).get(metric)) for req in measured_states[state]]
            simulated = [None if s is None else _run_state(s, source) for s in simulated_states[state]]
            if all(m is None for m in measured) or all(s is None for s in simulated):
                continue  # IntrLatency where a side lacks it
            per_state: tuple[list[float | None], list[float | None]] = (
                [m.get(state) for m in by_measured],
                [None if r is None else r.get(state) for r in by_run],
            )
            rows.append(_row(state, metric, measured, simulated, per_state))
        overall_measured = [_figures((v.get("overall") or {}).get(metric)) for _, v in wult]
        overall_simulated = [_figures(((r or {}).get("latency") or {}).get(source)) for r in results]
        if any(m is not None for m in overall_measured) and any(s is not None for s in overall_simulated):
            shares: tuple[list[float | None], list[float | None]] = (
                [1.0 for _ in wult], [1.0 if r is not None else None for r in results]
            )
            rows.append(_row(ALL_STATES, metric, overall_measured, overall_simulated, shares))
    return StateComparison(
        measurements=[mid for mid, _ in wult],
        states=both,
        only_measured=[s for s in measured_states if s not in simulated_states],
        only_simulated=[s for s in order if s in simulated_states and s not in measured_states],
        rows=rows,
        measured_proportions=by_measured,
        simulated_proportions=by_run,
        note="Each requested C-state is compared with the run's wake-ups out of that state. The rows of all "
        "states mix the states in each side's own proportions (the shares), so they differ also where only "
        "the proportions do; a percentile marked as having too few samples is just the largest sample.",
    )


def _proportions(
    wult: Sequence[tuple[str, Mapping[str, Any]]], results: Sequence[Mapping[str, Any] | None]
) -> tuple[list[dict[str, float]], list[dict[str, float] | None]]:
    """Each measurement's datapoints and each run's wake-ups by state, as shares (every state)."""
    measured = []
    for _, view in wult:
        total = view.get("count") or 0
        measured.append({r["req_cstate"]: r["count"] / total for r in view.get("requested", []) if total})
    simulated: list[dict[str, float] | None] = []
    for result in results:
        total = (((result or {}).get("latency") or {}).get("wake") or {}).get("count") or 0
        states = (result or {}).get("states", [])
        if result is None or not total or not any("wake_latency" in s for s in states):
            simulated.append(None)  # not done, no wake-up, or made before per-state figures
            continue
        woke = [s for s in states if s.get("wake_latency")]
        simulated.append({s["name"]: s["wake_latency"]["count"] / total for s in woke})
    return measured, simulated


def proportions(comparison: StateComparison, labels: Sequence[str], measured_labels: Sequence[str]) -> str:
    """Each side's wake-ups by state, as the overall rows mix them: `M1 C1 40%, C6 60%; A ...`."""
    parts = []
    sides = [*zip(measured_labels, comparison.measured_proportions, strict=True),
             *zip(labels, comparison.simulated_proportions, strict=True)]  # fmt: skip
    for label, shares in sides:
        shown = ", ".join(f"{state} {share:.1%}" for state, share in (shares or {}).items())
        parts.append(f"{label} {shown or 'unknown'}")
    return "; ".join(parts)

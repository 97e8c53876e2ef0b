"""Comparisons: aligned metrics of 2..8 runs with deltas against the first, and measurements beside
them (the figures both have, aligned, and the measured distributions overlaid on the simulated).

What aligns with a measurement: wult's WakeLatency and IntrLatency over all its datapoints against
a run's `wake` and `intr` latency statistics (the same percentiles, the same log bins); turbostat's
summary columns against the run's `hardware.system.turbostat` (PkgWatt: turbostat sums packages,
the run's figure is per package, so it is multiplied by the run's sockets), and turbostat's
requested-residency columns (`C6%`...) against the run's state residencies.

With every run done, each metric also carries the statistics of the runs' repeats
(`app.compare.stats` over `app.compare.sides`): per run n, mean, stddev and %stddev, and against
the first run the change, its 95% interval, the test and the verdict. Counts and energy are
compared per second and per CPU when durations or CPU counts differ (`normalised`), and
`warnings` name every difference that makes figures not comparable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy.orm import Session

from app.compare import sides as like
from app.compare.kernels import KernelAxis, kernel_axis
from app.compare.measured_states import StateComparison, proportions, state_comparison
from app.compare.stats import PairComparison, compare_sides
from app.core.errors import InvalidInput, NotFound
from app.core.inputs import check_id
from app.core.models import MEASUREMENT_KINDS
from app.measurements import store as measurement_store
from app.measurements.charts import (
    MEASURED_COLOUR,
    SIMULATED_COLOUR,
    Series,
    percentile_figure,
    tail_figure,
)
from app.measurements.service import MeasurementView, load_measurement_view
from app.runs import store as run_store
from app.runs.schemas import RunStatus
from app.runs.service import run_view
from engine import metrics

MAX_COMPARE = 8
Result = Mapping[str, Any]
_LATENCY = tuple((name, source) for source, name in metrics.WULT_METRICS.items())


class ComparedRun(BaseModel):
    id: str
    url: str
    title: str
    status: RunStatus
    platform: str
    governor: str
    mechanism: str
    cpus: int
    duration_ms: float
    repeat_count: int = 1


class ComparedMetric(BaseModel):
    """One metric across the compared runs; `deltas[i]` is run i against run 0, in `delta_unit`:
    percentage points for shares (a share's percent change means nothing: 0.01% -> 19% is not
    "+194,243%"), percent for everything else."""

    key: str = Field(description="Stable id, e.g. `residency.C6`, `latency.wake.p99_ns`.")
    group: str
    label: str
    unit: str
    better: Literal["lower", "higher"] | None = Field(
        default=None, description="Which way is better; null when the metric describes the workload."
    )
    values: list[float | None] = Field(
        description="Per run: the mean over its repeats (its one value without repeats), in `unit`; "
        "normalised as `normalised` says."
    )
    delta_unit: Literal["%", "pp"]
    deltas: list[float | None]
    deltas_pct: list[float | None] = Field(
        description="Relative change in percent for every metric, shares included (kept for scripts "
        "that read it; `deltas` in `delta_unit` is the one to read)."
    )
    normalised: like.Normalised | None = Field(
        default=None, description="Compared per second and/or per CPU (durations or CPU counts differ)."
    )
    n: list[int | None] = Field(default_factory=list, description="Per run: repeats with this figure.")
    mean: list[float | None] = Field(default_factory=list, description="Per run, in `unit`.")
    stddev: list[float | None] = Field(default_factory=list, description="Per run, ddof 1, in `unit`.")
    stddev_pct: list[float | None] = Field(
        default_factory=list, description="Per run: stddev in percent of |mean| (null when the mean is 0)."
    )
    change: list[float | None] = Field(
        default_factory=list, description="Per run against the first (null for the first), in `change_unit`."
    )
    change_unit: Literal["%", "pp"] = "%"
    ci95: list[list[float] | None] = Field(
        default_factory=list, description="95% interval of `change`, [low, high]; null with `ci95_reason`."
    )
    ci95_reason: list[str | None] = Field(default_factory=list)
    test: list[dict[str, Any] | None] = Field(
        default_factory=list,
        description="`{name, p_value, p_adjusted}`: paired_t_log_ratio, paired_t, welch_t or exact; "
        "p_adjusted after Benjamini-Hochberg over every metric of every pair.",
    )
    verdict: list[Literal["better", "worse", "higher", "lower", "no_significant_change"] | None] = Field(
        default_factory=list,
        description="Per run against the first: null for the first and when a side has fewer than 3 repeats.",
    )


class ComparedMeasurement(BaseModel):
    id: str
    url: str
    title: str
    kind: Literal[MEASUREMENT_KINDS]  # type: ignore[valid-type]


class MeasuredMetric(BaseModel):
    """A figure both runs and measurements have; `deltas_pct[i]` is run i against the measurement."""

    key: str = Field(description="e.g. `latency.wake.p99_ns`, `turbostat.CPU%c6`.")
    label: str
    unit: str
    simulated: list[float | None] = Field(description="Per compared run.")
    measured: list[float | None] = Field(description="Per compared measurement.")
    deltas_pct: list[float | None]
    delta_unit: Literal["%", "pp"] = Field(
        default="%", description="pp for shares and turbostat's percentages, % for everything else."
    )
    deltas: list[float | None] = Field(
        default_factory=list,
        description="Run i against the first measurement with the figure, in `delta_unit`.",
    )


class CompareWarning(BaseModel):
    kind: like.WarningKind
    message: str


class Comparison(BaseModel):
    runs: list[ComparedRun]
    complete: bool = Field(description="False while any compared run is not done (its values are null).")
    warnings: list[CompareWarning] = Field(
        default_factory=list, description="Every difference that makes the figures not comparable as given."
    )
    normalised: like.Normalised | None = Field(
        default=None, description="How counts and energy are compared (durations or CPU counts differ)."
    )
    metrics: list[ComparedMetric]
    measurements: list[ComparedMeasurement] = Field(
        default_factory=list, description="Measurements among the ids (wult, turbostat), in their order."
    )
    measured: list[MeasuredMetric] = Field(
        default_factory=list, description="What the runs and the measurements both have, aligned."
    )
    kernels: KernelAxis | None = Field(
        default=None, description="Runs differing only in `governor.kernel`, in history order, step by step."
    )
    measured_states: StateComparison | None = Field(
        default=None,
        description="Against wult measurements, per requested C-state present on both sides (WakeLatency, "
        "IntrLatency where both have it), with the overall rows marked as mixing each side's proportions.",
    )


def parse_ids(ids: str | Sequence[str]) -> list[str]:
    """Run ids from `a,b` or `["a", "b"]` (or both mixed), repeats dropped, order kept: 2 to 8."""
    parts = [ids] if isinstance(ids, str) else list(ids)
    out: list[str] = []
    for part in parts:
        for rid in part.replace(" ", ",").split(","):
            if rid and rid not in out:
                check_id(rid, "run")
                out.append(rid)
    if not 2 <= len(out) <= MAX_COMPARE:
        raise InvalidInput.one(
            ["query", "ids"], f"give 2 to {MAX_COMPARE} different run ids, got {len(out)}", "value_error"
        )
    return out


def _delta(v0: float | None, v: float | None, unit: str) -> float | None:
    """`v` against `v0`: percentage points for a share, else percent (None from a zero)."""
    if v0 is None or v is None:
        return None
    if unit == "share":
        return (v - v0) * 100.0
    if v0 == 0:
        return None
    return (v - v0) / abs(v0) * 100.0


@dataclass
class CompareView:
    comparison: Comparison
    results: list[dict[str, Any] | None]
    # The statistics behind the metrics' figures, one pair per run after the first (none until
    # every run is done): the reports render them.
    pairs: list[PairComparison]
    configs: list[dict[str, Any]]


def compare_view(session: Session, ids: str | Sequence[str]) -> CompareView:
    """Aligned metrics of 2..8 runs, with deltas against the first (pp for shares, else %). `NotFound` names a
    missing id; runs not yet done are included with null values and `complete` false."""
    run_ids = parse_ids(ids)
    rows = run_store.get_rows(session, run_ids)
    measured = measurement_ids(session, [rid for rid in run_ids if rid not in rows])
    run_ids = [rid for rid in run_ids if rid not in measured]
    if measured and not run_ids:
        raise InvalidInput.one(["query", "ids"], "give at least one run id beside the measurements")
    for rid in run_ids:
        if rid not in rows:
            raise NotFound(f"run {rid!r} not found")
    views = [run_view(rows[rid]._mapping) for rid in run_ids]
    results = [v.result if v.status == "done" else None for v in views]
    names: list[str] = []
    for r in results:
        names += [s["name"] for s in (r or {}).get("states", []) if s["name"] not in names]
    compared = metrics.compared(names)
    runs = [
        ComparedRun(**{k: v for k, v in view.summary.items() if k in ComparedRun.model_fields})
        for view in views
    ]
    complete = all(r is not None for r in results)
    facts = [
        like.run_facts(
            v.summary["id"], chr(ord("A") + i % 26), v.config, r, v.summary["engine_version"], v.repeats
        )
        for i, (v, r) in enumerate(zip(views, results, strict=True))
        if r is not None
    ]
    # Statistics need every run done, and two of them (one run may be compared with measurements).
    judged = complete and len(facts) >= 2
    normalised = like.normalisation(facts) if judged else None
    pairs = (
        compare_sides([like.spec(m) for m in compared], [like.side(f, compared, normalised) for f in facts])
        if judged
        else []
    )
    rows = [_compared_metric(m, i, results, pairs, normalised) for i, m in enumerate(compared)]
    comparison = Comparison(
        runs=runs,
        complete=complete,
        warnings=like.run_warnings(facts, normalised) if len(facts) > 1 else [],
        normalised=normalised,
        metrics=rows,
        kernels=kernel_axis(views, results),
    )
    if measured:
        comparison = with_measurements(session, comparison, measured, results)
    return CompareView(comparison, results, pairs, [v.config for v in views])


def _compared_metric(
    m: metrics.Metric,
    index: int,
    results: Sequence[Result | None],
    pairs: Sequence[PairComparison],
    normalised: like.Normalised | None,
) -> ComparedMetric:
    """One metric across the runs: the repeats' means (a run's one value without repeats) and, once
    every run is done, the statistics of each run against the first."""
    if pairs:
        per_pair = [p.metrics[index] for p in pairs]
        summaries = [per_pair[0].base, *(c.other for c in per_pair)]
        values = [like.unscale(m, s.mean) for s in summaries]
    else:
        per_pair, summaries = [], []
        values = [m.value(r) for r in results]
    deltas = [None if values[0] is None else 0.0] + [_delta(values[0], v, m.unit) for v in values[1:]]
    relative = [None if values[0] is None else 0.0] + [_delta(values[0], v, "") for v in values[1:]]
    suffix = like.SUFFIX[normalised][1] if normalised and m.extensive else ""
    stats: dict[str, Any] = {}
    if pairs:
        stats = {
            "n": [s.n for s in summaries],
            "mean": values,
            "stddev": [like.unscale(m, s.stddev) for s in summaries],
            "stddev_pct": [s.stddev_pct for s in summaries],
            "change": [None, *(c.change for c in per_pair)],
            "ci95": [None, *(None if c.ci95 is None else list(c.ci95) for c in per_pair)],
            "ci95_reason": [None, *(c.ci95_reason for c in per_pair)],
            "test": [None, *(None if c.test is None else c.test.to_dict() for c in per_pair)],
            "verdict": [None, *(c.verdict for c in per_pair)],
        }
    return ComparedMetric(
        key=m.key, group=m.group, label=m.label + suffix, unit=like.compared_unit(m, normalised),
        better=m.better, values=values, delta_unit=m.unit_kind, deltas=deltas, deltas_pct=relative,
        normalised=normalised if m.extensive else None, change_unit=m.unit_kind, **stats,
    )  # fmt: skip


def measurement_ids(session: Session, ids: Sequence[str]) -> list[str]:
    """Those of `ids` that name measurements (in their order); no query for none."""
    if not ids:
        return []
    found = measurement_store.existing_ids(session, list(ids))
    return [i for i in ids if i in found]


def _delta_pct(measured: float | None, simulated: float | None) -> float | None:
    if measured is None or simulated is None or measured == 0:
        return None
    return (simulated - measured) / abs(measured) * 100.0


# wult's overall latencies mix the requested states in the measurement's proportions, the run's in
# its own: said on every such row (the per-state rows are `measured_states`).
MIXED = " (all states, mixed in each side's own proportions)"


def measured_metrics(
    measured: Sequence[MeasurementView], results: Sequence[Result | None]
) -> list[MeasuredMetric]:
    """Every figure both a run and a measurement have: `simulated[i]` of run i, `measured[j]` of
    measurement j, `deltas_pct[i]` run i against the first measurement that has the figure."""
    out = []
    columns = [c for m in measured for c in m.view.get("summary", {})]
    for m in metrics.measured([v.kind for v in measured], dict.fromkeys(columns)):
        values = [m.of_measurement(v.view) for v in measured]
        simulated = [m.value(r) for r in results]
        if all(v is None for v in values) or all(v is None for v in simulated):
            continue
        ref = next((v for v in values if v is not None), None)
        # turbostat prints shares as percentages: their change is in percentage points too.
        in_pp = m.unit in ("share", "%")
        deltas = [
            None if ref is None or v is None else (v - ref) * (100.0 if m.unit == "share" else 1.0)
            for v in simulated
        ] if in_pp else [_delta_pct(ref, v) for v in simulated]
        out.append(
            MeasuredMetric(
                key=m.key, label=m.label + (MIXED if m.group == "latency" else ""), unit=m.unit,
                simulated=simulated, measured=values,
                deltas_pct=[_delta_pct(ref, v) for v in simulated], delta_unit="pp" if in_pp else "%",
                deltas=deltas,
            )
        )  # fmt: skip
    return out


def with_measurements(
    session: Session, comparison: Comparison, ids: Sequence[str], results: Sequence[Result | None]
) -> Comparison:
    """The runs' comparison with the measurements named by `ids` and the figures they align on."""
    measured = [load_measurement_view(session, i) for i in ids]
    compared = [
        ComparedMeasurement(id=m.id, url=m.url, title=m.title, kind=m.kind)  # type: ignore[arg-type]
        for m in measured
    ]
    warnings = like.measurement_warnings([m.model_dump() for m in compared])
    return comparison.model_copy(
        update={
            "measurements": compared,
            "measured": measured_metrics(measured, results),
            "measured_states": state_comparison([(m.id, m.view) for m in measured], results),
            "warnings": [*comparison.warnings, *(CompareWarning(**w) for w in warnings)],
        }
    )


def overlay_charts(
    measured: Sequence[MeasurementView], runs: Sequence[tuple[str, Result | None]]
) -> dict[str, dict[str, Any]]:
    """WakeLatency and IntrLatency of the runs (`wake`, `intr`) and of the wult measurements over
    all their datapoints, on shared axes: the tail (log-log) and the percentiles (log)."""
    out: dict[str, dict[str, Any]] = {}
    wult = [m for m in measured if m.kind == "wult"]
    if not wult:
        return out
    for metric, source in _LATENCY:
        series: list[Series] = []
        for i, (label, result) in enumerate(runs):
            stats = (result or {}).get("latency", {}).get(source) if result else None
            if stats:
                series.append((f"{label} (simulated)", stats, SIMULATED_COLOUR, i + 1))
        for j, m in enumerate(wult):
            stats = m.view["overall"].get(metric)
            if stats:
                series.append((f"M{j + 1}: {m.title[:30]} (measured)", stats, MEASURED_COLOUR, j))
        if len(series) >= 2:
            out[f"measured_{source}_tail"] = tail_figure(series, f"{metric}: measured and simulated, tail")
            out[f"measured_{source}_percentiles"] = percentile_figure(series, f"{metric} percentiles")
    return out


def page_context(
    session: Session, comparison: Comparison, runs: Sequence[tuple[str, Result | None]]
) -> dict[str, Any]:
    """What the compare page's measured section (`_compare_measured.html`) shows."""
    if not comparison.measurements:
        return {"measured": None}
    measured = [load_measurement_view(session, m.id) for m in comparison.measurements]
    states = comparison.measured_states
    wult_labels = [f"M{i + 1}" for i, m in enumerate(comparison.measurements) if m.kind == "wult"]
    return {
        "measured": {
            "measurements": [m.model_dump() for m in comparison.measurements],
            "metrics": [m.model_dump() for m in comparison.measured],
            "charts": overlay_charts(measured, runs),
            "states": None if states is None else states.model_dump(),
            "wult_labels": wult_labels,
            "proportions": None
            if states is None
            else proportions(states, [label for label, _ in runs], wult_labels),
        }
    }


def run_label(run: Mapping[str, Any], i: int) -> str:
    title = (run.get("title") or "").strip()
    if len(title) > 40:
        title = title[:37] + "..."
    return f"{chr(ord('A') + i % 26)}: {title or run['id']}"


VERDICT_MARKS = {"better": "✓", "worse": "✗", "higher": "▲", "lower": "▼", "no_significant_change": "~"}


def annotate_metrics(metrics: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Compared metrics for display: ns shown in us, shares in %; each run after the first with
    its change, 95% interval and the statistics' verdict (none without 3 repeats a side: a point
    delta of single runs is not judged)."""
    rows = []
    for m in metrics:
        scale, unit = {"ns": (1e-3, "us"), "share": (100.0, "%")}.get(m["unit"], (1.0, m["unit"]))
        values = [None if v is None else v * scale for v in m["values"]]
        if all(v is None for v in values):
            continue
        stats = bool(m.get("verdict"))  # absent or empty: single runs, no statistics
        deltas = []
        for i, delta in enumerate(m["deltas"]):
            verdict = m["verdict"][i] if stats else None
            deltas.append(
                {
                    "value": m["change"][i] if stats and i else delta,
                    "unit": m["delta_unit"],
                    "verdict": verdict,
                    "mark": VERDICT_MARKS.get(verdict or "", ""),
                    "ci95": m["ci95"][i] if stats else None,
                    "reason": m["ci95_reason"][i] if stats else None,
                }
            )
        spread = m["stddev_pct"] if stats else [None] * len(values)
        estimate = m["group"] == "energy" or "estimate" in m["label"]
        rows.append(
            {**m, "unit": unit, "values": values, "spread": spread, "deltas": deltas, "estimate": estimate}
        )
    return rows

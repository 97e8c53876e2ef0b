"""Measurements beside runs on `/compare`: the figures both have, aligned, and the measured
distributions overlaid on the simulated ones.

Kept apart from the runs' own comparison (`app.runs.views.compare_view` only hands over the ids
that name measurements), so that either side changes without touching the other.

What aligns: wult's WakeLatency and IntrLatency over all its datapoints against a run's `wake`
and `intr` latency statistics (the same percentiles, the same log bins); turbostat's summary
columns against the run's `hardware.system.turbostat` (PkgWatt: turbostat sums packages, the
run's figure is per package, so it is multiplied by the run's sockets), and turbostat's
requested-residency columns (`C6%`...) against the run's state residencies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from app.measurements import store
from app.measurements.charts import (
    MEASURED_COLOUR,
    SIMULATED_COLOUR,
    Series,
    percentile_figure,
    tail_figure,
)
from app.measurements.turbostat import KEY_COLUMNS
from app.measurements.views import MeasurementView, load_measurement_view
from app.schemas import ComparedMeasurement, Comparison, MeasuredMetric

Result = Mapping[str, Any]
_LATENCY = (("WakeLatency", "wake"), ("IntrLatency", "intr"))
_STATS = (("mean_ns", "mean"), ("p50_ns", "p50"), ("p90_ns", "p90"), ("p99_ns", "p99"), ("p999_ns", "p99.9"))


def measurement_ids(session: Session, ids: Sequence[str]) -> list[str]:
    """Those of `ids` that name measurements (in their order)."""
    found = store.existing_ids(session, list(ids))
    return [i for i in ids if i in found]


def _run_latency(source: str, key: str) -> Callable[[Result], float | None]:
    def read(r: Result) -> float | None:
        stats = (r.get("latency") or {}).get(source)
        return None if not stats or not stats.get("count") else float(stats[key])

    return read


def _run_turbostat(column: str) -> Callable[[Result], float | None]:
    def read(r: Result) -> float | None:
        value = r["hardware"]["system"]["turbostat"].get(column)
        if value is None:
            return None
        return float(value) * r["sockets"] if column == "PkgWatt" else float(value)

    return read


def _run_state_pct(state: str) -> Callable[[Result], float | None]:
    def read(r: Result) -> float | None:
        share = next((s["residency"] for s in r["states"] if s["name"] == state), None)
        return None if share is None else 100.0 * share

    return read


def _measured(m: MeasurementView, path: Sequence[str]) -> float | None:
    node: Any = m.view
    for p in path:
        node = node.get(p) if isinstance(node, Mapping) else None
    return None if node is None else float(node)


Row = tuple[str, str, str, Callable[[Result], Any], list[str]]


def _rows(measured: Sequence[MeasurementView]) -> list[Row]:
    """(key, label, unit, run reader, path into a measurement's view) of every figure to align."""
    rows: list[Row] = []
    kinds = {m.kind for m in measured}
    if "wult" in kinds:
        for metric, source in _LATENCY:
            for key, name in _STATS:
                rows.append(
                    (f"latency.{source}.{key}", f"{metric} {name}", "ns", _run_latency(source, key),
                     ["overall", metric, key])
                )  # fmt: skip
    if "turbostat" in kinds:
        columns = [c for c in KEY_COLUMNS]
        for m in measured:
            columns += [c for c in m.view.get("summary", {}) if c not in columns and c.endswith("%")]
        for column in columns:
            if column in KEY_COLUMNS:
                unit = "W" if column == "PkgWatt" else "%"
                read = _run_turbostat(column)
                rows.append((f"turbostat.{column}", column, unit, read, ["summary", column]))
            elif not column.startswith(("CPU%", "Pkg%", "Pk%", "Busy", "Mod%", "Totl", "Any", "GFX", "SYS")):
                state = column[:-1]  # "C6%": requested residency of cpuidle state C6
                label = f"{column} (time requested in {state})"
                rows.append((f"turbostat.{column}", label, "%", _run_state_pct(state), ["summary", column]))
    return rows


def _delta_pct(measured: float | None, simulated: float | None) -> float | None:
    if measured is None or simulated is None or measured == 0:
        return None
    return (simulated - measured) / abs(measured) * 100.0


def measured_metrics(
    measured: Sequence[MeasurementView], results: Sequence[Result | None]
) -> list[MeasuredMetric]:
    """Every figure both a run and a measurement have: `simulated[i]` of run i, `measured[j]` of
    measurement j, `deltas_pct[i]` run i against the first measurement that has the figure."""
    out = []
    for key, label, unit, read, path in _rows(measured):
        values = [_measured(m, path) for m in measured]
        simulated = [None if r is None else read(r) for r in results]
        if all(v is None for v in values) or all(v is None for v in simulated):
            continue
        ref = next((v for v in values if v is not None), None)
        out.append(
            MeasuredMetric(
                key=key,
                label=label,
                unit=unit,
                simulated=simulated,
                measured=values,
                deltas_pct=[_delta_pct(ref, v) for v in simulated],
            )
        )
    return out


def with_measurements(
    session: Session, comparison: Comparison, ids: Sequence[str], results: Sequence[Result | None]
) -> Comparison:
    """The runs' comparison with the measurements named by `ids` and the figures they align on."""
    measured = [load_measurement_view(session, i) for i in ids]
    return comparison.model_copy(
        update={
            "measurements": [
                ComparedMeasurement(id=m.id, url=m.url, title=m.title, kind=m.kind)  # type: ignore[arg-type]
                for m in measured
            ],
            "measured": measured_metrics(measured, results),
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
    return {
        "measured": {
            "measurements": [m.model_dump() for m in comparison.measurements],
            "metrics": [m.model_dump() for m in comparison.measured],
            "charts": overlay_charts(measured, runs),
        }
    }

"""A sweep's charts as Plotly figure dicts: a metric against one axis (a line per value of the
other axes), and latency vs energy with the Pareto front marked. Pure functions of `sweep_view`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.charts.base import Figure, _figure, _scatter
from app.core.models import Run

Point = Mapping[str, Any]

_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _label(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "all"


# How a metric's unit is shown: latencies in us (as wult and intel_idle write them), shares in %
# (as run pages show them), the rest as the registry gives them.
_SHOWN_UNITS: dict[str, tuple[float, str]] = {
    "ns": (1e-3, "us"),
    "share": (100.0, "%"),
    "J": (1.0, "J"),
    "W": (1.0, "W"),
    "%": (1.0, "%"),
    "cycles": (1.0, "cycles"),
}


def shown_unit(metric: str) -> tuple[float, str]:
    """(scale, unit) a sweep metric is shown in: its registry unit where the runs table's column
    has one, else by its name (`*_ns` latencies)."""
    column = Run.__table__.c.get(metric)
    registered = column.info.get("result") if column is not None else None
    unit = registered.unit if registered is not None else "ns" if metric.endswith("_ns") else ""
    return _SHOWN_UNITS.get(unit, (1.0, ""))


def _scale(metric: str) -> tuple[float, str]:
    scale, unit = shown_unit(metric)
    return scale, f" ({unit})" if unit else ""


def _groups(
    points: Sequence[Point], axes: Sequence[Mapping[str, Any]], x_path: str
) -> dict[str, list[Point]]:
    """Points by the values of the axes other than `x_path` (a line of the metric chart each),
    every combination present, in the axes' order, finished or not."""
    others = [a["path"] for a in axes if a["path"] != x_path]
    groups: dict[str, list[Point]] = {}
    for p in points:
        groups.setdefault(_label({k: p["values"][k] for k in others}), []).append(p)
    return groups


def metric_figure(
    points: Sequence[Point], axes: Sequence[Mapping[str, Any]], metric: str, label: str, x_path: str
) -> Figure:
    """`metric` of the finished points against the axis `x_path`, one line per combination of the
    other axes' values (in the axes' own order of values); with repeats, the mean with an error
    bar of one standard deviation over the repeats."""
    scale, unit = _scale(metric)
    lines = {
        name: [p for p in pts if p["status"] == "done" and p.get(metric) is not None]
        for name, pts in _groups(points, axes, x_path).items()
    }
    numeric = all(isinstance(v, int | float) for a in axes if a["path"] == x_path for v in a["values"])
    traces = [
        _scatter(
            x=[p["values"][x_path] for p in pts],
            y=[p[metric] * scale for p in pts],
            name=name,
            mode="lines+markers",
            line={"dash": _DASHES[(i // 10) % len(_DASHES)]},
            customdata=[p["run_id"] for p in pts],
            error_y=_error_bars([(p.get("stddev") or {}).get(metric) for p in pts], scale),
            hovertemplate=f"{x_path}=%{{x}}<br>{label}=%{{y}}<br>run %{{customdata}}<extra>{name}</extra>",
        )
        for i, (name, pts) in enumerate(lines.items())
    ]
    log_x = numeric and all(v > 0 for a in axes if a["path"] == x_path for v in a["values"])
    return _figure(
        traces,
        f"{label} vs {x_path}",
        xaxis={"title": {"text": x_path}, "type": "log" if log_x else None},
        yaxis={"title": {"text": label + unit}},
    )


def _error_bars(stddevs: Sequence[float | None], scale: float) -> dict[str, Any] | None:
    if all(s is None for s in stddevs):
        return None
    return {"type": "data", "array": [0.0 if s is None else s * scale for s in stddevs], "visible": True}


def pareto_front(pairs: Sequence[tuple[float, float]]) -> list[int]:
    """Indexes of the pairs no other pair beats on both (lower is better on both), by the first."""
    order = sorted(range(len(pairs)), key=lambda i: (pairs[i][0], pairs[i][1]))
    front, best = [], float("inf")
    for i in order:
        if pairs[i][1] < best:
            front.append(i)
            best = pairs[i][1]
    return front


# The front is drawn in a colour no group of points takes (the template's colorway has no black).
_FRONT_COLOR = "#222222"


def pareto_figure(
    points: Sequence[Point],
    latency: str,
    latency_label: str,
    energy: str,
    energy_label: str,
    axes: Sequence[Mapping[str, Any]] = (),
    x_path: str = "",
) -> Figure:
    """Each finished point's latency against its energy, coloured by the values of the axes other
    than `x_path` (the metric chart's lines, in the same colours); the Pareto front as a line."""
    done = [
        p
        for p in points
        if p["status"] == "done" and p.get(latency) is not None and p.get(energy) is not None
    ]
    x_scale, x_unit = _scale(latency)
    y_scale, y_unit = _scale(energy)

    def pair(p: Point) -> tuple[float, float]:
        return p[latency] * x_scale, p[energy] * y_scale

    def hover(name: str) -> str:
        return (
            f"%{{text}}<br>{latency_label}=%{{x}}{x_unit}<br>{energy_label}=%{{y}}{y_unit}"
            f"<br>run %{{customdata}}<extra>{name}</extra>"
        )

    traces = []
    for name, group in _groups(points, axes, x_path).items():
        shown = [p for p in group if p in done]
        traces.append(
            _scatter(
                x=[pair(p)[0] for p in shown],
                y=[pair(p)[1] for p in shown],
                text=[_label(p["values"]) for p in shown],
                customdata=[p["run_id"] for p in shown],
                mode="markers",
                name=name,
                marker={"size": 9},
                hovertemplate=hover(name),
            )
        )
    pairs = [pair(p) for p in done]
    front = pareto_front(pairs)
    traces.append(
        _scatter(
            x=[pairs[i][0] for i in front],
            y=[pairs[i][1] for i in front],
            text=[_label(done[i]["values"]) for i in front],
            customdata=[done[i]["run_id"] for i in front],
            mode="lines+markers",
            name="Pareto front",
            line={"color": _FRONT_COLOR, "width": 1},
            marker={"symbol": "diamond-open", "size": 13, "color": _FRONT_COLOR},
            hovertemplate=hover("Pareto front"),
        )
    )
    return _figure(
        traces,
        f"{latency_label} vs {energy_label}",
        xaxis={"title": {"text": latency_label + x_unit}},
        yaxis={"title": {"text": energy_label + y_unit}},
    )

"""A sweep's charts as Plotly figure dicts: a metric against one axis (a line per value of the
other axes), and latency vs energy with the Pareto front marked. Pure functions of `sweep_view`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.charts.base import Figure, _figure, _scatter

Point = Mapping[str, Any]

_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _label(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "all"


def _scale(metric: str) -> tuple[float, str]:
    """Latencies are shown in us, as wult and intel_idle write them."""
    return (1e-3, " (us)") if metric.endswith("_ns") else (1.0, "")


def metric_figure(
    points: Sequence[Point], axes: Sequence[Mapping[str, Any]], metric: str, label: str, x_path: str
) -> Figure:
    """`metric` of the finished points against the axis `x_path`, one line per combination of the
    other axes' values (in the axes' own order of values); with repeats, the mean with an error
    bar of one standard deviation over the repeats."""
    scale, unit = _scale(metric)
    others = [a["path"] for a in axes if a["path"] != x_path]
    lines: dict[str, list[Point]] = {}
    for p in points:
        key = _label({k: p["values"][k] for k in others})
        lines.setdefault(key, [])
        if p["status"] == "done" and p.get(metric) is not None:
            lines[key].append(p)
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


def pareto_figure(
    points: Sequence[Point], latency: str, latency_label: str, energy: str, energy_label: str
) -> Figure:
    """Each finished point's latency against its energy; the Pareto front as a line."""
    done = [
        p
        for p in points
        if p["status"] == "done" and p.get(latency) is not None and p.get(energy) is not None
    ]
    scale, unit = _scale(latency)
    pairs = [(p[latency] * scale, p[energy]) for p in done]
    front = pareto_front(pairs)
    text = [_label(p["values"]) for p in done]
    traces = [
        _scatter(
            x=[x for x, _ in pairs],
            y=[y for _, y in pairs],
            text=text,
            customdata=[p["run_id"] for p in done],
            mode="markers",
            name="points",
            hovertemplate="%{text}<br>%{x}, %{y}<br>run %{customdata}<extra></extra>",
        ),
        _scatter(
            x=[pairs[i][0] for i in front],
            y=[pairs[i][1] for i in front],
            text=[text[i] for i in front],
            mode="lines+markers",
            name="Pareto front",
            marker={"symbol": "diamond", "size": 10},
            hovertemplate="%{text}<extra>Pareto front</extra>",
        ),
    ]
    return _figure(
        traces,
        f"{latency_label} vs {energy_label}",
        xaxis={"title": {"text": latency_label + unit}},
        yaxis={"title": {"text": energy_label}},
    )

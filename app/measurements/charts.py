"""Plotly figures of measured distributions, drawn the way the run pages draw simulated ones, so
that a measurement and a run overlay on the same axes (log latency, log tail probability)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app import charts

PERCENTILE_KEYS = (
    ("p50_ns", "p50"), ("p90_ns", "p90"), ("p99_ns", "p99"), ("p999_ns", "p99.9"), ("max_ns", "max"),
)  # fmt: skip
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
# On a comparison: simulated runs in blue shades (told apart by dash), measurements in orange.
SIMULATED_COLOUR = "#1f77b4"
MEASURED_COLOUR = "#e6550d"

# One series: (legend label, LatencyStats as a dict, CSS colour, line dash index).
Series = tuple[str, Mapping[str, Any], str, int]


def _dash(i: int) -> str:
    return DASHES[i % len(DASHES)]


def _layout(title: str, xaxis: dict[str, Any], yaxis: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "xaxis": xaxis,
        "yaxis": yaxis,
        "margin": {"l": 60, "r": 10, "t": 40, "b": 50},
        "legend": {"orientation": "h", "y": -0.25},
        "height": 380,
    }


def tail_points(stats: Mapping[str, Any]) -> tuple[list[float], list[float]]:
    """Latency (us) against the share of wake-ups slower than it, from the log histogram: the
    right edge of each non-empty bin, and the share of samples at or above that edge."""
    hist = stats["histogram"]
    total = sum(hist["counts"])
    xs: list[float] = []
    ys: list[float] = []
    seen = 0
    for right, n in zip(hist["edges_ns"][1:], hist["counts"], strict=True):
        seen += n
        if n and total - seen > 0:
            xs.append(right / 1000.0)
            ys.append((total - seen) / total)
    return xs, ys


def tail_figure(series: Sequence[Series], title: str) -> dict[str, Any]:
    """1 - CDF on log-log axes: the tail is where measured and simulated part ways."""
    data = []
    for label, stats, colour, dash in series:
        if not stats or not stats.get("count"):
            continue
        xs, ys = tail_points(stats)
        if not xs:  # a single sample has no tail to draw
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "x": xs,
                "y": ys,
                "line": {"color": colour, "dash": _dash(dash), "shape": "hv"},
                "marker": {"size": 4},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            title,
            {"title": {"text": "latency (us)"}, "type": "log"},
            {"title": {"text": "share of wake-ups slower"}, "type": "log", "exponentformat": "power"},
        ),
    }


def percentile_figure(series: Sequence[Series], title: str) -> dict[str, Any]:
    """p50, p90, p99, p99.9 and max per series, on a log latency axis."""
    data = []
    for label, stats, colour, dash in series:
        if not stats or not stats.get("count"):
            continue
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "x": [name for _, name in PERCENTILE_KEYS],
                "y": [stats[key] / 1000.0 for key, _ in PERCENTILE_KEYS],
                "line": {"color": colour, "dash": _dash(dash)},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            title,
            {"title": {"text": "percentile"}, "type": "category"},
            {"title": {"text": "us"}, "type": "log"},
        ),
    }


def measurement_figures(view: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A wult measurement's page charts: per requested C-state, each metric's tail and percentiles;
    a turbostat measurement's: its residency columns as bars."""
    if view["kind"] == "wult":
        out: dict[str, dict[str, Any]] = {}
        for metric in ("WakeLatency", "IntrLatency"):
            series: list[Series] = [
                (r["req_cstate"], r["stats"][metric], charts.state_color(r["req_cstate"]), 0)
                for r in view["requested"]
                if r["stats"].get(metric)
            ]
            if series:
                out[f"{metric}_tail"] = tail_figure(series, f"{metric} by requested C-state: tail")
                out[f"{metric}_percentiles"] = percentile_figure(series, f"{metric} percentiles")
        return out
    columns = [c for c in view["summary"] if c.endswith("%") or c.startswith(("CPU%", "Pkg%", "Pk%"))]
    bars = {
        "type": "bar",
        "x": columns,
        "y": [view["summary"][c] for c in columns],
        "marker": {"color": [charts.state_color(c) for c in columns]},
    }
    return {
        "residency": {
            "data": [bars],
            "layout": _layout(
                "turbostat residency columns (summary rows, mean over intervals)",
                {"type": "category"},
                {"title": {"text": "%"}},
            ),
        }
    }

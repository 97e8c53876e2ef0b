"""What every chart shares: the palette, the plotly template, trace helpers.

Chart builders are pure functions, no I/O: pages embed the figures as JSON and the API serves
the same dicts at `/api/runs/{id}/charts/{name}`. Conventions every chart follows, so a reader
can move between them without re-learning the encoding:

- Colour means *what*: one colour per C-state name (`state_color`), one per latency source
  (`SOURCE_COLORS`), one per IPI wake-up mechanism (`MECHANISM_COLORS`), defined here once.
- On compare charts, *which run* is shown by bar pattern, line dash or marker symbol, never by
  colour, so C6 is the same blue on every page.
- Times are shown in microseconds (`us`, as intel_idle and wult write them); hover texts give the
  exact values, and latency axes are logarithmic (wake-ups span POLL's ~0.1 us to C6's ~100 us).
- Only SVG trace types (bar, scatter, heatmap): no WebGL, so charts draw in any browser and in
  headless test runs.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.colors import get_colorscale

Result = Mapping[str, Any]
Figure = dict[str, Any]

# --- Palette (the only place colours are chosen) ------------------------------------------------

#: C0 (running, not idle): used for busy time in residency charts and the timeline.
BUSY_NAME = "C0"

# Okabe-Ito based, colour-blind safe; ordered roughly shallow (warm) to deep (cool).
_STATE_COLORS: dict[str, str] = {
    BUSY_NAME: "#3d3d3d",
    "POLL": "#E69F00",
    "C1": "#56B4E9",
    "C1_ACPI": "#56B4E9",
    "C1E": "#009E73",
    "C2": "#b8a100",
    "C3": "#CC79A7",
    "C3_ACPI": "#CC79A7",
    "C6": "#0072B2",
    "C6S": "#1f4e9e",
    "C6SP": "#17407f",
    "C7": "#D55E00",
    "C7S": "#a04000",
    "C8": "#8c564b",
    "C9": "#6a3d9a",
    "C10": "#17becf",
}
# Custom tables may use any name: those get a stable colour from this list, chosen by a hash of
# the name (never by position, so a name keeps its colour across tables and pages).
_EXTRA_COLORS = ("#7f7f7f", "#bcbd22", "#9467bd", "#e377c2", "#2ca02c", "#ff7f0e", "#8dd3c7", "#fb8072")

SOURCE_COLORS: dict[str, str] = {
    "wake": "#332288",
    "intr": "#b2182b",
    "timer": "#1a9850",
    "irq": "#8c510a",
    "ipi": "#c51b7d",
    "sched": "#35978f",
}
SOURCE_NAMES: dict[str, str] = {
    "wake": "WakeLatency",
    "intr": "IntrLatency",
    "timer": "timer (cyclictest)",
    "irq": "device interrupt",
    "ipi": "smp_call_function_single",
    "sched": "scheduler wake-up",
}
MECHANISM_COLORS: dict[str, str] = {"ipi": "#b35806", "mwait_rfc": "#542788", "tif_polling": "#1b7837"}
MECHANISM_NAMES: dict[str, str] = {
    "ipi": "IPI",
    "mwait_rfc": "MWAIT wake (2012 RFC)",
    "tif_polling": "TIF_POLLING_NRFLAG",
}

# Which run a trace belongs to on compare charts.
_RUN_PATTERNS = ("", "/", "x", ".", "\\", "+")
_RUN_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
_RUN_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "star")
# Where bars of several runs share their colours (the state's), each run's bars are outlined in
# its own neutral colour, and the legend names the runs by it.
_RUN_OUTLINES = ("#111111", "#8a8a8a", "#6b4226", "#4a4a8c", "#c2a878", "#4f7f7f")

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"

# A small template of our own instead of plotly's default one, which would add ~10 kB of
# unused styling to every figure (the run page must stay well under 1 MB).
_TEMPLATE = go.layout.Template(
    layout=go.Layout(
        font={"family": _FONT, "size": 13, "color": "#222"},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        colorway=list(_EXTRA_COLORS),
        hoverlabel={"font": {"family": _FONT}},
        xaxis={"gridcolor": "#e5e5e5", "linecolor": "#999", "zerolinecolor": "#ccc", "automargin": True},
        yaxis={"gridcolor": "#e5e5e5", "linecolor": "#999", "zerolinecolor": "#ccc", "automargin": True},
        # Below the x axis title (in container coordinates, so it never covers the axis title),
        # horizontal, so long names never squeeze the plot.
        legend={
            "bgcolor": "rgba(255,255,255,0.7)",
            "orientation": "h",
            "yref": "container",
            "yanchor": "bottom",
            "y": 0.01,
            "x": 0,
            "xanchor": "left",
        },
        margin={"l": 60, "r": 20, "t": 50, "b": 40},
    )
)


def state_color(name: str) -> str:
    """The colour of a C-state name, the same on every chart and page (C0 is busy time)."""
    if name in _STATE_COLORS:
        return _STATE_COLORS[name]
    upper = name.upper()
    if upper in _STATE_COLORS:
        return _STATE_COLORS[upper]
    return _EXTRA_COLORS[zlib.crc32(name.encode()) % len(_EXTRA_COLORS)]


def palette(names: Iterable[str]) -> dict[str, str]:
    """Colours for a list of state names (for CSS swatches in tables)."""
    return {n: state_color(n) for n in names}


_TEMPLATE_JSON: dict[str, Any] = _TEMPLATE.to_plotly_json()
_BLUES = [list(stop) for stop in get_colorscale("Blues")]


# --- helpers --------------------------------------------------------------------------------------


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1000.0


def _figure(data: Sequence[Figure], title: str, **layout: Any) -> Figure:
    title_layout = {"text": title, "x": 0.5, "xanchor": "center"}
    # The legend sits under the plot: as many entries a row as fit a half-screen chart (~540 px,
    # ~7 px a character plus the symbol), so long names take more rows.
    names = [str(t.get("name", "")) for t in data if t.get("showlegend") is not False]
    per_row = max(1, 540 // (7 * max((len(n) for n in names), default=1) + 40))
    rows = math.ceil(len(names) / per_row) if layout.get("showlegend", True) else 0
    if "height" not in layout:
        layout["height"] = 400 + 24 * max(0, rows - 1)  # grow with the legend, keep the plot
    # Margins that already hold the axis labels and the legend: plotly's automargin then has
    # nothing to push and draws once (a push redraws the whole chart, which doubled the first
    # screen's drawing time); on a narrow screen it still grows them as needed.
    layout.setdefault("margin", {"l": 70, "r": 20, "t": 50, "b": 70 + 24 * rows})
    return {
        "data": list(data),
        "layout": _without_none({**layout, "template": _TEMPLATE_JSON, "title": title_layout}),
    }


def _without_none(props: Mapping[str, Any]) -> dict[str, Any]:
    """Properties set to None left out, in nested objects too, as plotly does (array items stay)."""
    return {k: _without_none(v) if isinstance(v, Mapping) else v for k, v in props.items() if v is not None}


# Traces as plain dicts, the JSON plotly's graph objects would produce: building those objects
# validates every property on every call, which made a run page's charts cost ~50 ms to build.
def _bar(**props: Any) -> Figure:
    return {"type": "bar", **_without_none(props)}


def _scatter(**props: Any) -> Figure:
    return {"type": "scatter", **_without_none(props)}


def _heatmap(**props: Any) -> Figure:
    return {"type": "heatmap", **_without_none(props)}


def _state_names(result: Result) -> list[str]:
    return [s["name"] for s in result["states"]]


def _suffix(label: str) -> str:
    return f" · {label}" if label else ""


def _run_pattern(i: int) -> dict[str, Any]:
    """Bar marker pattern of the i-th compared run: none for the first (plain fill), then hatches
    drawn over the colour (the colour keeps meaning the state or mechanism)."""
    shape = _RUN_PATTERNS[i % len(_RUN_PATTERNS)]
    if not shape:
        return {}
    return {"pattern": {"shape": shape, "fgcolor": "#ffffff", "fillmode": "overlay"}}


def _run_outline(i: int) -> str:
    return _RUN_OUTLINES[i % len(_RUN_OUTLINES)]


def _run_legend_entry(i: int, label: str) -> Figure:
    """A legend entry for the i-th run of a bar chart whose bars take the state's colour: a square
    in the run's outline colour that shows or hides the run's bars (their `legendgroup`). A marker
    with no point, not a bar: an empty bar trace would still take a slot in each bar group."""
    return _scatter(
        name=label,
        legendgroup=f"run-{i}",
        x=[None],
        y=[None],
        mode="markers",
        marker={"symbol": "square", "size": 13, "color": _run_outline(i)},
        hoverinfo="skip",
    )


def _runs(result_or_runs: Result | Sequence[tuple[str, Result]]) -> list[tuple[str, Result]]:
    if isinstance(result_or_runs, Mapping):
        return [("", result_or_runs)]
    return list(result_or_runs)

"""Chart builders: a run's result (or a platform table) in, a Plotly figure dict out.

Pure functions, no I/O: pages embed the figures as JSON and the API serves the same dicts at
`/api/runs/{id}/charts/{name}`. Conventions every chart follows, so a reader can move between
them without re-learning the encoding:

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import plotly.graph_objects as go
from plotly.colors import get_colorscale

from engine.result import LATENCY_LABELS, LATENCY_SOURCES

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
    if "height" not in layout:
        # The legend sits under the plot, about three entries a row: grow with it, keep the plot.
        entries = sum(1 for t in data if t.get("showlegend") is not False)
        rows = math.ceil(entries / 3) if layout.get("showlegend", True) else 0
        layout["height"] = 400 + 24 * max(0, rows - 1)
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


def _runs(result_or_runs: Result | Sequence[tuple[str, Result]]) -> list[tuple[str, Result]]:
    if isinstance(result_or_runs, Mapping):
        return [("", result_or_runs)]
    return list(result_or_runs)


# --- run charts ----------------------------------------------------------------------------------


def residency_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Share of simulated CPU time in each C-state and in C0 (busy), as bars.

    With several runs, bars are grouped per state; the state keeps its colour and each run gets
    its own fill pattern.
    """
    runs = _runs(result_or_runs)
    traces = []
    for i, (label, result) in enumerate(runs):
        names = [*_state_names(result), BUSY_NAME]
        shares = [s["residency"] * 100 for s in result["states"]] + [result["busy_share"] * 100]
        usage = [s["usage"] for s in result["states"]] + [None]
        time_ms = [s["time_ns"] / 1e6 for s in result["states"]] + [None]
        above = [s["above"] for s in result["states"]] + [None]
        below = [s["below"] for s in result["states"]] + [None]
        custom = [[u, t, a, b] for u, t, a, b in zip(usage, time_ms, above, below, strict=True)]
        traces.append(
            _bar(
                name=label or "residency",
                x=names,
                y=shares,
                marker={
                    "color": [state_color(n) for n in names],
                    **_run_pattern(i),
                    "line": {"color": "#333", "width": 0.5},
                },
                customdata=custom,
                texttemplate="%{y:.1f}%" if len(runs) == 1 else None,
                textposition="outside",
                hovertemplate=(
                    "<b>%{x}</b>" + _suffix(label) + "<br>%{y:.2f}% of CPU time<br>usage %{customdata[0]}"
                    "<br>time %{customdata[1]:.3f} ms<br>above %{customdata[2]} · below %{customdata[3]}"
                    "<extra></extra>"
                ),
            )
        )
    return _figure(
        traces,
        "Residency per C-state (C0 = busy)",
        barmode="group",
        showlegend=len(runs) > 1,
        xaxis={"title": {"text": "C-state"}, "type": "category"},
        yaxis={"title": {"text": "Share of CPU time (%)"}, "rangemode": "tozero"},
    )


def hardware_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """The hardware view beside cpuidle's: per socket, the share of its cores in each core C-state
    and of its package in each package C-state (stacked bars, turbostat's CPU%cN and Pkg%pcN)."""
    runs = _runs(result_or_runs)
    traces = []
    for i, (label, result) in enumerate(runs):
        groups = [*result["hardware"]["sockets"], result["hardware"]["system"]]
        where = [f"socket {g['socket']}" if g["socket"] is not None else "system" for g in groups]
        for kind, key in (("cores", "core"), ("package", "package")):
            x = [where, [f"{kind}{_suffix(label)}"] * len(where)]
            for name in groups[0][key]:
                shown = name.replace("CC", "C") if key == "core" else name
                traces.append(
                    _bar(
                        name=shown,
                        legendgroup=shown,
                        showlegend=i == 0,
                        x=x,
                        y=[g[key][name] * 100 for g in groups],
                        marker={"color": state_color(shown), **_run_pattern(i)},
                        hovertemplate=f"<b>{name}</b> %{{x}}<br>%{{y:.2f}}%<extra></extra>",
                    )
                )
    return _figure(
        traces,
        "Hardware residency: core and package C-states (turbostat's view)",
        barmode="stack",
        xaxis={"type": "multicategory"},
        yaxis={"title": {"text": "Share of time (%)"}, "range": [0, 100]},
    )


def residency_per_cpu_figure(result: Result) -> Figure:
    """Per-CPU residency as a heatmap: CPUs down, states (then C0) across, share in %."""
    # The engine names the last column "busy"; every chart calls it C0.
    names = [BUSY_NAME if n == "busy" else n for n in result["per_cpu_state_names"]]
    rows = result["per_cpu_residency"]
    width = len(rows[0]) if rows else len(names)
    if len(names) < width:
        names = [*names, BUSY_NAME]
    z = [[v * 100 for v in row] for row in rows]
    cpus = [f"CPU {i}" for i in range(len(rows))]
    trace = _heatmap(
        z=z,
        x=names[:width],
        y=cpus,
        colorscale=_BLUES,
        zmin=0,
        zmax=100,
        colorbar={"title": {"text": "% of CPU time"}},
        xgap=1,
        ygap=1 if len(rows) <= 64 else 0,
        hovertemplate="%{y} · <b>%{x}</b><br>%{z:.2f}% of its time<extra></extra>",
    )
    height = max(260, min(900, 90 + 18 * len(rows)))
    return _figure(
        [trace],
        "Residency per CPU",
        height=height,
        xaxis={"title": {"text": "C-state"}, "type": "category", "side": "bottom"},
        yaxis={"title": {"text": "CPU"}, "autorange": "reversed", "type": "category"},
    )


def _sig(x: float, digits: int = 5) -> float:
    """Round to significant digits: hover texts keep their precision, the page loses the noise."""
    return float(f"{x:.{digits}g}")


def _hist_points(hist: Mapping[str, Any]) -> tuple[list[float], list[float], list[int]]:
    """Bin edges (us), share of samples per bin (%) and counts, empty bins at both ends dropped."""
    counts = list(hist["counts"])
    edges_ns = list(hist["edges_ns"])
    nonzero = [i for i, c in enumerate(counts) if c]
    if not nonzero:
        return [], [], []
    first, last = nonzero[0], nonzero[-1]
    counts = counts[first : last + 1]
    edges = [_sig(e / 1000.0) for e in edges_ns[first : last + 2]]
    total = sum(counts)
    return edges, [_sig(c / total * 100, 4) for c in counts], counts


def _sources(result: Result) -> list[str]:
    return [k for k in SOURCE_NAMES if k in result["latency"] and result["latency"][k]["count"] > 0]


def latency_histogram_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Log-binned latency histogram per wake-up source, as step lines on a log x axis (us).

    Bins are shown as the share of that source's samples, so sources with very different
    counts can be read on one axis; hover gives the bin edges and the raw count.
    """
    runs = _runs(result_or_runs)
    traces = []
    for i, (label, result) in enumerate(runs):
        for src in _sources(result):
            stats = result["latency"][src]
            edges, share, counts = _hist_points(stats["histogram"])
            if not counts:
                continue
            # A step line: each bin drawn from its lower to its upper edge.
            xs = [*edges[:-1], edges[-1]]
            ys = [*share, share[-1]]
            custom = [[lo, hi, c] for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)]
            custom.append(custom[-1])
            traces.append(
                _scatter(
                    name=SOURCE_NAMES[src] + _suffix(label),
                    legendgroup=src,
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={
                        "shape": "hv",
                        "color": SOURCE_COLORS[src],
                        "dash": _RUN_DASHES[i % len(_RUN_DASHES)],
                    },
                    customdata=custom,
                    hovertemplate=(
                        f"<b>{SOURCE_NAMES[src]}</b>{_suffix(label)}<br>"
                        "[%{customdata[0]:.3g}, %{customdata[1]:.3g}) us<br>"
                        "%{customdata[2]} samples (%{y:.2f}%)<extra></extra>"
                    ),
                )
            )
    return _figure(
        traces,
        "Latency histogram per wake-up source",
        hovermode="closest",
        xaxis={"title": {"text": "Latency (us, log scale)"}, "type": "log"},
        yaxis={"title": {"text": "Share of samples (%)"}, "rangemode": "tozero"},
    )


def latency_cdf_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Cumulative latency distribution per source on a log x axis (us), from the histograms.

    Each point is a bin's upper edge: the share of samples below it. p50/p99/p99.9 from the
    exact statistics are in the hover text, since a log-binned CDF only approximates them.
    """
    runs = _runs(result_or_runs)
    traces = []
    for i, (label, result) in enumerate(runs):
        for src in _sources(result):
            stats = result["latency"][src]
            edges, _, counts = _hist_points(stats["histogram"])
            if not counts:
                continue
            total = sum(counts)
            acc = 0
            cdf = []
            for c in counts:
                acc += c
                cdf.append(_sig(acc / total * 100, 5))
            xs = edges
            ys = [0.0, *cdf]
            summary = (
                f"mean {stats['mean_ns'] / 1000:.3g} us · p50 {stats['p50_ns'] / 1000:.3g} · "
                f"p99 {stats['p99_ns'] / 1000:.3g} · p99.9 {stats['p999_ns'] / 1000:.3g} · "
                f"max {stats['max_ns'] / 1000:.3g} us ({stats['count']} samples)"
            )
            traces.append(
                _scatter(
                    name=SOURCE_NAMES[src] + _suffix(label),
                    legendgroup=src,
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={"color": SOURCE_COLORS[src], "dash": _RUN_DASHES[i % len(_RUN_DASHES)]},
                    hovertemplate=(
                        f"<b>{SOURCE_NAMES[src]}</b>{_suffix(label)}<br>"
                        "%{y:.2f}% below %{x:.3g} us<br>" + summary + "<extra></extra>"
                    ),
                )
            )
    return _figure(
        traces,
        "Latency CDF per wake-up source",
        hovermode="closest",
        xaxis={"title": {"text": "Latency (us, log scale)"}, "type": "log"},
        yaxis={"title": {"text": "Samples at or below (%)"}, "range": [0, 101]},
    )


def wake_vs_intr_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """wult's WakeLatency against IntrLatency: per-state means, and the overall quantiles.

    Above the diagonal the interrupt handler ran before idle returned (IRQ_ENABLE states: the
    handler runs straight out of MWAIT); below it, idle returned first and the interrupt waited
    for the exit housekeeping and local_irq_enable().
    """
    runs = _runs(result_or_runs)
    traces: list[Any] = []
    lo, hi = float("inf"), 0.0
    for i, (label, result) in enumerate(runs):
        symbol = _RUN_SYMBOLS[i % len(_RUN_SYMBOLS)]
        for s in result["states"]:
            wake, intr = _us(s["wake_latency_mean_ns"]), _us(s["intr_latency_mean_ns"])
            if wake is None or intr is None or wake <= 0 or intr <= 0:
                continue
            lo, hi = min(lo, wake, intr), max(hi, wake, intr)
            irq = "IRQ_ENABLE" if s["irq_enable"] else "interrupts off"
            traces.append(
                _scatter(
                    name=s["name"] + _suffix(label),
                    legendgroup=s["name"],
                    x=[intr],
                    y=[wake],
                    mode="markers",
                    marker={
                        "color": state_color(s["name"]),
                        "size": 13,
                        "symbol": symbol,
                        "line": {"color": "#222", "width": 1},
                    },
                    hovertemplate=(
                        f"<b>{s['name']}</b> ({irq}){_suffix(label)}<br>mean IntrLatency %{{x:.3f}} us"
                        "<br>mean WakeLatency %{y:.3f} us<extra></extra>"
                    ),
                )
            )
        lat = result["latency"]
        if lat.get("wake", {}).get("count") and lat.get("intr", {}).get("count"):
            qs = [("p50", "p50_ns"), ("p90", "p90_ns"), ("p99", "p99_ns"), ("p99.9", "p999_ns")]
            xs = [lat["intr"][k] / 1000 for _, k in qs]
            ys = [lat["wake"][k] / 1000 for _, k in qs]
            pos = [(x, y) for x, y in zip(xs, ys, strict=True) if x > 0 and y > 0]
            if pos:
                lo = min(lo, *[min(p) for p in pos])
                hi = max(hi, *[max(p) for p in pos])
            traces.append(
                _scatter(
                    name="quantiles, all wake-ups" + _suffix(label),
                    legendgroup="quantiles",
                    x=xs,
                    y=ys,
                    text=[q for q, _ in qs],
                    mode="lines+markers",
                    line={"color": "#888", "width": 1, "dash": _RUN_DASHES[i % len(_RUN_DASHES)]},
                    marker={"color": "#888", "size": 7, "symbol": symbol},
                    hovertemplate=(
                        "<b>%{text}</b>" + _suffix(label) + "<br>IntrLatency %{x:.3f} us"
                        "<br>WakeLatency %{y:.3f} us<extra></extra>"
                    ),
                )
            )
    if hi > 0:
        a, b = lo / 1.5, hi * 1.5
        traces.insert(
            0,
            _scatter(
                name="WakeLatency = IntrLatency",
                x=[a, b],
                y=[a, b],
                mode="lines",
                line={"color": "#bbb", "dash": "dot", "width": 1},
                hoverinfo="skip",
            ),
        )
    return _figure(
        traces,
        "WakeLatency vs IntrLatency (as wult measures them)",
        hovermode="closest",
        xaxis={"title": {"text": "IntrLatency (us, log scale)"}, "type": "log"},
        yaxis={"title": {"text": "WakeLatency (us, log scale)"}, "type": "log"},
    )


_IPI_CATEGORIES = (
    ("same_socket", "idle_target", "same socket, idle target"),
    ("same_socket", "busy_target", "same socket, busy target"),
    ("other_socket", "idle_target", "other socket, idle target"),
    ("other_socket", "busy_target", "other socket, busy target"),
)


def ipi_cycles_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Sender-side cost of a no-wait smp_call_function_single(), in TSC cycles.

    By target locality (same or other socket) and state (idle or running), coloured by the
    wake-up mechanism. Cycles are TSC cycles at the nominal clock (the RFC does not say how it
    counted; that is the likely reading).
    """
    runs = _runs(result_or_runs)
    # Leave out what no run measured (the other socket of a one-socket run).
    categories = [
        c for c in _IPI_CATEGORIES if any(r["ipi"][c[0]][f"{c[1]}_calls"] for _, r in runs)
    ] or list(_IPI_CATEGORIES[:2])
    traces = []
    for i, (label, result) in enumerate(runs):
        ipi = result["ipi"]
        mech = ipi["mechanism"]
        xs, ys, custom = [], [], []
        for loc, kind, text in categories:
            cost = ipi[loc]
            calls = cost[f"{kind}_calls"]
            mean = cost[f"{kind}_mean_cycles"] if calls else None
            xs.append(text)
            ys.append(mean)
            custom.append([calls, cost["ipis_sent"], cost["calls"]])
        traces.append(
            _bar(
                name=MECHANISM_NAMES.get(mech, mech) + _suffix(label),
                x=xs,
                y=ys,
                marker={
                    "color": MECHANISM_COLORS.get(mech, "#777"),
                    **_run_pattern(i),
                },
                customdata=custom,
                texttemplate="%{y:.0f}",
                textposition="outside",
                hovertemplate=(
                    "<b>%{x}</b><br>"
                    + MECHANISM_NAMES.get(mech, mech)
                    + _suffix(label)
                    + "<br>mean %{y:.0f} cycles over %{customdata[0]} calls"
                    "<br>IPIs sent to this locality: %{customdata[1]} of %{customdata[2]} calls"
                    "<extra></extra>"
                ),
            )
        )
    return _figure(
        traces,
        "IPI sender cost by target locality and wake-up mechanism",
        barmode="group",
        showlegend=True,
        xaxis={"title": {"text": "Target"}, "type": "category"},
        yaxis={"title": {"text": "Sender cost (TSC cycles, mean)"}, "rangemode": "tozero"},
    )


TIMELINE_MAX_SEGMENTS = 5000


def timeline_figure(result: Result) -> Figure:
    """Which state each of the first few CPUs was in, over the first milliseconds (us).

    At most `TIMELINE_MAX_SEGMENTS` bars are drawn (a busy 16-CPU, 100 ms timeline could hold
    hundreds of thousands, and the run page must stay small): past that, the window is cut
    short and the title says where.
    """
    names = _state_names(result)
    by_state: dict[int, tuple[list[str], list[float], list[float], list[list[float]]]] = {}
    cpus = []
    starts = sorted(seg[0] for tl in result["timeline"] for seg in tl["segments"])
    cutoff = starts[TIMELINE_MAX_SEGMENTS] if len(starts) > TIMELINE_MAX_SEGMENTS else None
    for tl in result["timeline"]:
        cpu = f"CPU {tl['cpu']}"
        cpus.append(cpu)
        for start, end, state in tl["segments"]:
            if cutoff is not None:
                if start >= cutoff:
                    break
                end = min(end, cutoff)
            ys, base, length, custom = by_state.setdefault(state, ([], [], [], []))
            ys.append(cpu)
            base.append(start / 1000)
            length.append((end - start) / 1000)
            custom.append([start / 1000, end / 1000])
    traces = []
    for state in sorted(by_state, key=lambda s: (s < 0, s)):
        name = BUSY_NAME if state < 0 or state >= len(names) else names[state]
        ys, base, length, custom = by_state[state]
        traces.append(
            _bar(
                name=name + (" (busy)" if name == BUSY_NAME else ""),
                orientation="h",
                y=ys,
                x=length,
                base=base,
                marker={"color": state_color(name), "line": {"width": 0}},
                customdata=custom,
                hovertemplate=(
                    "%{y} · <b>" + name + "</b><br>%{customdata[0]:.2f} to %{customdata[1]:.2f} us"
                    "<br>%{x:.2f} us<extra></extra>"
                ),
            )
        )
    return _figure(
        traces,
        "State timeline (first milliseconds)"
        if cutoff is None
        else f"State timeline (first {cutoff / 1000:,.0f} us: at most {TIMELINE_MAX_SEGMENTS:,} segments)",
        barmode="overlay",
        bargap=0.25,
        height=max(220, 110 + 45 * len(cpus)),
        hovermode="closest",
        xaxis={"title": {"text": "Time since start (us)"}, "rangemode": "tozero"},
        yaxis={
            "title": {"text": "CPU"},
            "type": "category",
            "categoryorder": "array",
            "categoryarray": cpus,
            "autorange": "reversed",
        },
    )


#: Run charts by name, in page order: `GET /api/runs/{id}/charts/{name}` serves these.
CHARTS: dict[str, Callable[[Result], Figure]] = {
    "residency": residency_figure,
    "residency_per_cpu": residency_per_cpu_figure,
    "latency_histogram": latency_histogram_figure,
    "latency_cdf": latency_cdf_figure,
    "wake_vs_intr": wake_vs_intr_figure,
    "ipi_cycles": ipi_cycles_figure,
    "timeline": timeline_figure,
    "hardware": hardware_figure,
}

#: Charts that overlay several runs on the compare page.
COMPARE_CHARTS: dict[str, Callable[[Sequence[tuple[str, Result]]], Figure]] = {
    "residency": residency_figure,
    "latency_cdf": latency_cdf_figure,
    "wake_vs_intr": wake_vs_intr_figure,
    "ipi_cycles": ipi_cycles_figure,
    "hardware": hardware_figure,
}


def run_chart(name: str, result: Result) -> Figure:
    """One run chart by name; `KeyError` for an unknown name."""
    return CHARTS[name](result)


def run_charts(result: Result) -> dict[str, Figure]:
    return {name: build(result) for name, build in CHARTS.items()}


def compare_charts(runs: Sequence[tuple[str, Result]]) -> dict[str, Figure]:
    return {name: build(runs) for name, build in COMPARE_CHARTS.items()}


# --- platform chart ------------------------------------------------------------------------------


def _get(obj: Any, key: str) -> Any:
    return obj[key] if isinstance(obj, Mapping) else getattr(obj, key)


def platform_figure(platforms: Sequence[Any]) -> Figure:
    """Exit latency against target residency for each state of one or more platform tables.

    Log axes, so POLL (0 us, 0 us) is left out. For states whose table value is a worst case
    with a known or estimated median, a hollow marker shows the median, joined to the table
    value. Each platform gets a marker symbol; each state its colour.
    """
    traces = []
    for i, platform in enumerate(platforms):
        pname = _get(platform, "name")
        symbol = _RUN_SYMBOLS[i % len(_RUN_SYMBOLS)]
        for s in _get(platform, "states"):
            name = _get(s, "name")
            exit_us = float(_get(s, "exit_latency_us"))
            res_us = float(_get(s, "target_residency_us"))
            if exit_us <= 0 or res_us <= 0:
                continue
            flags = ", ".join(f.removeprefix("CPUIDLE_FLAG_") for f in _get(s, "flags")) or "none"
            hint = _get(s, "mwait_hint") or "-"
            suffix = f" · {pname}" if len(platforms) > 1 else ""
            traces.append(
                _scatter(
                    name=name + suffix,
                    legendgroup=name,
                    x=[res_us],
                    y=[exit_us],
                    mode="markers+text",
                    text=[name],
                    textposition="middle right",
                    marker={
                        "color": state_color(name),
                        "size": 13,
                        "symbol": symbol,
                        "line": {"color": "#222", "width": 1},
                    },
                    hovertemplate=(
                        f"<b>{name}</b>{suffix} (MWAIT {hint})<br>target residency %{{x:g}} us"
                        f"<br>exit latency %{{y:g}} us (table, worst case)<br>flags: {flags}<extra></extra>"
                    ),
                )
            )
            med = _get(s, "exit_latency_median_us")
            if med is not None:
                value, kind = float(_get(med, "value")), _get(med, "kind")
                if value > 0:
                    traces.append(
                        _scatter(
                            name=f"{name} median exit ({kind}){suffix}",
                            legendgroup=name,
                            showlegend=False,
                            x=[res_us, res_us],
                            y=[value, exit_us],
                            mode="lines+markers",
                            line={"color": state_color(name), "width": 1, "dash": "dot"},
                            marker={
                                "color": "#fff",
                                "size": [10, 0],
                                "symbol": f"{symbol}-open",
                                "line": {"color": state_color(name), "width": 2},
                            },
                            hovertemplate=(
                                f"<b>{name}</b>{suffix}<br>median exit latency %{{y:g}} us "
                                f"({'ESTIMATE' if kind == 'estimate' else kind})<extra></extra>"
                            ),
                        )
                    )
    title = "Exit latency vs target residency"
    if len(platforms) > 1:
        title += ": " + " vs ".join(_get(p, "name") for p in platforms)
    return _figure(
        traces,
        title,
        hovermode="closest",
        xaxis={"title": {"text": "Target residency (us, log scale)"}, "type": "log"},
        yaxis={"title": {"text": "Exit latency (us, log scale)"}, "type": "log"},
    )


# --- summary figures (run page cards, compare deltas) -----------------------------------------


@dataclass(frozen=True)
class Metric:
    """A number read from a run's result: its stable key, label, unit, how to read it, and which
    way is better (None: it describes the workload, not a quality). The run page's headline
    figures and the compare table (API and page) are lists of these."""

    key: str
    label: str
    unit: str
    read: Callable[[Result], Any]
    better: Literal["lower", "higher"] | None = None
    group: str = ""
    estimate: bool = False

    def value(self, result: Result | None) -> float | None:
        if result is None:
            return None
        try:
            v = self.read(result)
        except (KeyError, TypeError, IndexError):
            return None
        return None if v is None else float(v)


def _lat(src: str, key: str, scale: float = 1e-3) -> Callable[[Result], float | None]:
    """A latency statistic of one source (None without samples), in us unless `scale` says."""

    def read(r: Result) -> float | None:
        stats = r["latency"].get(src)
        return None if not stats or not stats["count"] else float(stats[key]) * scale

    return read


def _sum_states(key: str) -> Callable[[Result], float]:
    return lambda r: float(sum(s[key] for s in r["states"]))


SUMMARY_METRICS: list[Metric] = [
    Metric("wakeups", "Wake-ups from idle", "", lambda r: r["wakeups"]),
    Metric("busy_share", "Busy (C0)", "%", lambda r: r["busy_share"] * 100),
    Metric("wake_mean_us", "WakeLatency mean", "us", _lat("wake", "mean_ns"), "lower"),
    Metric("wake_p99_us", "WakeLatency p99", "us", _lat("wake", "p99_ns"), "lower"),
    Metric("intr_mean_us", "IntrLatency mean", "us", _lat("intr", "mean_ns"), "lower"),
    Metric("intr_p99_us", "IntrLatency p99", "us", _lat("intr", "p99_ns"), "lower"),
    Metric("timer_mean_us", "Timer latency mean (cyclictest)", "us", _lat("timer", "mean_ns"), "lower"),
    Metric("timer_p99_us", "Timer latency p99 (cyclictest)", "us", _lat("timer", "p99_ns"), "lower"),
    Metric("timer_max_us", "Timer latency max (cyclictest)", "us", _lat("timer", "max_ns"), "lower"),
    Metric("ipi_mean_us", "smp_call_function_single latency mean", "us", _lat("ipi", "mean_ns"), "lower"),
    Metric(
        "ipis_sent", "IPIs sent", "", lambda r: r["ipi"]["ipis_sent"] + r["ipi"]["sched_ipis_sent"], "lower"
    ),
    Metric(
        "ipis_avoided",
        "IPIs avoided",
        "",
        lambda r: r["ipi"]["ipis_avoided"] + r["ipi"]["sched_ipis_avoided"],
        "higher",
    ),
    Metric(
        "sender_same_cycles",
        "Sender cost, same socket",
        "cycles",
        lambda r: r["ipi"]["same_socket"]["mean_cycles"] if r["ipi"]["same_socket"]["calls"] else None,
        "lower",
    ),
    Metric(
        "sender_other_cycles",
        "Sender cost, other socket",
        "cycles",
        lambda r: r["ipi"]["other_socket"]["mean_cycles"] if r["ipi"]["other_socket"]["calls"] else None,
        "lower",
    ),
    Metric(
        "line_transfers",
        "Cache-line transfers",
        "",
        lambda r: r["ipi"]["line_transfers_sender"] + r["ipi"]["line_transfers_target"],
        "lower",
    ),
    Metric("above", "Too deep (above)", "", _sum_states("above"), "lower"),
    Metric("below", "Too shallow (below)", "", _sum_states("below"), "lower"),
    Metric("energy_j", "Energy", "J", lambda r: r["energy"]["joules"], "lower", estimate=True),
    Metric(
        "watts_per_cpu",
        "Mean power per CPU",
        "W",
        lambda r: r["energy"]["mean_watts_per_cpu"],
        "lower",
        estimate=True,
    ),
]


def summary_figures(result: Result) -> list[dict[str, Any]]:
    """The run page's headline numbers: `{"key", "label", "unit", "value", "better", "estimate"}`."""
    out = []
    for m in SUMMARY_METRICS:
        v = m.value(result)
        if v is not None:
            out.append(
                {
                    "key": m.key,
                    "label": m.label,
                    "unit": m.unit,
                    "value": v,
                    "better": m.better,
                    "estimate": m.estimate,
                }
            )
    return out


#: turbostat's columns as the hardware view gives them, with what each counts.
HARDWARE_COLUMNS = {
    "Busy%": "Busy% (thread in C0: MPERF)",
    "CPU%c1": "CPU%c1 (thread idle, core not in C3/C6)",
    "CPU%c3": "CPU%c3 (core C3)",
    "CPU%c6": "CPU%c6 (core C6)",
    "Pkg%pc2": "Pkg%pc2 (package C2)",
    "Pkg%pc3": "Pkg%pc3 (package C3)",
    "Pkg%pc6": "Pkg%pc6 (package C6)",
    "PkgWatt": "PkgWatt per socket (estimate)",
}


def _turbostat(result: Result, column: str) -> float | None:
    value = result["hardware"]["system"]["turbostat"].get(column)
    return None if value is None else float(value)


def _share(percent: float | None) -> float | None:
    return None if percent is None else percent / 100


def _state_value(name: str, key: str) -> Callable[[Result], Any]:
    return lambda r: next((s[key] for s in r["states"] if s["name"] == name), None)


def compare_metrics(state_names: Sequence[str]) -> list[Metric]:
    """The metrics `/api/compare` aligns (raw units: ns, shares, counts; keys are a contract)."""
    out = [
        Metric(f"residency.{n}", f"{n} residency", "share", _state_value(n, "residency"), group="residency")
        for n in state_names
    ]
    out += [
        Metric("busy_share", "Busy (C0) share", "share", lambda r: r["busy_share"], group="residency"),
        Metric("wakeups", "Wake-ups from idle", "count", lambda r: r["wakeups"], group="residency"),
    ]
    out += [
        Metric(f"usage.{n}", f"{n} entries", "count", _state_value(n, "usage"), group="usage")
        for n in state_names
    ]
    for src in LATENCY_SOURCES:
        label = LATENCY_LABELS[src].split(" (")[0].split(":")[0]
        for key, what in (("mean_ns", "mean"), ("p99_ns", "p99")):
            out.append(
                Metric(
                    f"latency.{src}.{key}",
                    f"{label} {what}",
                    "ns",
                    _lat(src, key, scale=1.0),
                    "lower",
                    "latency",
                )
            )
    for loc, loc_label in (("same_socket", "same socket"), ("other_socket", "other socket")):
        out += [
            Metric(
                f"ipi.{loc}.mean_cycles",
                f"Sender cycles, {loc_label}",
                "cycles",
                lambda r, x=loc: r["ipi"][x]["mean_cycles"] if r["ipi"][x]["calls"] else None,
                "lower",
                "ipi",
            ),
            Metric(
                f"ipi.{loc}.idle_target_mean_cycles",
                f"Sender cycles to an idle target, {loc_label}",
                "cycles",
                lambda r, x=loc: r["ipi"][x]["idle_target_mean_cycles"],
                "lower",
                "ipi",
            ),
            Metric(
                f"ipi.{loc}.busy_target_mean_cycles",
                f"Sender cycles to a busy target, {loc_label}",
                "cycles",
                lambda r, x=loc: r["ipi"][x]["busy_target_mean_cycles"],
                "lower",
                "ipi",
            ),
        ]
    for key, label, better in (
        ("requested", "Calls made", None),
        ("ipis_sent", "IPIs sent", "lower"),
        ("ipis_avoided", "IPIs avoided", "higher"),
        ("sched_ipis_sent", "Scheduler wake-up IPIs sent", "lower"),
        ("sched_ipis_avoided", "Scheduler wake-up IPIs avoided", "higher"),
        ("line_transfers_same_socket", "Cache-line transfers, same socket", "lower"),
        ("line_transfers_other_socket", "Cache-line transfers, other socket", "lower"),
    ):
        out.append(Metric(f"ipi.{key}", label, "count", lambda r, k=key: r["ipi"][k], better, "ipi"))  # type: ignore[arg-type]
    # turbostat's columns for the whole system (shares, as the residency rows; PkgWatt per socket).
    for column, label in HARDWARE_COLUMNS.items():
        watts = column == "PkgWatt"
        out.append(
            Metric(
                f"hardware.{column}",
                label,
                "W" if watts else "share",
                lambda r, c=column, w=watts: _turbostat(r, c) if w else _share(_turbostat(r, c)),
                "lower" if watts else None,
                "hardware",
                watts,
            )
        )
    out += [
        Metric(
            "energy.joules",
            "Energy (estimate)",
            "J",
            lambda r: r["energy"]["joules"],
            "lower",
            "energy",
            True,
        ),
        Metric(
            "energy.mean_watts_per_cpu",
            "Mean power per CPU (estimate)",
            "W",
            lambda r: r["energy"]["mean_watts_per_cpu"],
            "lower",
            "energy",
            True,
        ),
    ]
    return out

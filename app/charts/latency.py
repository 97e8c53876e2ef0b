"""Latency charts: histogram, CDF and WakeLatency vs IntrLatency per wake-up source."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from app.charts.base import (
    _RUN_DASHES,
    _RUN_SYMBOLS,
    SOURCE_COLORS,
    SOURCE_NAMES,
    Figure,
    Result,
    _figure,
    _runs,
    _scatter,
    _suffix,
    _us,
    state_color,
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


def _each_source(
    result_or_runs: Result | Sequence[tuple[str, Result]],
) -> Iterator[tuple[int, str, str, Mapping[str, Any]]]:
    """(run index, run label, source, its statistics) of every source with samples, run by run."""
    for i, (label, result) in enumerate(_runs(result_or_runs)):
        for src in _sources(result):
            yield i, label, src, result["latency"][src]


def _source_line(src: str, label: str, i: int, xs: list[float], ys: list[float], **props: Any) -> Figure:
    """One source's line on a latency chart: the source's colour and legend group, the run's dash."""
    line = {"color": SOURCE_COLORS[src], "dash": _RUN_DASHES[i % len(_RUN_DASHES)], **props.pop("line", {})}
    return _scatter(name=SOURCE_NAMES[src] + _suffix(label), legendgroup=src, x=xs, y=ys, line=line, **props)


def latency_histogram_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Log-binned latency histogram per wake-up source, as step lines on a log x axis (us).

    Bins are shown as the share of that source's samples, so sources with very different
    counts can be read on one axis; hover gives the bin edges and the raw count.
    """
    traces = []
    for i, label, src, stats in _each_source(result_or_runs):
        edges, share, counts = _hist_points(stats["histogram"])
        if counts:
            # A step line: each bin drawn from its lower to its upper edge.
            xs = [*edges[:-1], edges[-1]]
            ys = [*share, share[-1]]
            custom = [[lo, hi, c] for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)]
            custom.append(custom[-1])
            traces.append(
                _source_line(
                    src,
                    label,
                    i,
                    xs,
                    ys,
                    mode="lines",
                    line={"shape": "hv"},
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
        "Latency histogram",
        hovermode="closest",
        xaxis={"title": {"text": "Latency (us, log scale)"}, "type": "log"},
        yaxis={"title": {"text": "Share of samples (%)"}, "rangemode": "tozero"},
        updatemenus=log_count_menu(),
    )


def latency_cdf_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Cumulative latency distribution per source on a log x axis (us), from the histograms.

    Each point is a bin's upper edge: the share of samples below it. p50/p99/p99.9 from the
    exact statistics are in the hover text, since a log-binned CDF only approximates them.
    """
    traces = []
    for i, label, src, stats in _each_source(result_or_runs):
        edges, _, counts = _hist_points(stats["histogram"])
        if counts:
            total = sum(counts)
            ys = [0.0, *(_sig(acc / total * 100, 5) for acc in itertools.accumulate(counts))]
            summary = (
                f"mean {stats['mean_ns'] / 1000:.3g} us · p50 {stats['p50_ns'] / 1000:.3g} · "
                f"p99 {stats['p99_ns'] / 1000:.3g} · p99.9 {stats['p999_ns'] / 1000:.3g} · "
                f"max {stats['max_ns'] / 1000:.3g} us ({stats['count']} samples)"
            )
            traces.append(
                _source_line(
                    src,
                    label,
                    i,
                    edges,
                    ys,
                    mode="lines",
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


# The tail as wult users read it: latency against percentile, the percentile axis log-spaced in
# "nines" (x = 1 / (1 - p)), so p99.9 and the maximum get as much room as the median.
TAIL_PERCENTILES = (
    ("p50", 50.0, "p50_ns"),
    ("p90", 90.0, "p90_ns"),
    ("p99", 99.0, "p99_ns"),
    ("p99.9", 99.9, "p999_ns"),
)
P9999 = 99.99


def _from_histogram(hist: Mapping[str, Any], pct: float) -> float | None:
    """The upper edge (us) of the bin holding the `pct` percentile: an upper bound, as binned."""
    counts = hist["counts"]
    total = sum(counts)
    if not total:
        return None
    acc = 0
    for i, c in enumerate(counts):
        acc += c
        if acc >= total * pct / 100:
            return _sig(hist["edges_ns"][i + 1] / 1000.0)
    return None


def tail_points(stats: Mapping[str, Any]) -> list[tuple[str, float, float]]:
    """(label, x = 1/(1-p), latency in us) of one source: p50 to p99.9 exact, p99.99 from the
    histogram when there are at least 10^4 samples, and the maximum at x = count (the max of n
    samples is their 1 - 1/n quantile)."""
    n = stats["count"]
    points = [(label, 1 / (1 - p / 100), _sig(stats[key] / 1000.0)) for label, p, key in TAIL_PERCENTILES]
    points = [pt for pt in points if pt[1] < n]
    if n >= 10_000:
        value = _from_histogram(stats["histogram"], P9999)
        if value is not None:
            points.append(
                ("p99.99 (binned)", 1 / (1 - P9999 / 100), min(value, _sig(stats["max_ns"] / 1000.0)))
            )
    points.append(("max", float(max(n, 2)), _sig(stats["max_ns"] / 1000.0)))
    return points


def latency_tail_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Latency percentiles per source on log-log axes: p50, p90, p99, p99.9, p99.99 and max."""
    traces = []
    top = 10.0
    for i, label, src, stats in _each_source(result_or_runs):
        points = tail_points(stats)
        top = max(top, points[-1][1])
        traces.append(
            _source_line(
                src,
                label,
                i,
                [p[1] for p in points],
                [p[2] for p in points],
                text=[p[0] for p in points],
                mode="lines+markers",
                marker={
                    "color": SOURCE_COLORS[src],
                    "size": 7,
                    "symbol": _RUN_SYMBOLS[i % len(_RUN_SYMBOLS)],
                },
                hovertemplate=(
                    f"<b>{SOURCE_NAMES[src]}</b>{_suffix(label)}<br>%{{text}}: %{{y:.4g}} us<extra></extra>"
                ),
            )
        )
    ticks = [1 / (1 - p / 100) for p in (50, 90, 99, 99.9, 99.99, 99.999) if 1 / (1 - p / 100) <= top * 1.01]
    return _figure(
        traces,
        "Latency tail per wake-up source (percentiles, log-log)",
        hovermode="closest",
        xaxis={
            "title": {"text": "Percentile (log-spaced: 1 / (1 - p); the last point of a line is its max)"},
            "type": "log",
            "tickvals": ticks,
            "ticktext": [f"p{100 - 100 / t:g}" for t in ticks],
        },
        yaxis={"title": {"text": "Latency (us, log scale)"}, "type": "log"},
    )


def log_count_menu(axis: str = "yaxis") -> list[dict[str, Any]]:
    """plotly's own buttons switching the count axis between linear and log (no script of ours)."""
    return [
        {
            "type": "buttons",
            "direction": "left",
            "x": 1,
            "xanchor": "right",
            "y": 1.02,
            "yanchor": "bottom",
            "showactive": True,
            "buttons": [
                {"label": "linear count", "method": "relayout", "args": [{f"{axis}.type": "linear"}]},
                {"label": "log count", "method": "relayout", "args": [{f"{axis}.type": "log"}]},
            ],
        }
    ]

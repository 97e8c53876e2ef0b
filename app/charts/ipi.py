"""IPI sender cost: the chart (stacked by part) and the table beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.charts.base import (
    MECHANISM_NAMES,
    Figure,
    Result,
    _bar,
    _figure,
    _run_pattern,
    _runs,
)
from engine.result import SENDER_PART_LABELS, SENDER_PARTS

_IPI_CATEGORIES = (
    ("same_socket", "idle_target", "same socket, idle target"),
    ("same_socket", "busy_target", "same socket, busy target"),
    ("other_socket", "idle_target", "other socket, idle target"),
    ("other_socket", "busy_target", "other socket, busy target"),
)
# One colour per part of the sender's cost (the mechanism is named in the legend and hover).
PART_COLORS = {"setup": "#999999", "csd_wait": "#d95f02", "line_transfers": "#1b9e77", "apic_send": "#7570b3"}
# Upright category labels take ~7 px of height a character (13 px font).
_LABEL_PX_PER_CHAR = 7
PART_NAMES = {
    "setup": "call setup",
    "csd_wait": "csd_lock() wait",
    "line_transfers": "cache-line transfers",
    "apic_send": "APIC send",
}


def _categories(runs: Sequence[tuple[str, Result]]) -> list[tuple[str, str, str]]:
    """The localities and target states some run measured (not the other socket of a one-socket run)."""
    return [c for c in _IPI_CATEGORIES if any(r["ipi"][c[0]][f"{c[1]}_calls"] for _, r in runs)] or list(
        _IPI_CATEGORIES[:2]
    )


def sender_cost_rows(result: Result) -> list[dict[str, Any]]:
    """The table beside the chart: per locality and target state, calls, mean cycles, each part."""
    rows = []
    for loc, kind, text in _categories([("", result)]):
        cost = result["ipi"][loc]
        calls = cost[f"{kind}_calls"]
        parts = cost.get(f"{kind}_parts_cycles") or {}
        rows.append(
            {
                "target": text,
                "calls": calls,
                "mean_cycles": cost[f"{kind}_mean_cycles"] if calls else None,
                "parts": [parts.get(p) if calls else None for p in SENDER_PARTS],
            }
        )
    return rows


def sender_cost_note(result: Result) -> str:
    """What explains the bars of this run: csd_lock() waiting's share of each target's cost."""
    shares = []
    for row in sender_cost_rows(result):
        wait = row["parts"][SENDER_PARTS.index("csd_wait")]
        if row["mean_cycles"] and wait is not None:
            shares.append(f"{row['target']} {wait / row['mean_cycles']:.0%}")
    if not shares:
        return ""
    return (
        "csd_lock() waiting is " + ", ".join(shares) + " of the sender's cost. A no-wait call first waits "
        "until this CPU's previous call to that target has run; an idle target runs it only once awake "
        "(its exit latency), a busy one almost at once, so idle targets cost the most. Across sockets, "
        "every line transfer costs more."
    )


def ipi_cycles_figure(result_or_runs: Result | Sequence[tuple[str, Result]]) -> Figure:
    """Sender-side cost of a no-wait smp_call_function_single(), in TSC cycles, stacked by part
    (setup, csd_lock() wait, cache-line transfers, APIC send: they add up to the mean).

    By target locality (same or other socket) and state (idle or running); with several runs, one
    bar per run (named by its label, patterned as on every compare chart). Cycles are TSC cycles
    at the nominal clock (the RFC does not say how it counted; that is the likely reading).
    """
    runs = _runs(result_or_runs)
    categories = _categories(runs)
    traces = []
    for part in SENDER_PARTS:
        for i, (label, result) in enumerate(runs):
            ipi = result["ipi"]
            mech = MECHANISM_NAMES.get(ipi["mechanism"], ipi["mechanism"])
            xs, ys, custom = [], [], []
            for loc, kind, text in categories:
                cost = ipi[loc]
                calls = cost[f"{kind}_calls"]
                parts: Mapping[str, float] = cost.get(f"{kind}_parts_cycles") or {}
                xs.append(f"{text} · {label}" if label else text)
                ys.append(parts.get(part) if calls else None)
                custom.append([calls, cost[f"{kind}_mean_cycles"] if calls else None])
            traces.append(
                _bar(
                    name=PART_NAMES[part],
                    legendgroup=part,
                    showlegend=i == 0,
                    x=xs,
                    y=ys,
                    marker={"color": PART_COLORS[part], **_run_pattern(i)},
                    customdata=custom,
                    hovertemplate=(
                        f"<b>%{{x}}</b> ({mech})<br>{SENDER_PART_LABELS[part]}: %{{y:.0f}} cycles"
                        "<br>mean %{customdata[1]:.0f} cycles over %{customdata[0]} calls<extra></extra>"
                    ),
                )
            )
    figure = _figure(
        traces,
        "IPI sender cost by target, stacked by part",
        barmode="stack",
        showlegend=True,
        xaxis={"title": {"text": "Target"}, "type": "category"},
        yaxis={"title": {"text": "Cycles per call (TSC, mean)"}, "rangemode": "tozero"},
    )
    if len(runs) > 1:
        # A bar per target and run: plotly turns the long labels upright, under the plot; the chart
        # grows by their length (~7 px a character) so they do not take the plot's own height.
        longest = max(len(x) for t in traces for x in t["x"])
        figure["layout"]["height"] += _LABEL_PX_PER_CHAR * longest
    return figure

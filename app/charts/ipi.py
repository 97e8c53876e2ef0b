"""IPI sender cost charts."""

from __future__ import annotations

from collections.abc import Sequence

from app.charts.base import (
    MECHANISM_COLORS,
    MECHANISM_NAMES,
    Figure,
    Result,
    _bar,
    _figure,
    _run_pattern,
    _runs,
    _suffix,
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

"""A fit's charts as Plotly figure dicts: the search's history, and measured against fitted per
state. Pure functions of `fit_view`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.charts.base import Figure, _bar, _figure, _scatter, state_color

SHARES = (("entry_share", "Entry share"), ("time_share", "Idle-time share"))


def history_figure(history: Sequence[Mapping[str, Any]]) -> Figure:
    """The best distance after each generation, against the evaluations spent (log distance: it
    falls by orders of magnitude)."""
    trace = _scatter(
        x=[h["evaluations"] for h in history],
        y=[h["best_distance"] for h in history],
        mode="lines+markers",
        name="best distance",
        hovertemplate="%{x} evaluations<br>distance %{y:.3g}<extra></extra>",
    )
    return _figure(
        [trace],
        "Search history",
        xaxis={"title": {"text": "evaluations"}},
        yaxis={"title": {"text": "best distance (1: every figure at its tolerance)"}, "type": "log"},
        showlegend=False,
    )


def states_figure(measured: Mapping[str, Any], fitted: Mapping[str, Any]) -> Figure:
    """Per state, the measured and fitted entry and idle-time shares side by side (in %): bars in
    the state's colour, the twin's hatched."""
    names = list(measured["states"])
    traces = []
    for key, label in SHARES:
        for side, figs, pattern in (("measured", measured, ""), ("twin", fitted, "/")):
            traces.append(
                _bar(
                    x=[f"{label}: {n}" for n in names],
                    y=[100 * figs["states"][n][key] for n in names],
                    name=f"{side}",
                    legendgroup=side,
                    showlegend=key == SHARES[0][0],
                    marker={"color": [state_color(n) for n in names], "pattern": {"shape": pattern}},
                    hovertemplate=f"{side} %{{x}}: %{{y:.2f}}%<extra></extra>",
                )
            )
    return _figure(traces, "Measured and twin, per state", barmode="group", yaxis={"title": {"text": "%"}})

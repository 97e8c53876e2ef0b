"""Platform table chart: exit latency against target residency."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.charts.base import (
    _RUN_SYMBOLS,
    Figure,
    _figure,
    _scatter,
    state_color,
)

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
        # The rightmost point's label goes to its left, so the chart's edge does not cut it.
        last = max(float(_get(s, "target_residency_us")) for s in _get(platform, "states"))
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
                    # Labels on the first table's points only (its name and figures): a second
                    # table's points are told apart by their symbol and the hover.
                    mode="markers+text" if i == 0 else "markers",
                    text=[f"{name} {exit_us:g}/{res_us:g} us"] if i == 0 else None,
                    textposition="middle left" if res_us == last else "middle right",
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
        height=460,
        showlegend=len(platforms) > 1,
        # Decades only: log axes' minor labels (2, 5, 20, 50...) cluttered the few points.
        xaxis={"title": {"text": "Target residency (us, log scale)"}, "type": "log", "dtick": 1},
        yaxis={"title": {"text": "Exit latency (us, log scale)"}, "type": "log", "dtick": 1},
    )

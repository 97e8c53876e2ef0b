"""Residency charts: per C-state, per CPU, and the state timeline."""

from __future__ import annotations

from collections.abc import Sequence

from app.charts.base import (
    _BLUES,
    BUSY_NAME,
    Figure,
    Result,
    _bar,
    _figure,
    _heatmap,
    _run_pattern,
    _runs,
    _state_names,
    _suffix,
    state_color,
)


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

"""Residency charts: per C-state, the hardware's core and package C-states, per CPU, and the state
timeline."""

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
    _run_legend_entry,
    _run_outline,
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
        several = len(runs) > 1  # then the outline tells the runs apart (the legend's colour)
        traces.append(
            _bar(
                name=label or "residency",
                legendgroup=f"run-{i}",
                showlegend=False,
                x=names,
                y=shares,
                marker={
                    "color": [state_color(n) for n in names],
                    **_run_pattern(i),
                    "line": {"color": _run_outline(i), "width": 2 if several else 0.5},
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
    if len(runs) > 1:
        traces += [_run_legend_entry(i, label) for i, (label, _) in enumerate(runs)]
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


def cpu_places(result: Result) -> list[tuple[int, int, int, int]]:
    """(socket, core, thread, cpu) of every logical CPU, in socket, core, thread order (the
    engine numbers CPUs as Linux does per socket: every core's first thread, then the second)."""
    n = len(result["per_cpu_residency"])
    sockets = max(1, int(result.get("sockets") or 1))
    threads = int(result.get("hardware", {}).get("threads_per_core") or 1)
    cores = max(1, n // sockets // threads)
    places = []
    for cpu in range(n):
        socket, rest = divmod(cpu, cores * threads)
        thread, core = divmod(rest, cores)
        places.append((socket, core, thread, cpu))
    return sorted(places)


def per_cpu_names(result: Result) -> list[str]:
    """The per-CPU columns: the states, then C0 (the engine calls the last column "busy")."""
    names = [BUSY_NAME if n == "busy" else n for n in result["per_cpu_state_names"]]
    rows = result["per_cpu_residency"]
    width = len(rows[0]) if rows else len(names)
    return [*names, BUSY_NAME][:width] if len(names) < width else names[:width]


def residency_per_cpu_figure(result: Result) -> Figure:
    """Per-CPU residency as a heatmap: CPUs down, grouped by socket and core (a core's threads
    side by side, a line between sockets), states (then C0) across, share in %."""
    rows = result["per_cpu_residency"]
    places = cpu_places(result)
    threads = 1 + max((p[2] for p in places), default=0)
    labels = [
        f"S{s} core {c}" + (f" T{t}" if threads > 1 else "") + f" · CPU {cpu}" for s, c, t, cpu in places
    ]
    trace = _heatmap(
        z=[[v * 100 for v in rows[cpu]] for *_, cpu in places],
        x=per_cpu_names(result),
        y=labels,
        colorscale=_BLUES,
        zmin=0,
        zmax=100,
        colorbar={"title": {"text": "% of CPU time"}},
        xgap=1,
        ygap=1 if len(rows) <= 64 else 0,
        hovertemplate="%{y} · <b>%{x}</b><br>%{z:.2f}% of its time<extra></extra>",
    )
    # A line where a socket ends (categories sit at 0, 1, ...: the border is half-way).
    shapes = [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "yref": "y",
            "y0": i - 0.5,
            "y1": i - 0.5,
            "line": {"color": "#222", "width": 2},
        }
        for i in range(1, len(places))
        if places[i][0] != places[i - 1][0]
    ]
    height = max(260, min(900, 90 + 18 * len(rows)))
    return _figure(
        [trace],
        "Residency per CPU (by socket, core and thread)",
        height=height,
        shapes=shapes,
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

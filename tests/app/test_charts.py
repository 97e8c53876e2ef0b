"""Chart builders (app/charts.py) on real small results, and the page helpers around them."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from app import charts
from app.compare.service import annotate_metrics
from app.core.web import json_script
from app.runs.pages import result_csv
from engine import SimConfig, load_platform, metrics, simulate

SMALL = {"duration_ms": 50, "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}}
TWO_SOCKETS = {"duration_ms": 50, "topology": {"sockets": 2, "cores_per_socket": 2, "threads_per_core": 1}}
SVG_TRACE_TYPES = {"bar", "scatter", "heatmap"}


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    return simulate(SimConfig(**SMALL)).model_dump(mode="json")


@pytest.fixture(scope="module")
def other() -> dict[str, Any]:
    """Two sockets and a different mechanism: both localities and another colour."""
    return simulate(SimConfig(**TWO_SOCKETS, ipi_wakeup={"mechanism": "ipi"})).model_dump(mode="json")


def axis_title(fig: dict[str, Any], axis: str) -> str:
    return str(fig["layout"][axis]["title"]["text"])


def test_registry_names_and_builders(result: dict[str, Any]) -> None:
    assert list(charts.CHARTS) == [
        "residency",
        "latency_tail",
        "hardware",
        "latency_histogram",
        "latency_cdf",
        "wake_vs_intr",
        "ipi_cycles",
        "residency_per_cpu",
        "timeline",
    ]
    for name in charts.CHARTS:
        fig = charts.run_chart(name, result)
        assert fig["data"], name
        assert fig["layout"]["title"]["text"], name
        # Plain JSON: what the API serves and the page embeds.
        assert json.loads(orjson.dumps(fig)) == json.loads(json.dumps(fig))
    with pytest.raises(KeyError):
        charts.run_chart("nope", result)


def test_only_svg_trace_types(result: dict[str, Any], other: dict[str, Any]) -> None:
    figs = [
        *charts.run_charts(result).values(),
        *charts.compare_charts([("A", result), ("B", other)]).values(),
    ]
    figs.append(charts.platform_figure([load_platform("skx"), load_platform("icx")]))
    for fig in figs:
        for trace in fig["data"]:
            assert trace["type"] in SVG_TRACE_TYPES, trace["type"]
            assert "gl" not in trace["type"]


def test_residency_bars(result: dict[str, Any]) -> None:
    fig = charts.residency_figure(result)
    assert len(fig["data"]) == 1
    bars = fig["data"][0]
    names = [s["name"] for s in result["states"]]
    assert list(bars["x"]) == [*names, "C0"]
    assert sum(bars["y"]) == pytest.approx(100.0, abs=0.5)
    assert axis_title(fig, "yaxis") == "Share of CPU time (%)"
    assert "usage" in bars["hovertemplate"]


def test_residency_heatmap(result: dict[str, Any]) -> None:
    fig = charts.residency_per_cpu_figure(result)
    (heat,) = fig["data"]
    assert heat["type"] == "heatmap"
    assert len(heat["z"]) == result["cpus"] == 4
    assert list(heat["x"])[-1] == "C0"
    assert "%" in heat["colorbar"]["title"]["text"]


def test_latency_histogram_and_cdf_log_axes(result: dict[str, Any]) -> None:
    sources = [k for k in charts.SOURCE_NAMES if result["latency"].get(k, {}).get("count")]
    assert "wake" in sources and "intr" in sources
    for build in (charts.latency_histogram_figure, charts.latency_cdf_figure):
        fig = build(result)
        assert len(fig["data"]) == len(sources)
        assert fig["layout"]["xaxis"]["type"] == "log"
        assert axis_title(fig, "xaxis") == "Latency (us, log scale)"
        names = [t["name"] for t in fig["data"]]
        assert names[:2] == ["WakeLatency", "IntrLatency"]
        for trace, src in zip(fig["data"], sources, strict=True):
            assert trace["line"]["color"] == charts.SOURCE_COLORS[src]
            assert min(trace["x"]) > 0  # log axis: no zero edges
    cdf = charts.latency_cdf_figure(result)
    for trace in cdf["data"]:
        ys = list(trace["y"])
        assert ys == sorted(ys)
        assert ys[-1] == pytest.approx(100.0)


def test_wake_vs_intr(result: dict[str, Any]) -> None:
    fig = charts.wake_vs_intr_figure(result)
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    assert axis_title(fig, "xaxis") == "IntrLatency (us, log scale)"
    assert axis_title(fig, "yaxis") == "WakeLatency (us, log scale)"
    per_state = {t["name"]: t for t in fig["data"] if t["mode"] == "markers"}
    c1 = next(s for s in result["states"] if s["name"] == "C1")
    if c1["usage"] and c1["intr_latency_mean_ns"]:
        # skx C1 has IRQ_ENABLE: the handler runs before idle returns, so IntrLatency < WakeLatency.
        assert c1["irq_enable"]
        point = per_state["C1"]
        assert point["x"][0] < point["y"][0]
    for name, trace in per_state.items():
        assert trace["marker"]["color"] == charts.state_color(name)


def test_ipi_cycles_stacked_by_part(result: dict[str, Any], other: dict[str, Any]) -> None:
    one = charts.ipi_cycles_figure(result)
    assert one["layout"]["barmode"] == "stack"
    assert [t["name"] for t in one["data"]] == [
        "call setup",
        "csd_lock() wait",
        "cache-line transfers",
        "APIC send",
    ]
    # One socket: the other-socket categories are left out, not drawn as zeros.
    assert all("same socket" in x for t in one["data"] for x in t["x"])
    # The stacked parts add up to each bar's mean, as the engine reports it.
    same = result["ipi"]["same_socket"]
    idle = [t["y"][0] for t in one["data"]]
    assert sum(idle) == pytest.approx(same["idle_target_mean_cycles"])
    rows = charts.sender_cost_rows(result)
    assert rows[0]["target"] == "same socket, idle target" and rows[0]["parts"] == pytest.approx(idle)
    assert "csd_lock() waiting is same socket, idle target" in charts.sender_cost_note(result)
    both = charts.ipi_cycles_figure([("A", result), ("B", other)])
    assert len(both["data"]) == 8  # four parts, two runs
    assert any("other socket, idle target · B" in x for x in both["data"][1]["x"])
    assert "pattern" in both["data"][1]["marker"]  # the second run is told apart by a pattern
    assert [t["showlegend"] for t in both["data"][:2]] == [True, False]


def test_tail_plot_percentiles_on_log_log_axes(result: dict[str, Any]) -> None:
    fig = charts.latency_tail_figure(result)
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    wake = next(t for t in fig["data"] if t["legendgroup"] == "wake")
    stats = result["latency"]["wake"]
    assert wake["text"][:3] == ["p50", "p90", "p99"]
    assert wake["x"][:3] == pytest.approx([2, 10, 100])
    # A percentile beyond what the samples can tell (p99.9 of under 1,000) is left out.
    assert ("p99.9" in wake["text"]) == (stats["count"] > 1000)
    assert wake["y"][2] == pytest.approx(stats["p99_ns"] / 1000, rel=1e-4)
    # The maximum sits at x = n (the max of n samples is their 1 - 1/n quantile).
    assert wake["text"][-1] == "max" and wake["x"][-1] == stats["count"]
    assert wake["y"][-1] == pytest.approx(stats["max_ns"] / 1000, rel=1e-4)
    assert wake["y"] == sorted(wake["y"])


def test_histogram_offers_log_counts(result: dict[str, Any]) -> None:
    menu = charts.latency_histogram_figure(result)["layout"]["updatemenus"][0]
    assert [b["args"][0]["yaxis.type"] for b in menu["buttons"]] == ["linear", "log"]


def test_timeline(result: dict[str, Any]) -> None:
    fig = charts.timeline_figure(result)
    assert fig["layout"]["barmode"] == "overlay"
    assert axis_title(fig, "xaxis") == "Time since start (us)"
    cpus = {y for t in fig["data"] for y in t["y"]}
    assert cpus == {f"CPU {tl['cpu']}" for tl in result["timeline"]}
    segments = sum(len(tl["segments"]) for tl in result["timeline"])
    assert sum(len(t["x"]) for t in fig["data"]) == segments
    for trace in fig["data"]:
        assert trace["orientation"] == "h"
        assert all(length >= 0 for length in trace["x"])


def test_state_colour_is_the_same_on_every_chart(result: dict[str, Any], other: dict[str, Any]) -> None:
    """One colour per C-state name: residency bars, wake-vs-intr markers, timeline bars and the
    platform chart all agree, and compare charts keep it (runs differ by pattern, not colour)."""
    seen: dict[str, set[str]] = {}

    def note(name: str, color: str) -> None:
        seen.setdefault(name, set()).add(color)

    for fig in (charts.residency_figure(result), charts.residency_figure([("A", result), ("B", other)])):
        for trace in fig["data"]:
            if trace["type"] != "bar":  # the runs' legend entries
                continue
            for name, color in zip(trace["x"], trace["marker"]["color"], strict=True):
                note(name, color)
    for trace in charts.timeline_figure(result)["data"]:
        note(trace["name"].removesuffix(" (busy)"), trace["marker"]["color"])
    for trace in charts.wake_vs_intr_figure([("A", result), ("B", other)])["data"]:
        if trace["mode"] == "markers":
            note(trace["legendgroup"], trace["marker"]["color"])
    for trace in charts.platform_figure([load_platform("skx"), load_platform("wsm")])["data"]:
        if trace.get("showlegend") is not False:
            note(trace["legendgroup"], trace["marker"]["color"])
    assert {"C0", "C1", "C1E", "C6", "C3"} <= set(seen)
    for name, colors in seen.items():
        assert colors == {charts.state_color(name)}, name
    # Distinct states get distinct colours.
    known = ["C0", "POLL", "C1", "C1E", "C3", "C6"]
    assert len({charts.state_color(n) for n in known}) == len(known)
    # A custom table's state name gets a stable colour too.
    assert charts.state_color("MYSTATE") == charts.state_color("MYSTATE")


def test_compare_charts_tell_runs_apart(result: dict[str, Any], other: dict[str, Any]) -> None:
    figs = charts.compare_charts([("A", result), ("B", other)])
    assert set(figs) == set(charts.CHARTS) - {"residency_per_cpu", "timeline"}
    cdf = figs["latency_cdf"]["data"]
    dashes = {t["name"].rsplit(" · ", 1)[1]: t["line"]["dash"] for t in cdf}
    assert dashes == {"A": "solid", "B": "dash"}
    bars = [t for t in figs["residency"]["data"] if t["type"] == "bar"]
    assert len(bars) == 2 and not any(t.get("showlegend", True) for t in bars)
    # The legend names each run in a colour of its own, its bars' outline.
    legend = [t for t in figs["residency"]["data"] if t["type"] != "bar"]
    assert [t["name"] for t in legend] == ["A", "B"]
    assert [t["marker"]["color"] for t in legend] == [b["marker"]["line"]["color"] for b in bars]
    assert len({t["marker"]["color"] for t in legend}) == 2
    # The hardware bars of B are labelled with its name under each socket.
    groups = {t["x"][1][0] for t in figs["hardware"]["data"]}
    assert groups == {"cores · A", "package · A", "cores · B", "package · B"}


def test_platform_chart() -> None:
    skx = load_platform("skx")
    fig = charts.platform_figure([skx])
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    assert axis_title(fig, "xaxis") == "Target residency (us, log scale)"
    assert axis_title(fig, "yaxis") == "Exit latency (us, log scale)"
    points = {t["name"]: t for t in fig["data"] if t.get("showlegend") is not False}
    assert set(points) == {"C1", "C1E", "C6"}  # POLL (0, 0) cannot sit on log axes
    assert points["C6"]["x"] == [600.0] and points["C6"]["y"] == [133.0]
    assert points["C6"]["text"] == ["C6 133/600 us"]  # labelled with its figures
    assert fig["layout"]["xaxis"]["dtick"] == 1 and fig["layout"]["yaxis"]["dtick"] == 1
    # The C6 median is an estimate on skx and the hover says so.
    median = next(t for t in fig["data"] if t["name"].startswith("C6 median"))
    assert "ESTIMATE" in median["hovertemplate"]
    both = charts.platform_figure([skx, load_platform("icx")])
    assert {t["marker"]["symbol"] for t in both["data"] if t.get("showlegend") is not False} == {
        "circle",
        "square",
    }


def test_summary_figures(result: dict[str, Any]) -> None:
    figures = {f["key"]: f for f in charts.summary_figures(result)}
    assert figures["wake_mean_us"]["unit"] == "us"
    assert figures["wake_mean_us"]["value"] == pytest.approx(result["latency"]["wake"]["mean_ns"] / 1000)
    assert figures["energy_j"]["estimate"] is True
    assert figures["wake_mean_us"]["better"] == "lower"


def rows_input() -> list[dict[str, Any]]:
    """Three compared metrics of two single runs, as /api/compare gives them."""
    return (
        [
            {
                "key": "latency.wake.mean_ns",
                "group": "latency",
                "label": "WakeLatency mean",
                "unit": "ns",
                "better": "lower",
                "values": [2000.0, 1000.0],
                "delta_unit": "%",
                "deltas": [0.0, -50.0],
            },
            {
                "key": "ipi.ipis_avoided",
                "group": "ipi",
                "label": "IPIs avoided",
                "unit": "count",
                "better": "higher",
                "values": [10.0, 5.0],
                "delta_unit": "%",
                "deltas": [0.0, -50.0],
            },
            {
                "key": "residency.C6",
                "group": "residency",
                "label": "C6 residency",
                "unit": "share",
                "better": None,
                "values": [0.5, 0.25],
                "delta_unit": "pp",
                "deltas": [0.0, -25.0],
            },
        ]
    )


def test_better_direction_and_verdicts() -> None:
    better = {m.key: m.better for m in metrics.compared(["C6"])}
    assert better["latency.wake.p99_ns"] == "lower"
    assert better["ipi.ipis_avoided"] == "higher"
    assert better["residency.C6"] is None
    rows = annotate_metrics(rows_input())
    assert rows[0]["unit"] == "us" and rows[0]["values"] == [2.0, 1.0]
    # Single runs: the point delta is shown, never judged (a verdict needs repeats).
    assert [r["deltas"][1]["verdict"] for r in rows] == [None, None, None]
    assert rows[2]["unit"] == "%" and rows[2]["deltas"][1]["unit"] == "pp"
    assert rows[2]["deltas"][1]["value"] == -25.0
    # With the statistics' fields, their change, interval and verdict.
    stats = {
        "verdict": [None, "better"], "change": [None, -49.0], "ci95": [None, [-52.0, -46.0]],
        "ci95_reason": [None, None], "stddev_pct": [1.5, 2.5],
    }  # fmt: skip
    (row,) = annotate_metrics([{**rows_input()[0], **stats}])
    assert row["deltas"][1]["verdict"] == "better" and row["deltas"][1]["value"] == -49.0
    assert row["deltas"][1]["ci95"] == [-52.0, -46.0] and row["spread"] == [1.5, 2.5]


def test_json_script_cannot_break_out() -> None:
    text = str(json_script({"title": "</script><script>alert(1)</script> & <!--"}))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"title": "</script><script>alert(1)</script> & <!--"}


def test_result_csv(result: dict[str, Any]) -> None:
    lines = "".join(result_csv(result)).splitlines()
    assert lines[0] == "section,name,metric,value,unit"
    assert any(line.startswith("state,C6,usage,") for line in lines)
    assert any(line.startswith("latency,wake,p99_ns,") for line in lines)


def test_timeline_is_capped(result: dict[str, Any]) -> None:
    """A busy timeline is cut short rather than bloating the page."""
    many = dict(result)
    n = charts.TIMELINE_MAX_SEGMENTS + 1000
    many["timeline"] = [{"cpu": 0, "segments": [[i * 10, i * 10 + 10, 1 if i % 2 else -1] for i in range(n)]}]
    fig = charts.timeline_figure(many)
    assert sum(len(t["x"]) for t in fig["data"]) == charts.TIMELINE_MAX_SEGMENTS
    assert "at most" in fig["layout"]["title"]["text"]
    assert len(orjson.dumps(fig)) < 400_000


def test_hardware_figure_stacks_core_and_package_states_per_socket(result: dict[str, Any]) -> None:
    fig = charts.hardware_figure(result)
    hw = result["hardware"]
    names = [t["name"] for t in fig["data"]]
    # One stacked trace per core state (shown as C0, C1...) and per package state.
    assert names == [n.replace("CC", "C") for n in hw["core_states"]] + hw["package_states"]
    for trace in fig["data"]:
        where, kind = trace["x"]
        assert where == [f"socket {g['socket']}" for g in hw["sockets"]] + ["system"]
        assert set(kind) <= {"cores", "package"}
    # Each bar of a stack adds up to the whole time.
    cores = [t for t in fig["data"] if t["x"][1][0] == "cores"]
    for i in range(len(hw["sockets"]) + 1):
        assert sum(t["y"][i] for t in cores) == pytest.approx(100.0)


def test_compare_tabulates_turbostat_columns(result: dict[str, Any]) -> None:
    by_key = {m.key: m for m in metrics.compared([s["name"] for s in result["states"]])}
    turbostat = result["hardware"]["system"]["turbostat"]
    assert by_key["hardware.CPU%c6"].value(result) == pytest.approx(turbostat["CPU%c6"] / 100)
    # PkgWatt per socket: the system row sums the packages, as turbostat's summary row does.
    assert by_key["hardware.PkgWatt"].value(result) == pytest.approx(turbostat["PkgWatt"] / result["sockets"])
    assert by_key["hardware.PkgWatt"].estimate and by_key["hardware.Pkg%pc6"].unit == "share"
    assert by_key["hardware.CPU%c3"].value(result) is None  # skx has no core C3

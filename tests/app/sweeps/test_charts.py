"""Sweep charts: the Pareto front against hand-picked points, and a line per other-axes value."""

from __future__ import annotations

from app.sweeps.charts import metric_figure, pareto_figure, pareto_front


def test_the_pareto_front_keeps_only_points_nobody_beats_on_both() -> None:
    # (latency, energy): b beats d on both; c beats e; a, b, c trade one for the other.
    pairs = [(1.0, 9.0), (2.0, 5.0), (4.0, 1.0), (3.0, 6.0), (5.0, 2.0)]
    assert pareto_front(pairs) == [0, 1, 2]


def test_one_line_per_value_of_the_other_axes() -> None:
    axes = [{"path": "governor.name", "values": ["menu", "teo"]}, {"path": "rate", "values": [10, 100]}]
    points = [
        {"values": {"governor.name": g, "rate": r}, "status": "done", "run_id": f"{g}{r}", "m_ns": r * 1000.0}
        for g in ("menu", "teo")
        for r in (10, 100)
    ]
    points[3]["status"] = "running"
    fig = metric_figure(points, axes, "m_ns", "M", "rate")
    assert [(t["name"], t["x"], t["y"]) for t in fig["data"]] == [
        ("governor.name=menu", [10, 100], [10.0, 100.0]),
        ("governor.name=teo", [10], [10.0]),
    ]
    assert fig["layout"]["xaxis"]["type"] == "log"


def test_the_pareto_chart_has_units_and_points_coloured_like_the_metric_lines() -> None:
    axes = [{"path": "governor.name", "values": ["menu", "teo"]}, {"path": "rate", "values": [10, 100]}]
    points = [
        {
            "values": {"governor.name": g, "rate": r},
            "status": "done",
            "run_id": f"{g}{r}",
            "wake_latency_p99_ns": 1000.0 * r,
            "energy_joules": 5.0 - r / 100 + (g == "teo"),
        }
        for g in ("menu", "teo")
        for r in (10, 100)
    ]
    fig = pareto_figure(points, "wake_latency_p99_ns", "p99", "energy_joules", "Energy", axes, "rate")
    assert fig["layout"]["xaxis"]["title"]["text"] == "p99 (us)"
    assert fig["layout"]["yaxis"]["title"]["text"] == "Energy (J)"
    groups = [t for t in fig["data"] if t["name"] != "Pareto front"]
    # One trace per governor, as the metric chart's lines (the template's colorway colours them).
    assert [(t["name"], t["x"]) for t in groups] == [
        ("governor.name=menu", [10.0, 100.0]),
        ("governor.name=teo", [10.0, 100.0]),
    ]
    front = next(t for t in fig["data"] if t["name"] == "Pareto front")
    # menu beats teo by 1 J at each rate: menu's two points are the front.
    assert front["customdata"] == ["menu10", "menu100"]


def test_a_share_is_shown_in_percent() -> None:
    from app.sweeps.pages import show_metric

    assert show_metric(0.4567, "busy_share") == "45.7%"
    assert show_metric(12345.0, "wake_latency_p99_ns") == "12.3 us"
    assert show_metric(None, "busy_share") == "–"

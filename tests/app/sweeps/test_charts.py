"""Sweep charts: the Pareto front against hand-picked points, and a line per other-axes value."""

from __future__ import annotations

from app.sweeps.charts import metric_figure, pareto_front


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

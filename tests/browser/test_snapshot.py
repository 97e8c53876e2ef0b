"""The HTML snapshot opened from file:// in Debian's Chromium with no server anywhere: every chart
drawn, nothing loaded but the file itself, hostile data shown as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.charts import compare_charts, run_charts
from app.compare.snapshot import Section, Table, render_snapshot
from engine import SimConfig, simulate
from tests.browser.conftest import SMALL

pytestmark = pytest.mark.browser

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"
HOSTILE = "</script><script>alert(1)</script>"


def open_offline(browser: Any, path: Path) -> tuple[Any, Any, list[str], list[str]]:
    """The file in a fresh offline context, recording every request, dialog and error."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    page = context.new_page()
    requests: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-charts-drawn='true']", timeout=60_000)
    return context, page, requests, problems


def bundle_text() -> str:
    (bundle,) = VENDOR.glob("plotly-cartesian-*.min.js")
    return bundle.read_text(encoding="utf-8")


def test_a_snapshot_opens_from_a_file_with_its_charts_drawn(browser: Any, tmp_path: Path) -> None:
    figures = [
        {
            "data": [
                {"type": "bar", "name": "base", "x": ["C1", "C1E", "C6"], "y": [1.5, 2.0, 96.5]},
                {"type": "bar", "name": "patch", "x": ["C1", "C1E", "C6"], "y": [1.4, 2.4, 96.2]},
            ],
            "layout": {"title": {"text": "Residency"}, "barmode": "group"},
        },
        {
            "data": [{"type": "scatter", "mode": "lines", "name": HOSTILE, "x": [0, 1, 2], "y": [3, 1, 2]}],
            "layout": {"title": {"text": "Wake-ups " + HOSTILE}},
        },
    ]
    markup = render_snapshot(
        HOSTILE,
        [
            Section(
                "Summary", text="a note\n" + HOSTILE, tables=[Table(["metric", "base"], [["energy_j", 1.25]])]
            ),
            Section("Charts", figures=figures),
        ],
        plotly_js=bundle_text(),
    )
    path = tmp_path / "snapshot.html"
    path.write_text(markup, encoding="utf-8")
    context, page, requests, problems = open_offline(browser, path)
    try:
        for chart, traces in (("chart-1", 2), ("chart-2", 1)):
            assert page.locator(f"#{chart}.js-plotly-plot .main-svg .trace").count() == traces, chart
        assert page.locator(".js-plotly-plot .main-svg .trace").count() == 3
        assert page.text_content("h1") == HOSTILE
        assert page.locator("script").count() == 4  # the 2 figures, plotly.js, the drawing
        assert "Wake-ups" in (page.text_content("#chart-2 .gtitle") or "")
        assert requests == [path.as_uri()]
        assert problems == []
    finally:
        context.close()


def test_a_compare_of_real_runs_draws_every_app_chart_offline(browser: Any, tmp_path: Path) -> None:
    base = simulate(SimConfig(**SMALL)).model_dump(mode="json")
    other = simulate(SimConfig(**SMALL, seed=2)).model_dump(mode="json")
    figures = list(compare_charts([("base", base), ("seed 2", other)]).values())
    figures += [run_charts(base)[name] for name in ("residency_per_cpu", "timeline")]
    path = tmp_path / "compare.html"
    path.write_text(
        render_snapshot("base against seed 2", [Section("Charts", figures=figures)], plotly_js=bundle_text())
    )
    context, page, requests, problems = open_offline(browser, path)
    try:
        for number, figure in enumerate(figures, 1):
            chart = f"#chart-{number}.js-plotly-plot .main-svg"
            heatmaps = sum(1 for trace in figure["data"] if trace.get("type") == "heatmap")
            assert page.locator(f"{chart} .trace").count() == len(figure["data"]) - heatmaps, number
            assert page.locator(f"{chart} .hm").count() == heatmaps, number
        assert requests == [path.as_uri()]
        assert problems == []
    finally:
        context.close()

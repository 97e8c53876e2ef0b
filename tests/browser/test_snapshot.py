"""The HTML snapshot opened from file:// in Debian's Chromium with no server anywhere: every chart
drawn, nothing loaded but the file itself, hostile data shown as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.compare.snapshot import Section, Table, render_snapshot

pytestmark = pytest.mark.browser

VENDOR = Path(__file__).resolve().parents[2] / "static" / "vendor"
HOSTILE = "</script><script>alert(1)</script>"


def test_a_snapshot_opens_from_a_file_with_its_charts_drawn(browser: Any, tmp_path: Path) -> None:
    (bundle,) = VENDOR.glob("plotly-cartesian-*.min.js")
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
        plotly_js=bundle.read_text(encoding="utf-8"),
    )
    path = tmp_path / "snapshot.html"
    path.write_text(markup, encoding="utf-8")

    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    page = context.new_page()
    requests: list[str] = []
    problems: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None)
    try:
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-charts-drawn='true']", timeout=60_000)
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

"""Every page at a desktop and a phone size (390 px): nothing wider than the screen, the nav
reachable, charts resized to the screen, tables scrolling in their own box; screenshots of each
page at both sizes in test-artifacts/pages/. Then the reader's flows: the latency tail on log
axes, compare in percentage points, ticking runs in the list to compare them, picking lines."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from tests.browser.conftest import ARTIFACTS, SMALL, run_and_wait

pytestmark = pytest.mark.browser

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}

# Measured inside the page: what overflows the screen, and where.
LAYOUT = """() => {
    const width = window.innerWidth;
    const nav = [...document.querySelectorAll('header.site nav a')].map((a) => {
        const r = a.getBoundingClientRect();
        return {text: a.textContent.trim(), left: r.left, right: r.right};
    });
    const wide = [...document.querySelectorAll('body *')]
        .filter((el) => !el.closest('.table-wrap, pre, .js-plotly-plot'))
        .filter((el) => el.getBoundingClientRect().right > width + 1)
        .slice(0, 5).map((el) => el.tagName + '.' + el.className);
    return {
        width,
        scrollWidth: document.documentElement.scrollWidth,
        nav,
        wide,
        charts: [...document.querySelectorAll('.js-plotly-plot')]
            .map((el) => el.getBoundingClientRect().width),
        loose_tables: [...document.querySelectorAll('main table')]
            .filter((t) => !t.closest('.table-wrap')).length,
    };
}"""


@pytest.fixture(scope="module")
def pages(api: httpx.Client) -> dict[str, str]:
    """Every page of the dashboard, by name, with the runs they need."""
    a = run_and_wait(api, SMALL, title="everywhere A")
    b = run_and_wait(api, {**SMALL, "governor": {"name": "teo"}, "seed": 2}, title="everywhere B")
    # A scenario with its runs done: its page overlays four roles' CDFs.
    scenario = "mwait-ipi-westmere"
    started = api.post(f"/api/scenarios/{scenario}/run")
    assert started.status_code in (200, 202), started.text
    for run in started.json()["runs"]:
        while api.get(f"/api/runs/{run['id']}").json()["status"] not in ("done", "failed"):
            time.sleep(0.05)
    return {
        "home": "/",
        "runs": "/runs",
        "runs-sorted-p99": "/runs?sort=-wake_latency_p99_ns",
        "new-run": "/runs/new",
        "run": f"/runs/{a['id']}",
        "compare": f"/compare?ids={a['id']},{b['id']}",
        "platform": "/platforms/skx",
        "scenarios": "/scenarios",
        "scenario": f"/scenarios/{scenario}",
        "validation": "/validation",
        "not-found": "/runs/no-such-run",
    }


def draw_all(page: Any) -> None:
    """Scroll to each chart (charts are drawn when scrolled near), then back to the top."""
    for plot in page.query_selector_all("[data-chart-name]"):
        plot.scroll_into_view_if_needed()
        page.wait_for_selector(f"#{plot.get_attribute('id')}[data-drawn='true']")
    page.evaluate("window.scrollTo(0, 0)")


@pytest.mark.parametrize("size", list(SIZES))
def test_every_page_fits_the_screen(new_tab: Any, pages: dict[str, str], size: str) -> None:
    tab = new_tab()
    page = tab.page
    page.set_viewport_size(SIZES[size])
    (ARTIFACTS / "pages").mkdir(parents=True, exist_ok=True)
    for name, path in pages.items():
        page.goto(path)
        draw_all(page)
        page.wait_for_timeout(100)  # plotly's resize to the container runs on a timer of its own
        got = page.evaluate(LAYOUT)
        assert got["scrollWidth"] <= got["width"], (name, size, got["wide"])
        assert got["wide"] == [], (name, size)
        for link in got["nav"]:
            assert 0 <= link["left"] and link["right"] <= got["width"], (name, size, link)
        for width in got["charts"]:
            assert width <= got["width"], (name, size, got["charts"])
        assert got["loose_tables"] == 0, (name, size)
        page.screenshot(path=str(ARTIFACTS / "pages" / f"{name}-{size}.png"), full_page=True)


def test_run_page_shows_the_tail_on_log_axes(new_tab: Any, pages: dict[str, str]) -> None:
    tab = new_tab()
    page = tab.page
    page.set_viewport_size(SIZES["desktop"])
    page.goto(pages["run"])
    # The first screen's charts are drawn without scrolling: the residency bars and the tail.
    page.wait_for_selector("#chart-latency_tail[data-drawn='true']")
    page.wait_for_selector("#chart-residency[data-drawn='true']")
    layout = page.evaluate("document.getElementById('chart-latency_tail').layout")
    assert layout["xaxis"]["type"] == "log" and layout["yaxis"]["type"] == "log"
    assert "p99.9" in layout["xaxis"]["ticktext"] or "p99" in layout["xaxis"]["ticktext"]
    assert page.locator("#chart-latency_tail .xaxislayer-above text", has_text="p99").count() >= 1
    # The histogram's own button switches its counts to a log axis.
    page.locator("#chart-latency_histogram").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-latency_histogram[data-drawn='true']")
    page.locator("#chart-latency_histogram .updatemenu-button", has_text="log count").click()
    assert page.evaluate("document.getElementById('chart-latency_histogram').layout.yaxis.type") == "log"
    # The sender cost: stacked parts with their table and the explanation beside them.
    assert page.locator("table.sender-cost tbody tr").count() >= 1
    assert "csd_lock() waiting is" in page.locator("#sender-cost-note").inner_text()
    ipis = page.locator("table.ipi-counts").inner_text()
    assert "scheduler wake-ups" in ipis and "calls + scheduler wake-ups" in ipis


def test_compare_selected_runs_in_percentage_points(new_tab: Any, pages: dict[str, str]) -> None:
    tab = new_tab()
    page = tab.page
    page.goto("/runs?q=everywhere")
    button = page.locator("[data-compare-selected]").first
    assert button.is_disabled()
    boxes = page.locator("table.runs tbody input[name=ids]:not([disabled])")
    assert boxes.count() == 2  # the two "everywhere" runs
    boxes.nth(0).check()
    assert button.is_disabled()  # one run is not a comparison
    boxes.nth(1).check()
    assert button.is_enabled()
    button.click()
    page.wait_for_url(re.compile(r"/compare\?ids="))
    # Shares change in percentage points, other figures in percent.
    busy = page.locator("#delta-table tr[data-key='busy_share'] td.num").nth(2).inner_text()
    assert busy.endswith(" pp") or busy in ("–", "0.0 pp"), busy
    residency = page.locator("#delta-table tr[data-key^='residency.'] td.num").nth(2).inner_text()
    assert "pp" in residency and "%" not in residency, residency
    latency = page.locator("#delta-table tr[data-key='latency.wake.mean_ns'] td.num").nth(2).inner_text()
    assert latency.rstrip(" ✓✗").endswith("%"), latency
    # The tail overlays both runs; the picker hides one run's lines.
    page.locator("#chart-latency_tail").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-latency_tail[data-drawn='true']")
    picker = page.locator("[data-picker-for='chart-latency_tail'] input[data-kind='run']")
    assert picker.count() == 2
    picker.nth(1).uncheck()
    visible = page.evaluate(
        "document.getElementById('chart-latency_tail').data.map((t) => [t.name, t.visible])"
    )
    assert all((v is False) == name.endswith(" · B") for name, v in visible), visible
    tab.screenshot("compare-selected")


def test_sorting_by_an_api_column_shows_it(new_tab: Any, pages: dict[str, str]) -> None:
    tab = new_tab()
    page = tab.page
    page.goto(pages["runs-sorted-p99"])
    assert page.locator("#sort").input_value() == "wake_latency_p99_ns"
    assert page.locator("#order").input_value() == "desc"
    header = page.locator("table.runs thead th.num", has_text="WakeLatency p99")
    assert header.count() == 1
    values = page.locator("table.runs tbody tr td:nth-child(8)").all_inner_texts()
    assert values and all(v.endswith(" us") for v in values), values
    numbers = [float(v.split()[0].replace(",", "")) for v in values]
    assert numbers == sorted(numbers, reverse=True)


def test_scenario_cdf_lines_can_be_picked(new_tab: Any, pages: dict[str, str]) -> None:
    tab = new_tab()
    page = tab.page
    page.goto(pages["scenario"])
    page.locator("#chart-latency_cdf").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-latency_cdf[data-drawn='true']")
    roles = page.locator("[data-picker-for='chart-latency_cdf'] input[data-kind='run']")
    sources = page.locator("[data-picker-for='chart-latency_cdf'] input[data-kind='source']")
    assert roles.count() == 4 and sources.count() >= 2
    hidden_role = roles.nth(0).get_attribute("value")
    roles.nth(0).uncheck()
    sources.nth(0).uncheck()
    hidden_source = sources.nth(0).get_attribute("value")
    traces = page.evaluate(
        "document.getElementById('chart-latency_cdf').data.map((t) => [t.name, t.legendgroup, t.visible])"
    )
    for name, group, visible in traces:
        shown = not name.endswith(f" · {hidden_role}") and group != hidden_source
        assert (visible is not False) == shown, (name, visible)
    tab.screenshot("scenario-picked")

"""The dashboard's rough edges, in one browser session: every page at 390 and 1280 px no wider than
the screen and no header word broken mid-word (chart titles inside their charts, summary cards two
a row on a phone); /redoc rendering every operation offline under its CSP; validation rows without
a run saying so; the run badge following the progress; a finished sweep's bar full; the run form
refusing a run over the event limit."""

from __future__ import annotations

import gzip
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.app.measurements.test_turbostat import OUTPUT as TURBOSTAT
from tests.app.measurements.test_wult import INFO, ROWS, csv
from tests.browser.conftest import SMALL, WAIT_S, run_and_wait

pytestmark = pytest.mark.browser

WIDTHS = (390, 1280)
DUMP = Path(__file__).resolve().parents[2] / "app" / "fits" / "dev_machines" / "sklep0-sysfs.txt.gz"

# Measured in the page: its width against the screen's, what sticks out (outside the boxes that
# scroll on purpose), header words split over two lines (a break after a hyphen is a break between
# words), chart titles outside their chart, and the summary cards' rows.
PROBE = """() => {
    const width = window.innerWidth;
    const wide = [...document.querySelectorAll('body *')]
        .filter((el) => !el.closest('.table-wrap, .js-plotly-plot'))
        .filter((el) => el.getBoundingClientRect().right > width + 1)
        .slice(0, 5).map((el) => el.tagName + '.' + el.className);
    const broken = [];
    for (const th of document.querySelectorAll('th')) {
        const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.data.matchAll(/[^\\s-]+-?/g)) {
                const range = document.createRange();
                range.setStart(node, m.index);
                range.setEnd(node, m.index + m[0].length);
                if (range.getClientRects().length > 1) broken.push(m[0] + ' in ' + th.textContent.trim());
            }
        }
    }
    const titles = [...document.querySelectorAll('.js-plotly-plot')].flatMap((plot) => {
        const box = plot.getBoundingClientRect();
        return [...plot.querySelectorAll('.gtitle, .xtitle, .ytitle')]
            .filter((t) => {
                const r = t.getBoundingClientRect();
                return r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1;
            })
            .map((t) => t.textContent);
    });
    const cards = [...document.querySelectorAll('#summary-figures .figure')]
        .map((el) => Math.round(el.getBoundingClientRect().top));
    return {width, scrollWidth: document.documentElement.scrollWidth, wide, broken, titles,
            cardRows: new Set(cards).size, cards: cards.length};
}"""


def wait_status(api: httpx.Client, path: str, done: tuple[str, ...] = ("done", "failed")) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while True:
        body: dict[str, Any] = api.get(path).json()
        if body["status"] in done:
            return body
        assert time.monotonic() < deadline, f"{path} stuck in {body['status']}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def pages(api: httpx.Client) -> dict[str, str]:
    """A page of every kind, with what it shows made first: a run, a finished sweep, a wult and a
    turbostat measurement, an imported machine."""
    run = run_and_wait(api, SMALL, title="edges")
    # Two more runs that differ from each other only in the governor's kernel: compare's version axis.
    by_kernel = [
        run_and_wait(api, {**SMALL, "governor": {"name": "teo", "kernel": k}}, title=f"edges {k}")["id"]
        for k in ("v6.12", "v6.18")
    ]
    sweep = api.post(
        "/api/sweeps",
        json={
            "title": "edges",
            "base": SMALL,
            "axes": [{"path": "governor.kernel", "values": ["v6.12", "v6.18"]}],
        },
    )
    assert sweep.status_code in (200, 201, 202), sweep.text
    sweep_id = sweep.json()["id"]
    assert wait_status(api, f"/api/sweeps/{sweep_id}", ("done", "cancelled"))["status"] == "done"
    files = [("files", ("datapoints.csv", csv(*ROWS))), ("files", ("info.yml", INFO.encode()))]
    wult = api.post("/api/measurements", files=files, data={"title": "edges wult"})
    turbostat = api.post(
        "/api/measurements", content=TURBOSTAT.encode(), headers={"content-type": "text/plain"}
    )
    machine = api.post(
        "/api/platforms/import",
        params={"name": "edges-sklep0"},
        content=gzip.decompress(DUMP.read_bytes()),
        headers={"content-type": "text/plain"},
    )
    for answer in (wult, turbostat, machine):
        assert answer.status_code == 201, answer.text
    return {
        "home": "/",
        "runs": "/runs",
        "new-run": "/runs/new",
        "run": f"/runs/{run['id']}",
        "compare": f"/compare?ids={run['id']}&ids={by_kernel[0]}",
        "import": "/import",
        "sweeps": "/sweeps",
        "new-sweep": "/sweeps/new",
        "sweep": f"/sweeps/{sweep_id}",
        "sweep-kernels": f"/sweeps/{sweep_id}/kernels",
        "compare-kernels": f"/compare?ids={by_kernel[0]}&ids={by_kernel[1]}",
        "compare-wult": f"/compare?ids={run['id']}&ids={wult.json()['id']}",
        "fits": "/fits",
        "validation-machines": "/validation/machines",
        "wult": f"/measurements/{wult.json()['id']}",
        "turbostat": f"/measurements/{turbostat.json()['id']}",
        "platforms": "/platforms",
        "platform": "/platforms/skx",
        "machine": "/platforms/edges-sklep0",
        "scenarios": "/scenarios",
        "scenario": "/scenarios/mwait-ipi-westmere",
        "validation": "/validation",
    }


def test_every_page_fits_both_widths_with_no_header_word_broken(new_tab: Any, pages: dict[str, str]) -> None:
    problems = []
    for width in WIDTHS:
        tab = new_tab()
        tab.page.set_viewport_size({"width": width, "height": 844})
        for name, path in pages.items():
            response = tab.page.goto(path)
            assert response is not None and response.ok, (name, path)
            for plot in tab.page.query_selector_all("[data-chart-name]"):
                plot.scroll_into_view_if_needed()
                tab.page.wait_for_selector(f"#{plot.get_attribute('id')}[data-drawn='true']")
            got = tab.page.evaluate(PROBE)
            if got["scrollWidth"] > got["width"] or got["wide"] or got["broken"] or got["titles"]:
                problems.append((width, name, got))
            if name == "run" and width == 390:
                # Two summary cards a row: about half as many rows as cards.
                assert got["cards"] >= 6 and got["cardRows"] <= (got["cards"] + 1) // 2, got
    assert not problems, problems
    kernels = new_tab()
    kernels.page.goto(pages["compare-kernels"])
    assert kernels.page.locator("#compare-kernels").is_visible()


def test_redoc_renders_every_operation_offline(browser: Any, live_server: str, api: httpx.Client) -> None:
    """Nothing is fetched from another host, the search worker is allowed, and each operation of
    the schema has its section."""
    schema = api.get("/openapi.json").json()
    operations = {
        op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op
    }
    assert api.get("/redoc").headers["content-security-policy"].endswith("; worker-src blob:")
    assert "worker-src" not in api.get("/docs").headers["content-security-policy"]
    context = browser.new_context(base_url=live_server)
    page = context.new_page()
    outside: list[str] = []
    violations: list[str] = []
    host = urlsplit(live_server).netloc

    def route(r: Any) -> None:
        if urlsplit(r.request.url).netloc in (host, "") or r.request.url.startswith(("blob:", "data:")):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    try:
        page.goto("/redoc")
        page.wait_for_selector("[data-section-id^='operation/']", timeout=WAIT_S * 1000)
        page.wait_for_function(
            "n => document.querySelectorAll(\"[data-section-id^='operation/']\").length >= n",
            arg=len(operations),
            timeout=WAIT_S * 1000,
        )
        shown = page.evaluate(
            "[...document.querySelectorAll(\"[data-section-id^='operation/']\")]"
            ".map(e => e.dataset.sectionId)"
        )
        assert {s.removeprefix("operation/") for s in shown} >= operations
        # Redoc's search box works: its index is built in the worker the CSP now allows.
        page.fill("input[placeholder*='Search']", "runs")
        page.wait_for_selector("[data-role='search:results'] li")
    finally:
        context.close()
    assert not outside, outside
    # Redoc's "by Redocly" logo is an image on its CDN: refused (offline it would not load either).
    assert [v for v in violations if "cdn.redoc.ly" not in v] == [], violations


def test_validation_rows_without_a_run_say_not_run_yet(new_tab: Any) -> None:
    tab = new_tab()
    tab.page.goto("/validation")
    rows = tab.page.evaluate(
        """[...document.querySelectorAll('#validation-table tr[data-state]')].map((tr) => ({
            state: tr.dataset.state,
            cell: tr.querySelector('td.check-state').textContent.trim(),
            cross: !!tr.querySelector('td.check-state .check-fail'),
        }))"""
    )
    assert rows
    counts = {state: sum(r["state"] == state for r in rows) for state in {r["state"] for r in rows}}
    summary = tab.page.inner_text("#validation-count")
    for r in rows:
        if r["state"] == "not-run":
            assert r["cell"] == "not run yet" and not r["cross"], r
        if r["state"] == "ok":
            assert r["cell"] == "✓", r
    if counts.get("not-run"):
        assert f"{counts['not-run']} not run yet" in summary, summary
    simulated = counts.get("ok", 0) + counts.get("outside", 0)
    if simulated:
        assert f"{counts.get('ok', 0)} of {simulated} simulated" in summary, summary
    else:
        assert summary.startswith("No figure simulated yet"), summary


def test_the_run_badge_follows_the_progress(new_tab: Any, api: httpx.Client) -> None:
    """A run queued behind a long one: its page's badge reads `queued`, then what the progress
    says (the polls answered `running` at 30% here), then `done` once it finishes."""
    blocker = api.post("/api/runs", json={"config": {"duration_ms": 20000, "seed": 24004}})
    assert blocker.status_code == 202, blocker.text
    wait_status(api, f"/api/runs/{blocker.json()['id']}", ("running", "done", "failed"))
    queued = api.post("/api/runs", json={"config": {**SMALL, "seed": 24005}})
    run_id = queued.json()["id"]
    tab = new_tab()
    running = {"status": "running", "progress": 0.3}

    def fake(route: Any) -> None:
        answer = route.fetch()
        body = answer.json()
        unfinished = body["status"] in ("queued", "running")
        route.fulfill(response=answer, json={**body, **running} if unfinished else body)

    tab.page.route(f"**/api/runs/{run_id}", fake)
    tab.page.goto(f"/runs/{run_id}")
    if tab.page.query_selector("#run-progress") is None:
        pytest.fail("the run finished before its page was read: the blocker run was too short")
    tab.page.wait_for_function("document.querySelector('#run-progress').dataset.status === 'running'")
    assert tab.page.inner_text("#run-status .status") == "running"
    assert tab.page.get_attribute("#run-status .status", "class") == "status status-running"
    assert tab.page.inner_text("[data-progress-text]") == "Running: 30% simulated"
    tab.page.unroute(f"**/api/runs/{run_id}")
    tab.page.wait_for_selector("#run-status .status-done")
    assert tab.page.query_selector("#run-progress") is None


def test_a_finished_sweeps_bar_is_full(new_tab: Any, pages: dict[str, str]) -> None:
    tab = new_tab()
    tab.page.goto(pages["sweep"])
    bar = tab.page.evaluate(
        """(() => {
            const bar = document.querySelector('#sweep-progress progress');
            const card = bar.parentElement;
            const inner = card.clientWidth - parseFloat(getComputedStyle(card).paddingLeft)
                - parseFloat(getComputedStyle(card).paddingRight);
            return {value: bar.value, max: bar.max, width: bar.getBoundingClientRect().width, inner};
        })()"""
    )
    assert bar["value"] == bar["max"] == 1
    assert bar["width"] >= 0.98 * bar["inner"], bar  # the track spans its card: full reads full


def test_the_form_refuses_a_run_over_the_event_limit(new_tab: Any, api: httpx.Client) -> None:
    before = api.get("/api/runs", params={"limit": 1}).json()["total"]
    tab = new_tab()
    tab.page.goto("/runs/new")
    tab.page.wait_for_selector("form[data-ready='true']")
    tab.page.fill("#f-duration_ms", "60000")  # 96 CPUs x 60 s: ~30 million events
    tab.page.click("form.run-form button[type=submit]")
    tab.page.wait_for_selector("form[data-refused='true']")
    assert "over the limit" in tab.page.inner_text("[data-error-for='duration_ms']")
    assert tab.page.is_disabled("form.run-form button[type=submit]")
    assert tab.page.url.endswith("/runs/new")
    assert api.get("/api/runs", params={"limit": 1}).json()["total"] == before  # nothing stored
    tab.page.fill("#f-duration_ms", "50")
    assert tab.page.is_enabled("form.run-form button[type=submit]")

"""Comparisons and exports in the browser: verdicts from repeats, the mismatch warning above the
table and "run again with N repeats", the note beside the stored run page, copy as curl / Python,
and the HTML snapshots downloaded then opened from a file with the server stopped."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import SMALL, Tab, run_and_wait
from tests.browser.test_snapshot import open_offline
from tests.conftest import ServerProcess, sqlite_url

pytestmark = pytest.mark.browser

# One socket of skx (48 CPUs), 100 ms: disabling C1E costs about +2.5% energy, well beyond its spread.
C1E_BASE = {"duration_ms": 100, "topology": {"sockets": 1}}


def verdict(page: Any, key: str) -> str:
    return str(
        page.locator(f"#delta-table tr[data-key='{key}'] td.verdict").get_attribute("data-verdict-cell")
    )


def test_repeats_give_verdicts(api: httpx.Client, new_tab: Any) -> None:
    base = run_and_wait(api, C1E_BASE, "C1E on", repeats=3)
    off = run_and_wait(api, {**C1E_BASE, "states": {"disabled": ["C1E"]}}, "C1E off", repeats=3)
    tab = new_tab()
    page = tab.page
    page.goto(f"/compare?ids={base['id']},{off['id']}")
    tab.wait_charts()
    assert verdict(page, "energy.joules") == "worse"
    assert "worse" in page.locator("#delta-table tr[data-key='energy.joules'] td.verdict").inner_text()
    assert verdict(page, "residency.C1E") == "lower"
    assert page.locator("#no-verdicts").count() == 0
    assert page.locator("#compare-warnings").count() == 0, "the same platform, duration and CPUs"
    assert page.locator(".compare-runs td[data-repeats='3']").count() == 2
    tab.screenshot("compare-verdicts")

    # The robot's text and the Markdown, as the page links them.
    b_id, a_id = (run["id"].replace("_", "\\_") for run in (off, base))  # Markdown escapes `_`
    heading = f'### {b_id} ("C1E off") against {a_id} ("C1E on")'
    for link, first in (("#text-link", "=" * 89), ("#markdown-link", heading)):
        href = page.locator(link).get_attribute("href")
        answer = api.get(href)
        assert answer.status_code == 200 and answer.text.splitlines()[0] == first
        assert "energy.joules" in answer.text

    # The run page shows the statistics over its repeats.
    page.goto(f"/runs/{base['id']}")
    assert page.locator("#run-repeats").inner_text() == "3 repeats"
    assert page.locator("#repeat-stats tr[data-key='energy.joules'] td").last.inner_text() == "3"


def test_the_mismatch_warning_and_run_again_with_repeats(api: httpx.Client, new_tab: Any) -> None:
    short = run_and_wait(api, {**SMALL, "duration_ms": 20, "seed": 5}, "short")
    long = run_and_wait(api, {**SMALL, "duration_ms": 40, "seed": 5}, "long")
    tab = new_tab()
    page = tab.page
    page.goto(f"/compare?ids={short['id']},{long['id']}")
    warning = page.locator("#compare-warnings li[data-kind='duration']")
    assert "compared per second" in warning.inner_text()
    table = page.locator("#delta-table").bounding_box()
    assert page.locator("#compare-warnings").bounding_box()["y"] < table["y"], "warnings above the table"
    assert "per second" in page.locator("#delta-table tr[data-key='wakeups'] td").first.inner_text()
    assert page.locator("#no-verdicts").is_visible()
    assert page.locator("#delta-table td.verdict[data-verdict-cell='']").count() > 0
    tab.screenshot("compare-warning")

    page.fill("#compare-again input[name='repeats']", "3")
    page.locator("#compare-again button").click()
    page.wait_for_url(re.compile(r"/compare\?ids=(?!" + short["id"] + ")"))
    ids = page.url.split("ids=")[1].split(",")
    for run_id in ids:
        run_and_wait_id(api, run_id)
    page.reload()
    assert page.locator(".compare-runs td[data-repeats='3']").count() == 2
    assert page.locator("#no-verdicts").count() == 0
    assert page.locator("#delta-table td.verdict[data-verdict-cell='no_significant_change']").count() > 0


def run_and_wait_id(api: httpx.Client, run_id: str) -> None:
    deadline = time.monotonic() + 120
    while api.get(f"/api/runs/{run_id}").json()["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_a_note_beside_the_stored_page(api: httpx.Client, new_tab: Any) -> None:
    made = api.post(
        "/api/runs", json={"config": {**SMALL, "seed": 91}, "title": "noted in the browser"}
    ).json()
    run_and_wait_id(api, made["id"])
    tab = new_tab()
    page = tab.page
    page.goto(f"/runs/{made['id']}")
    page.wait_for_selector("#note[data-loaded='true']")
    assert page.locator("[data-note-body]").inner_text() == "No note yet."
    page.locator("#note summary").click()
    page.fill("#note textarea", "Bisected to 779b1a1cb13a <script>alert(1)</script>")
    page.fill("#note input[name='token']", "not the token")
    page.locator("#note button[type='submit']").click()
    page.wait_for_selector("[data-note-status]:has-text('Not saved')")
    page.fill("#note input[name='token']", made["delete_token"])
    page.locator("#note button[type='submit']").click()
    page.wait_for_selector("[data-note-status]:has-text('Saved')")
    link = page.locator("[data-note-body] a")
    assert link.get_attribute("href") == "https://git.kernel.org/torvalds/c/779b1a1cb13a"
    assert link.get_attribute("rel") == "noopener nofollow"
    assert "<script>alert(1)</script>" in page.locator("[data-note-body]").inner_text(), "shown as text"
    page.reload()
    page.wait_for_selector("#note[data-loaded='true']")
    assert "Bisected to" in page.locator("[data-note-body]").inner_text()
    tab.screenshot("run-note")


def test_copy_as_curl_and_python(api: httpx.Client, new_tab: Any) -> None:
    run = run_and_wait(api, {**SMALL, "seed": 92}, "copied")
    tab = new_tab()
    tab.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = tab.page
    page.goto(f"/runs/{run['id']}")
    page.get_by_role("button", name="Copy as curl").click()
    page.wait_for_selector("#snippet[data-kind='curl']")
    shown = page.locator("#snippet").inner_text()
    assert shown.startswith("# Recreate this run on http://127.0.0.1:") and "curl -s -X POST" in shown
    assert page.evaluate("navigator.clipboard.readText()") == shown
    page.get_by_role("button", name="Copy as Python").click()
    page.wait_for_selector("#snippet[data-kind='python']")
    assert "import urllib.request" in page.locator("#snippet").inner_text()


def test_snapshots_open_from_a_file_with_the_server_stopped(browser: Any, tmp_path: Path) -> None:
    server = ServerProcess(sqlite_url(tmp_path / "idlelab.db"), tmp_path / "server.log").start()
    try:
        with httpx.Client(base_url=server.url, timeout=60.0) as api:
            a = run_and_wait(api, {**SMALL, "seed": 93}, "snapshot A", repeats=3)
            b = run_and_wait(api, {**SMALL, "seed": 94}, "snapshot B", repeats=3)
        tab = Tab(browser, server.url)
        saved = []
        for path, link in (
            (f"/runs/{a['id']}", "#snapshot-link"),
            (f"/compare?ids={a['id']},{b['id']}", "#snapshot-link"),
        ):
            tab.page.goto(path)
            with tab.page.expect_download() as download:
                tab.page.locator(link).click()
            target = tmp_path / download.value.suggested_filename
            download.value.save_as(target)
            saved.append(target)
        tab.close()
    finally:
        server.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(server.url, timeout=2)
    for target, heading in zip(saved, ("snapshot A", "Compare "), strict=True):
        context, page, requests, problems = open_offline(browser, target)
        try:
            assert requests == [target.as_uri()], "nothing but the file itself"
            assert problems == []
            assert page.locator("h1").inner_text().startswith(heading)
            assert page.locator("[data-drawn='true']").count() >= 3
        finally:
            context.close()
    assert saved[1].name == f"idlelab-compare-{a['id']}-{b['id']}.html"


def test_a_sweep_page_loads_its_note(api: httpx.Client, new_tab: Any) -> None:
    axes = [{"path": "governor.name", "values": ["menu"]}]
    made = api.post("/api/sweeps", json={"base": {**SMALL, "duration_ms": 10}, "axes": axes}).json()
    note = {"text": "Sweep for https://lore.kernel.org/linux-pm/ thread"}
    r = api.put(f"/api/sweeps/{made['id']}/note", json=note, headers={"X-Delete-Token": made["delete_token"]})
    assert r.status_code == 200, r.text
    tab = new_tab()
    tab.page.goto(f"/sweeps/{made['id']}")
    tab.page.wait_for_selector("#note[data-loaded='true']")
    assert tab.page.locator("[data-note-body] a").get_attribute("href") == "https://lore.kernel.org/linux-pm/"

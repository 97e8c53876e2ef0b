"""Browser test fixtures: Debian's Chromium driven by Playwright (never a downloaded browser),
against the real server of the `live_server` fixture, with screenshots saved to test-artifacts/."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent.parent.parent / "test-artifacts"
SMALL = {"duration_ms": 50, "topology": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}}
WAIT_S = 120.0


@pytest.fixture(scope="session")
def api(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=60.0) as client:
        yield client


def run_and_wait(api: httpx.Client, config: dict[str, Any], title: str = "", **body: Any) -> dict[str, Any]:
    """Submit a run and poll until it is done (a generous bound, not a timing check)."""
    r = api.post("/api/runs", json={"config": config, "title": title, **body})
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    deadline = time.monotonic() + WAIT_S
    while True:
        run = api.get(f"/api/runs/{run_id}").json()
        if run["status"] in ("done", "failed"):
            assert run["status"] == "done", run["error"]
            return run  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"run {run_id} stuck in {run['status']}"
        time.sleep(0.05)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        message = "Debian's chromium is not installed (make chromium / apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Tab:
    """A page in its own fresh context, recording dialogs, page errors and CSP violations."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.context = browser.new_context(base_url=base_url, viewport={"width": 1400, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(WAIT_S * 1000)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on(
            "console",
            lambda msg: (
                self.errors.append(f"console: {msg.text}")
                if msg.type == "error" and "Content Security Policy" in msg.text
                else None
            ),
        )

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def screenshot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def wait_charts(self) -> None:
        """Scroll to each chart in turn (charts below the screen are drawn when scrolled near),
        then wait until every one is drawn (a run page still in progress reloads with them)."""
        self.page.wait_for_selector("[data-chart-name]", state="attached")
        for plot in self.page.query_selector_all("[data-chart-name]"):
            plot.scroll_into_view_if_needed()
            self.page.wait_for_selector(f"#{plot.get_attribute('id')}[data-drawn='true']")
        self.page.wait_for_selector("body[data-charts-drawn='true']")
        self.page.evaluate("window.scrollTo(0, 0)")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def new_tab(browser: Any, live_server: str) -> Iterator[Any]:
    """Make tabs, each in a fresh browser context (no shared cookies or storage)."""
    tabs: list[Tab] = []

    def make() -> Tab:
        tab = Tab(browser, live_server)
        tabs.append(tab)
        return tab

    yield make
    for tab in tabs:
        assert not tab.errors, tab.errors
        assert not tab.dialogs, f"a dialog fired: {tab.dialogs}"
        tab.close()

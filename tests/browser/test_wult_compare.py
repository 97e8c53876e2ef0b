"""A run against a wult measurement per requested C-state, in the browser: the per-state table on
the compare page at 390 and 1280 px, no wider than the screen and no header word broken."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.app.compare.test_measured_states import RUN
from tests.app.measurements.test_wult import INFO, ROWS, csv
from tests.browser.conftest import run_and_wait
from tests.browser.test_edges import PROBE, WIDTHS

pytestmark = pytest.mark.browser


def test_the_per_state_table_fits_both_widths(new_tab: Any, api: httpx.Client) -> None:
    run = run_and_wait(api, RUN, title="per-state")
    files = [("files", ("datapoints.csv", csv(*ROWS))), ("files", ("info.yml", INFO.encode()))]
    wult = api.post("/api/measurements", files=files, data={"title": "per-state wult"}).json()["id"]
    for width in WIDTHS:
        tab = new_tab()
        tab.page.set_viewport_size({"width": width, "height": 844})
        tab.page.goto(f"/compare?ids={run['id']},{wult}")
        rows = tab.page.evaluate(
            "[...document.querySelectorAll('#measured-states tr[data-state]')]"
            ".map((tr) => tr.dataset.state + ' ' + tr.dataset.metric)"
        )
        assert "C6 WakeLatency" in rows and "all WakeLatency" in rows, rows
        few = tab.page.inner_text("#measured-states tr[data-state='C6'] .few-samples")
        assert few == "too few samples for p90, p99, p99.9"
        got = tab.page.evaluate(PROBE)
        assert got["scrollWidth"] <= got["width"] and not got["wide"] and not got["broken"], (width, got)

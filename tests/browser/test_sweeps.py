"""A sweep in the browser: the form (point count as you type, errors naming the field), then the
sweep page following progress until its charts are drawn, and its table sorting by a column."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_a_sweep_from_the_form_to_its_charts(new_tab: Any) -> None:
    tab = new_tab()
    page = tab.page
    page.goto("/sweeps/new")
    assert page.locator("#point-count").inner_text() == "18"  # the example's 3 x 6
    page.fill(
        "textarea[name='base']", '{"duration_ms": 20, "topology": {"sockets": 1, "cores_per_socket": 4}}'
    )
    rows = page.locator("#axes .axis")
    rows.nth(1).locator("[name='values']").fill("100, 1000")
    assert page.locator("#point-count").inner_text() == "6"
    rows.nth(0).locator("[name='path']").fill("governor.nope")
    page.get_by_role("button", name="Start the sweep").click()
    page.wait_for_selector("#sweep-errors:has-text('axes.0.path')")
    rows.nth(0).locator("[name='path']").fill("governor.name")
    page.fill("input[name='repeats']", "2")
    page.fill("input[name='title']", "browser sweep")
    tab.screenshot("sweep-new")
    page.get_by_role("button", name="Start the sweep").click()
    page.wait_for_url(re.compile(r"/sweeps/[\w-]+$"))
    tab.wait_charts()  # the page reloads once every point is finished
    assert page.locator("#chart-sweep_metric .trace").count() == 3  # a line per governor
    assert page.locator("#sweep-points tbody tr").count() == 6
    assert page.locator("#sweep-repeats").inner_text() == "2 repeats"  # error bars: ± per point
    assert page.locator("#sweep-points [data-stddev]").count() > 0
    tab.screenshot("sweep")

    # Sorting by "#" descending puts the last point first.
    page.locator("#sweep-points thead th").first.click()
    page.locator("#sweep-points thead th").first.click()
    assert page.locator("#sweep-points tbody tr").first.locator("td").first.inner_text() == "5"

"""The real-machine path in the browser: import a machine's dump, simulate its table beside its
counters, import a wult result, "Simulate this", and the comparison with both overlaid."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from tests.app.measurements.test_api import lognormal_rows
from tests.app.measurements.test_wult import INFO, ROWS, csv
from tests.app.platforms.machines import HEADER, SKX, grep_text, machine_files
from tests.browser.conftest import WAIT_S
from tests.browser.test_dashboard import drawn
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.browser


def four_cores(cpu: int) -> tuple[int, int, str]:
    """One package of four cores, one thread each."""
    return 0, cpu, str(cpu)


def reload_until(page: Any, selector: str) -> None:
    """Reload until `selector` is on the page (the run behind it finishes meanwhile)."""
    deadline = time.monotonic() + WAIT_S
    while page.locator(selector).count() == 0:
        assert time.monotonic() < deadline, f"{selector} never appeared on {page.url}"
        time.sleep(0.5)
        page.reload()


def test_import_simulate_compare(new_tab: Any) -> None:
    tab = new_tab()
    page = tab.page
    dump = grep_text(machine_files(SKX, 4, layout=four_cores), HEADER).encode()

    page.goto("/import")
    page.locator("#dump").set_input_files({"name": "machine.txt", "mimeType": "text/plain", "buffer": dump})
    page.locator("#name").fill("browser-box")
    page.locator("#import-machine-submit").click()
    page.wait_for_url(re.compile(r"/platforms/browser-box$"))
    assert page.locator("#recognised").get_attribute("data-relation") == "equal"
    assert page.locator("#counter-table tr[data-state='C6']", has_text="60.00%").count() == 1

    page.locator("#simulate-platform").click()
    page.wait_for_url(re.compile(r"/platforms/browser-box\?run="))
    reload_until(page, "#sim-status:has-text('done')")
    header = page.locator("#counter-table thead").inner_text()
    assert "share (simulated)" in header
    tab.screenshot("machine-imported")

    page.goto("/import")
    rows = [*ROWS, *lognormal_rows(300, 40.0, 0.2)]
    page.locator("#files").set_input_files(
        [
            {"name": "datapoints.csv", "mimeType": "text/csv", "buffer": csv(*rows)},
            {"name": "info.yml", "mimeType": "text/yaml", "buffer": INFO.encode()},
        ]
    )
    page.locator("#title").fill("C6 on the browser box")
    page.locator("#import-measurement-submit").click()
    page.wait_for_url(re.compile(r"/measurements/[^/#?]+"))
    assert page.locator("#delete-token code").inner_text()  # shown once, from the fragment
    tab.wait_charts()
    chart = drawn(page, "chart-WakeLatency_tail")
    # POLL and C1 have one datapoint each: no tail to draw; C6's 301 have one.
    assert chart["svg"] >= 1 and chart["traces"] == chart["data"] == 1
    assert page.locator("tr[data-state='C6'][data-metric='WakeLatency']").count() == 1
    tab.screenshot("measurement-wult")

    # wult's files name no CPU model: the page asks which platform.
    assert page.locator("#sim-ask").count() == 1
    page.locator("#sim-platform").select_option("browser-box")
    page.locator("#simulate-this").click()
    page.wait_for_url(re.compile(r"/compare\?ids="))
    reload_until(page, "#measured-table")
    tab.wait_charts()
    assert page.locator("#measured-table tr[data-key='latency.wake.p50_ns']").count() == 1
    tail = drawn(page, "chart-measured_wake_tail")
    assert tail["svg"] >= 1 and tail["traces"] == tail["data"] == 2  # simulated and measured
    tab.screenshot("compare-measured")


# What each server is (app/fits/dev_machines/README.md) and the package and module states its table has.
SERVERS = {
    "emr9": ("spr", 144, ["PC2", "PC6"]),
    "srf8": ("srf", 128, ["MC6", "PC2", "PC6"]),
}


@pytest.mark.parametrize("machine", sorted(SERVERS))
def test_a_real_server_imported_through_the_page_simulates_and_shows_its_package_states(
    new_tab: Any, machine: str
) -> None:
    based_on, cpus, package_states = SERVERS[machine]
    tab = new_tab()
    page = tab.page
    dump = (REPO_ROOT / "app" / "fits" / "dev_machines" / f"{machine}-sysfs.txt.gz").read_bytes()
    page.goto("/import")
    page.locator("#dump").set_input_files(
        {"name": f"{machine}.txt.gz", "mimeType": "application/gzip", "buffer": dump}
    )
    page.locator("#name").fill(f"browser-{machine}")
    page.locator("#import-machine-submit").click()
    page.wait_for_url(re.compile(rf"/platforms/browser-{machine}$"))
    assert page.locator("#based-on").inner_text() == based_on
    assert page.locator("#machine-run").inner_text().startswith(f"{cpus} CPUs")
    shown = page.locator("#package-states tr[data-package-state]")
    assert [shown.nth(i).get_attribute("data-package-state") for i in range(shown.count())] == package_states

    page.locator("#simulate-platform").click()
    page.wait_for_url(re.compile(rf"/platforms/browser-{machine}\?run="))
    reload_until(page, "#sim-status:has-text('done')")
    # Once simulated, each package state shows its simulated share.
    for name in package_states:
        cell = page.locator(f"#package-states tr[data-package-state='{name}'] td.num").inner_text()
        assert cell.endswith("%"), (name, cell)
    tab.screenshot(f"machine-{machine}")

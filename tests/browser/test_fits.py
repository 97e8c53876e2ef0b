"""A twin in the browser: import a development dump, fit it from its platform page with a small
budget, watch the fit finish, ask a what-if from the fit's page and reach the side-by-side page."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.app.fits.dumps import dev_dump

pytestmark = pytest.mark.browser


def test_import_fit_and_ask_what_if(new_tab: Any) -> None:
    tab = new_tab()
    page = tab.page
    page.goto("/import")
    page.locator("#dump").set_input_files(
        {"name": "adl0.txt", "mimeType": "text/plain", "buffer": dev_dump("adl0").encode()}
    )
    page.locator("#name").fill("browser-adl0")
    page.locator("#import-machine-submit").click()
    page.wait_for_url(re.compile(r"/platforms/browser-adl0$"))

    page.locator("input[name='budget']").fill("100")
    page.locator("#fit-twin").click()
    page.wait_for_url(re.compile(r"/fits/[A-Za-z0-9_-]+$"))
    # The page reloads itself while the fit runs, and shows the fit's delete token the while.
    page.wait_for_selector("#fit-progress[data-status='done']")
    token = page.locator("#delete-token code").inner_text()
    assert page.locator("#delete-token").is_visible() and len(token) >= 20
    assert "delete-token" not in page.url
    assert page.locator("#fit-states tr[data-state='C10']").count() == 1
    assert page.locator("#fit-verdict").count() == 1
    assert page.locator("#fit-cv").inner_text().startswith("Fitted on")
    tab.wait_charts()
    tab.screenshot("fit-done")

    page.locator("select[name='governor']").select_option("teo")
    page.locator("#whatif-submit").click()
    page.wait_for_url(re.compile(r"/fits/[A-Za-z0-9_-]+/whatif/[A-Za-z0-9_-]+$"))
    assert '"teo"' in page.locator("#whatif-changes").inner_text()
    # The what-if run's delete token, shown once; the address keeps no fragment.
    page.wait_for_selector("#delete-token:not([hidden])")
    assert len(page.locator("#delete-token code").inner_text()) >= 20 and "delete-token" not in page.url
    # The what-if page reloads itself until its runs finish.
    page.wait_for_selector("#whatif-runs[data-pending='no']")
    page.wait_for_selector("#whatif-states tr[data-state='C6']")
    assert "not in a dump" in page.locator("#whatif-hidden").inner_text()
    tab.screenshot("fit-whatif")

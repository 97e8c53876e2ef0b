"""python -m app.validation: progress on stderr, the table or JSON on stdout."""

from __future__ import annotations

import json

import pytest

from app.validation import main


def test_no_db_scenario_reports_progress_and_checks(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["--no-db", "--scenario", "rfc-review-irqs-off", "--json"])
    out, err = capsys.readouterr()
    # Each run is announced before it starts and timed after, on stderr only.
    assert err.count("simulating rfc-review-irqs-off: ") == 2
    assert "irqs-on ..." in err and "irqs-off ..." in err and err.count("done in") == 2
    body = json.loads(out)
    assert body["scenario"] == "rfc-review-irqs-off"
    assert status == (0 if all(row["ok"] for row in body["checks"]) else 1)

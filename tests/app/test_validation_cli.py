"""`idlelab validate`: the missing runs made through the job runner, then the table as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from tests.conftest import sqlite_url


@pytest.mark.slow
def test_validate_makes_the_missing_runs_then_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("IDLELAB_DATABASE_URL", sqlite_url(tmp_path / "v.db"))
    status = main(["validate", "--json"])
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert body["missing"] == 0 and not body["pending"]
    assert err.count("simulating ") == sum(len(s["runs"]) for s in body["scenarios"])
    assert all(row["simulated"] is not None for row in body["rows"])
    assert status == (0 if body["all_ok"] else 1)
    # A second time there is nothing to make.
    assert main(["validate", "--json"]) == status
    assert "simulating" not in capsys.readouterr().err

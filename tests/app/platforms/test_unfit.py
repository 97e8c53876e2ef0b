"""The import says what makes a machine's counters unfit for a twin (engine.twin.unfit_reasons)."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

MACHINES = Path(__file__).resolve().parents[3] / "app" / "fits" / "dev_machines"


def _import(client: Any, machine: str) -> dict[str, Any]:
    data = gzip.decompress((MACHINES / f"{machine}-sysfs.txt.gz").read_bytes())
    headers = {"Content-Type": "text/plain"}
    r = client.post(f"/api/platforms/import?name={machine}", content=data, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


def test_counters_that_mix_a_disabled_period_are_flagged_at_import(app_client: Any) -> None:
    made = _import(app_client, "icx2s3")
    kinds = {u["kind"] for u in made["machine"]["unfit"]}
    assert "disabled_part_time" in kinds
    page = app_client.get("/platforms/icx2s3").text
    assert 'id="unfit-for-twin"' in page and 'data-unfit="disabled_part_time"' in page


def test_a_clean_machine_has_nothing_flagged_for_its_states(app_client: Any) -> None:
    made = _import(app_client, "sklep0")
    assert "disabled_part_time" not in {u["kind"] for u in made["machine"]["unfit"]}

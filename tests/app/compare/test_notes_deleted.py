"""A note goes with what it is about: deleting a run, a sweep (and its points) or a measurement
deletes their notes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from app.core.models import Note
from tests.app.factories import done_run, small_config


def _notes(app: Any) -> int:
    with app.state.db_engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(Note)).scalar() or 0)


def test_deleting_a_run_or_a_sweep_deletes_their_notes(app_client: Any) -> None:
    run_id, token = done_run(app_client.app)
    headers = {"X-Delete-Token": token}
    assert app_client.put(f"/api/runs/{run_id}/note", json={"text": "a"}, headers=headers).status_code == 200
    assert _notes(app_client.app) == 1
    assert app_client.delete(f"/api/runs/{run_id}", headers=headers).status_code == 204
    assert _notes(app_client.app) == 0

    body = {"base": small_config(), "axes": [{"path": "governor.name", "values": ["menu", "teo"]}]}
    made = app_client.post("/api/sweeps", json=body).json()
    headers = {"X-Delete-Token": made["delete_token"]}
    url = f"/api/sweeps/{made['id']}"
    assert app_client.put(f"{url}/note", json={"text": "b"}, headers=headers).status_code == 200
    assert app_client.delete(url, headers=headers).status_code == 204
    assert _notes(app_client.app) == 0

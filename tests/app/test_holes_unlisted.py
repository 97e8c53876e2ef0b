"""Runs made from unlisted objects are unlisted (issue 23, hole 4): an unlisted measurement's
"Simulate this", from the API or the page's button, makes a run no list shows or searches."""

from __future__ import annotations

from typing import Any

from tests.app.measurements.test_wult import INFO, csv, row

SECRET = "secret-board-42"


def unlisted_measurement(client: Any) -> str:
    rows = [row(90.0 + i, 93.0 + i, 1, 800.0 + 100 * i, "C6", 0.1, 95.0, 40.0, 50.0) for i in range(5)]
    files = [("files", ("datapoints.csv", csv(*rows))), ("files", ("info.yml", INFO.encode()))]
    r = client.post("/api/measurements", params={"title": SECRET, "unlisted": "true"}, files=files)
    assert r.status_code == 201 and r.json()["unlisted"] is True, r.text
    return str(r.json()["id"])


def listed_ids(client: Any, **params: str) -> set[str]:
    return {r["id"] for r in client.get("/api/runs", params={"limit": "100", **params}).json()["runs"]}


def test_simulating_an_unlisted_measurement_makes_an_unlisted_run(app_client: Any) -> None:
    mid = unlisted_measurement(app_client)
    by_api = app_client.post(f"/api/measurements/{mid}/simulate", json={"platform": "skx"}).json()["id"]
    page = app_client.post(f"/measurements/{mid}/simulate", data={"platform": "skx"}, follow_redirects=False)
    assert page.status_code == 303
    by_page = page.headers["location"].split("ids=", 1)[1].split(",", 1)[0]
    for run_id in (by_api, by_page):
        run = app_client.get(f"/api/runs/{run_id}").json()
        assert run["unlisted"] is True and SECRET in run["title"]
    assert not {by_api, by_page} & (listed_ids(app_client) | listed_ids(app_client, q=SECRET))
    assert SECRET not in app_client.get("/runs").text
    # A listed measurement's run stays listed unless asked otherwise.
    files = [("files", ("datapoints.csv", csv(row(90.0, 93.0, 1, 800.0, "C6", 0.1, 95.0, 40.0, 50.0)))),
             ("files", ("info.yml", INFO.encode()))]  # fmt: skip
    listed = app_client.post("/api/measurements", files=files).json()["id"]
    run_id = app_client.post(f"/api/measurements/{listed}/simulate", json={"platform": "skx"}).json()["id"]
    assert run_id in listed_ids(app_client)

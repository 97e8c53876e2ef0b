"""The sweeps API on an in-process app without workers (points stay queued unless reused)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.factories import done_run, small_config

AXES = [
    {"path": "governor.name", "values": ["menu", "teo"]},
    {"path": "wakeups.interrupts.rate_hz", "values": [100, 1000, 10000]},
]


def _post(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/sweeps", json=body)


def _create(client: Any, **body: Any) -> dict[str, Any]:
    r = _post(client, {"base": small_config(), "axes": AXES, **body})
    assert r.status_code == 202, r.text
    return r.json()  # type: ignore[no-any-return]


def test_a_sweep_is_the_cartesian_product_of_its_axes(app_client: Any) -> None:
    made = _create(app_client, title="grid")
    assert (
        made["points"] == 6 and made["status"] == "queued" and made["url"].endswith(f"/sweeps/{made['id']}")
    )
    sweep = app_client.get(f"/api/sweeps/{made['id']}").json()
    assert sweep["status"] == "queued" and sweep["progress"] == 0
    values = [p["values"] for p in sweep["points"]]
    assert values == [
        {"governor.name": g, "wakeups.interrupts.rate_hz": r}
        for g in ("menu", "teo")
        for r in (100, 1000, 10000)
    ]
    # Every point is an ordinary run with those values in its config.
    for point in sweep["points"]:
        run = app_client.get(f"/api/runs/{point['run_id']}").json()
        assert run["sweep_id"] == made["id"]
        assert run["config"]["governor"]["name"] == point["values"]["governor.name"]
        assert (
            run["config"]["wakeups"]["interrupts"]["rate_hz"] == point["values"]["wakeups.interrupts.rate_hz"]
        )
        assert run["config"]["duration_ms"] == 30  # the rest from the base
    listed = app_client.get("/api/sweeps").json()
    assert made["id"] in [s["id"] for s in listed["sweeps"]]


def test_points_are_hidden_from_run_lists_unless_asked_for(app_client: Any) -> None:
    made = _create(app_client)
    ids = {p["run_id"] for p in app_client.get(f"/api/sweeps/{made['id']}").json()["points"]}
    listed = {r["id"] for r in app_client.get("/api/runs?limit=200").json()["runs"]}
    assert not ids & listed
    asked = app_client.get(f"/api/runs?sweep={made['id']}&limit=200").json()
    assert {r["id"] for r in asked["runs"]} == ids and asked["total"] == 6
    page = app_client.get(f"/runs?sweep={made['id']}").text
    assert all(run_id in page for run_id in ids)


def test_an_unlisted_sweep_and_its_points_are_found_only_by_link(app_client: Any) -> None:
    made = _create(app_client, unlisted=True)
    assert made["id"] not in [s["id"] for s in app_client.get("/api/sweeps?limit=200").json()["sweeps"]]
    assert app_client.get(f"/api/runs?sweep={made['id']}").json()["total"] == 0
    point = app_client.get(f"/api/sweeps/{made['id']}").json()["points"][0]
    assert app_client.get(f"/api/runs/{point['run_id']}").json()["unlisted"] is True


def test_identical_points_reuse_finished_runs(app_client: Any) -> None:
    config = small_config(governor={"name": "teo"})
    original, _ = done_run(app_client.app, config)
    made = _create(app_client, axes=[{"path": "governor.name", "values": ["teo", "menu"]}])
    points = app_client.get(f"/api/sweeps/{made['id']}").json()["points"]
    assert [p["status"] for p in points] == ["done", "queued"]
    reused = app_client.get(f"/api/runs/{points[0]['run_id']}").json()
    assert reused["reused_from"] == original and reused["result"] is not None


def test_cancel_fails_queued_points_and_delete_removes_them(app_client: Any) -> None:
    made = _create(app_client)
    sid, token = made["id"], made["delete_token"]
    assert app_client.post(f"/api/sweeps/{sid}/cancel").status_code == 403
    r = app_client.post(f"/api/sweeps/{sid}/cancel", headers={"X-Delete-Token": token})
    assert r.status_code == 200 and r.json()["cancelled"] == 6
    sweep = app_client.get(f"/api/sweeps/{sid}").json()
    assert sweep["status"] == "cancelled" and {p["status"] for p in sweep["points"]} == {"failed"}
    ids = [p["run_id"] for p in sweep["points"]]
    assert app_client.delete(f"/api/sweeps/{sid}", headers={"X-Delete-Token": "wrong"}).status_code == 403
    assert app_client.delete(f"/api/sweeps/{sid}", headers={"X-Delete-Token": token}).status_code == 204
    assert app_client.get(f"/api/sweeps/{sid}").status_code == 404
    assert all(app_client.get(f"/api/runs/{i}").status_code == 404 for i in ids)


def test_a_platform_axis_replaces_a_custom_platform_table(app_client: Any) -> None:
    states = [{"name": "C1", "exit_latency_us": 2, "target_residency_us": 2}]
    r = app_client.post("/api/platforms", json={"name": "mybox", "based_on": "skx", "states": states})
    assert r.status_code == 201, r.text
    made = _create(
        app_client,
        base={**small_config(), "platform": "mybox", "package": {"limit": "PC0"}},
        axes=[{"path": "platform", "values": ["mybox", "icx"]}],
    )
    points = app_client.get(f"/api/sweeps/{made['id']}").json()["points"]
    configs = [app_client.get(f"/api/runs/{p['run_id']}").json()["config"] for p in points]
    assert [c["platform"] for c in configs] == ["mybox", "icx"]
    assert [s["name"] for s in configs[0]["platform_table"]["states"]] == ["POLL", "C1"]
    assert configs[1]["platform_table"] is None


@pytest.mark.parametrize(
    ("axes", "loc", "words"),
    [
        ([], ["body", "axes"], "at least 1"),
        (
            [{"path": "governor.nam", "values": ["menu"]}],
            ["body", "axes", 0, "path"],
            "names no config field",
        ),
        (
            [{"path": "platform_table", "values": [None]}],
            ["body", "axes", 0, "path"],
            "names no config field",
        ),
        (
            [{"path": "seed", "values": [1]}, {"path": "seed", "values": [2]}],
            ["body", "axes", 1, "path"],
            "already an axis",
        ),
        (
            [{"path": "governor.name", "values": ["menu", "bogus"]}],
            ["body", "axes", 0, "values", 1],
            "governor.name",
        ),
        (
            [{"path": "seed", "values": [1]}, {"path": "duration_ms", "values": [10, -1]}],
            ["body", "axes", 1, "values", 1],
            "duration_ms",
        ),
        ([{"path": "seed", "values": []}], ["body", "axes", 0, "values"], "at least 1"),
        (
            [
                {"path": "seed", "values": list(range(40))},
                {"path": "duration_ms", "values": list(range(1, 27))},
            ],
            ["body", "axes"],
            "1040 points over the limit of 1000",
        ),
    ],
)
def test_bad_sweeps_are_422_naming_the_field(
    app_client: Any, axes: list[dict[str, Any]], loc: list[Any], words: str
) -> None:
    before = app_client.get("/api/sweeps?limit=200").json()["total"]
    r = _post(app_client, {"base": small_config(), "axes": axes})
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert [e["loc"] for e in detail] == [loc], detail
    assert words in detail[0]["msg"]
    assert app_client.get("/api/sweeps?limit=200").json()["total"] == before  # nothing stored


def test_unknown_sweeps_are_404(app_client: Any) -> None:
    assert app_client.get("/api/sweeps/nope").status_code == 404
    assert app_client.get("/sweeps/nope").status_code == 404
    assert app_client.delete("/api/sweeps/nope", headers={"X-Delete-Token": "x"}).status_code == 404


def test_the_sweep_pages_and_csv_answer(app_client: Any) -> None:
    made = _create(app_client, title="pages")
    assert app_client.get("/sweeps").status_code == 200
    assert app_client.get("/sweeps/new").status_code == 200
    assert app_client.get(f"/sweeps/{made['id']}").status_code == 200
    lines = app_client.get(f"/api/sweeps/{made['id']}/points.csv").text.strip().splitlines()
    assert lines[0].startswith("index,governor.name,wakeups.interrupts.rate_hz,run_id,status")
    assert len(lines) == 7

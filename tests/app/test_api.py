"""The REST API through real HTTP against `python -m app.cli serve` on a SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from engine import BUILTIN_PLATFORMS
from tests.app.factories import small_config, submit, wait_finished


@pytest.fixture(scope="module")
def client(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=120.0) as c:
        yield c


def test_create_get_list_delete(client: httpx.Client) -> None:
    created = submit(client, small_config(seed=11), title="lifecycle")
    assert set(created) >= {"id", "url", "status", "delete_token"}
    assert created["status"] == "queued"
    assert created["url"].endswith(f"/runs/{created['id']}")
    assert len(created["id"]) >= 8

    run = wait_finished(client, created["id"])
    assert run["status"] == "done", run["error"]
    for key in (
        "id",
        "title",
        "status",
        "progress",
        "created_at",
        "config",
        "result",
        "error",
        "engine_version",
    ):
        assert key in run
    assert run["title"] == "lifecycle"
    assert run["progress"] == 1.0
    assert run["config"]["seed"] == 11
    assert run["result"]["config_hash"]
    assert run["result"]["engine_version"] == run["engine_version"]
    assert run["busy_share"] == run["result"]["busy_share"]
    assert run["wall_s"] is not None and run["finished_at"] is not None

    listed = client.get("/api/runs", params={"q": "lifecycle"}).json()
    assert [r["id"] for r in listed["runs"]] == [created["id"]]
    assert listed["total"] == 1
    assert "result" not in listed["runs"][0] and "config" not in listed["runs"][0]

    assert client.delete(f"/api/runs/{created['id']}", headers={"X-Delete-Token": "wrong"}).status_code == 403
    assert client.delete(f"/api/runs/{created['id']}").status_code == 403
    r = client.delete(f"/api/runs/{created['id']}", headers={"X-Delete-Token": created["delete_token"]})
    assert r.status_code == 204
    assert client.get(f"/api/runs/{created['id']}").status_code == 404
    r = client.delete(f"/api/runs/{created['id']}", headers={"X-Delete-Token": created["delete_token"]})
    assert r.status_code == 404


def test_wait_answers_with_the_result_and_reuse_says_so(client: httpx.Client) -> None:
    config = small_config(seed=12)
    r = client.post("/api/runs", params={"wait": "true"}, json={"config": config, "title": "waited"})
    assert r.status_code == 200, r.text
    first = r.json()
    assert first["status"] == "done"
    assert first["result"]["platform"] == "skx"
    assert first["delete_token"] and first["reused_from"] is None

    r = client.post("/api/runs", params={"wait": "true"}, json={"config": config, "title": "again"})
    again = r.json()
    assert again["status"] == "done"
    assert again["reused_from"] == first["id"]
    assert again["id"] != first["id"]
    assert again["result"] == first["result"]
    # The copy is a run of its own, with its own title and token.
    assert client.get(f"/api/runs/{again['id']}").json()["title"] == "again"


def test_stored_result_is_served_byte_for_byte(client: httpx.Client) -> None:
    run = client.post("/api/runs?wait=true", json={"config": small_config(seed=13)}).json()
    body = client.get(f"/api/runs/{run['id']}").content
    stored = client.get(f"/api/runs/{run['id']}").json()["result"]
    assert stored == run["result"]
    assert body.endswith(b"}") and b'"result":{' in body


def test_unlisted_runs_are_found_only_by_link(client: httpx.Client) -> None:
    hidden = submit(client, small_config(seed=14), title="secret-unlisted", unlisted=True)
    assert client.get(f"/api/runs/{hidden['id']}").status_code == 200
    listed = client.get("/api/runs", params={"q": "secret-unlisted"}).json()
    assert listed["runs"] == [] and listed["total"] == 0
    all_ids = {r["id"] for r in client.get("/api/runs", params={"limit": 200}).json()["runs"]}
    assert hidden["id"] not in all_ids


def test_list_filters_sort_and_pages(client: httpx.Client) -> None:
    ids = []
    for i, governor in enumerate(("menu", "teo", "ladder")):
        cfg = small_config(seed=100 + i, governor={"name": governor})
        ids.append(submit(client, cfg, title=f"listing-{governor}")["id"])
    for rid in ids:
        wait_finished(client, rid)

    teo = client.get("/api/runs", params={"q": "listing-", "governor": "teo"}).json()
    assert [r["governor"] for r in teo["runs"]] == ["teo"]
    assert client.get("/api/runs", params={"q": "listing-", "platform": "icx"}).json()["total"] == 0
    assert client.get("/api/runs", params={"q": "listing-", "status": "done"}).json()["total"] == 3

    asc = client.get("/api/runs", params={"q": "listing-", "sort": "busy_share", "order": "asc"}).json()[
        "runs"
    ]
    shares = [r["busy_share"] for r in asc]
    assert shares == sorted(shares)
    desc = client.get("/api/runs", params={"q": "listing-", "sort": "-busy_share"}).json()["runs"]
    assert [r["busy_share"] for r in desc] == sorted(shares, reverse=True)

    newest = client.get("/api/runs", params={"q": "listing-"}).json()["runs"]
    assert [r["id"] for r in newest] == ids[::-1]
    page = client.get("/api/runs", params={"q": "listing-", "limit": 2, "offset": 2}).json()
    assert page["total"] == 3 and page["limit"] == 2 and page["offset"] == 2
    assert [r["id"] for r in page["runs"]] == [ids[0]]


def test_compare_aligns_metrics_with_deltas(client: httpx.Client) -> None:
    a = client.post("/api/runs?wait=true", json={"config": small_config(seed=20)}).json()
    b = client.post(
        "/api/runs?wait=true", json={"config": small_config(seed=20, ipi_wakeup={"mechanism": "ipi"})}
    ).json()
    cmp = client.get("/api/compare", params={"ids": f"{a['id']},{b['id']}"}).json()
    assert cmp["complete"] is True
    assert [r["id"] for r in cmp["runs"]] == [a["id"], b["id"]]
    metrics = {m["key"]: m for m in cmp["metrics"]}
    for key in (
        "residency.C6",
        "busy_share",
        "latency.wake.mean_ns",
        "latency.intr.p99_ns",
        "ipi.same_socket.mean_cycles",
        "ipi.ipis_sent",
        "ipi.ipis_avoided",
        "energy.joules",
    ):
        assert key in metrics, key
    sent = metrics["ipi.ipis_sent"]
    assert sent["values"] == [
        r["result"]["ipi"]["ipis_sent"] + r["result"]["ipi"]["sched_ipis_sent"] for r in (a, b)
    ]
    v0, v1 = sent["values"]
    assert sent["delta_unit"] == "%"
    if v0:
        assert sent["deltas"][1] == pytest.approx((v1 - v0) / v0 * 100)
    # Shares change in percentage points: 0.25 -> 0.5 is +25 pp, not +100%.
    busy = metrics["busy_share"]
    assert busy["delta_unit"] == "pp"
    # The percent change of every metric stays, for the scripts that read it.
    b0, b1 = busy["values"]
    assert busy["deltas_pct"][1] == pytest.approx((b1 - b0) / abs(b0) * 100)
    assert busy["deltas"][1] == pytest.approx((busy["values"][1] - busy["values"][0]) * 100)
    assert client.get("/api/compare", params={"ids": f"{a['id']},nope"}).status_code == 404
    assert client.get("/api/compare", params={"ids": a["id"]}).status_code == 422


def test_platforms_builtin_and_custom(client: httpx.Client) -> None:
    names = [p["name"] for p in client.get("/api/platforms").json()["platforms"]]
    assert {"skx", "icx", "wsm"} <= set(names)
    skx = client.get("/api/platforms/skx").json()
    assert skx["custom"] is False and skx["table"]["states"][0]["name"] == "POLL"
    assert client.get("/api/platforms/nope").status_code == 404

    body = {
        "name": "mytable",
        "based_on": "skx",
        "states": [
            {"name": "C1", "flags": [], "exit_latency_us": 2, "target_residency_us": 2},
            {
                "name": "C6",
                "flags": ["CPUIDLE_FLAG_TLB_FLUSHED"],
                "exit_latency_us": 100,
                "target_residency_us": 400,
            },
        ],
    }
    r = client.post("/api/platforms", json=body)
    assert r.status_code == 201, r.text
    assert r.json()["custom"] is True and r.json()["based_on"] == "skx"
    assert [s["name"] for s in r.json()["table"]["states"]] == ["POLL", "C1", "C6"]
    assert client.post("/api/platforms", json=body).status_code == 409
    assert client.get("/api/platforms/mytable").status_code == 200
    # An unknown name lists at most 10 names, built-in and custom alike, the closest first, and a count.
    r = client.post("/api/runs", json={"config": {"platform": "mytabel"}})
    assert r.status_code == 422
    error = r.json()["detail"][0]
    assert error["loc"] == ["body", "config", "platform"]
    listed = error["msg"].split("the closest: ", 1)[1].split(" (", 1)[0].split(", ")
    assert listed[0] == "mytable" and len(listed) == 10
    # The server is shared by the session: count the custom tables it holds now.
    custom = sum(p["custom"] for p in client.get("/api/platforms").json()["platforms"])
    assert f"{len(BUILTIN_PLATFORMS)} built-in tables and {custom} custom" in error["msg"]

    run = client.post("/api/runs?wait=true", json={"config": small_config(platform="mytable")}).json()
    assert run["status"] == "done", run["error"]
    stored = client.get(f"/api/runs/{run['id']}").json()
    assert stored["platform"] == "mytable"
    assert stored["config"]["platform_table"]["states"][2]["exit_latency_us"] == 100
    # The slice's page, and the run's stored page, from the live server.
    page = client.get("/platforms/mytable")
    assert page.status_code == 200 and "mytable" in page.text
    assert client.get(f"/runs/{run['id']}").status_code == 200


def test_twenty_concurrent_submissions_all_finish(live_server: str) -> None:
    async def go() -> list[dict[str, object]]:
        async with httpx.AsyncClient(base_url=live_server, timeout=120.0) as ac:
            answers = await asyncio.gather(
                *(
                    ac.post("/api/runs", json={"config": small_config(seed=1000 + i), "title": f"burst-{i}"})
                    for i in range(20)
                )
            )
            return [a.json() for a in answers if a.status_code == 202]

    created = asyncio.run(go())
    assert len(created) == 20
    assert len({c["id"] for c in created}) == 20
    with httpx.Client(base_url=live_server, timeout=120.0) as client:
        runs = [wait_finished(client, str(c["id"])) for c in created]
        assert [r["status"] for r in runs] == ["done"] * 20
        assert client.get("/api/runs", params={"q": "burst-"}).json()["total"] == 20


def test_deleting_the_original_keeps_its_copies(client: httpx.Client) -> None:
    config = small_config(seed=31)
    first = client.post("/api/runs?wait=true", json={"config": config}).json()
    copy = client.post("/api/runs?wait=true", json={"config": config}).json()
    assert copy["reused_from"] == first["id"]
    r = client.delete(f"/api/runs/{first['id']}", headers={"X-Delete-Token": first["delete_token"]})
    assert r.status_code == 204
    kept = client.get(f"/api/runs/{copy['id']}").json()
    # A finished run never changes: it still names the run it copied, as plain text.
    assert kept["status"] == "done" and kept["reused_from"] == first["id"]
    assert kept["result"] == first["result"]


def test_list_answers_follow_every_change(client: httpx.Client) -> None:
    """The list is served from cached bytes: each write (submit, progress, finish, delete) must
    still show in the next answer of the very same query."""
    query = {"q": "cache-follow", "limit": 5}
    assert client.get("/api/runs", params=query).json()["total"] == 0
    created = submit(client, small_config(seed=31), title="cache-follow")
    first = client.get("/api/runs", params=query).json()
    assert [r["id"] for r in first["runs"]] == [created["id"]]
    wait_finished(client, created["id"])
    listed = client.get("/api/runs", params=query).json()["runs"][0]
    assert listed["status"] == "done" and listed["wake_latency_p99_ns"] is not None
    r = client.delete(f"/api/runs/{created['id']}", headers={"X-Delete-Token": created["delete_token"]})
    assert r.status_code == 204
    assert client.get("/api/runs", params=query).json()["total"] == 0


def test_one_ipi_count_everywhere(client: httpx.Client) -> None:
    """IPIs sent and avoided count smp_call_function_single() calls and scheduler wake-ups together,
    in the list, the run and compare alike."""
    a = wait_finished(client, submit(client, small_config(seed=41), title="ipi-count")["id"])
    ipi = a["result"]["ipi"]
    assert ipi["sched_ipis_sent"] + ipi["sched_ipis_avoided"] > 0  # both sources present
    listed = client.get("/api/runs", params={"q": "ipi-count"}).json()["runs"][0]
    assert listed["ipis_sent"] == ipi["ipis_sent"] + ipi["sched_ipis_sent"]
    assert listed["ipis_avoided"] == ipi["ipis_avoided"] + ipi["sched_ipis_avoided"]
    b = wait_finished(client, submit(client, small_config(seed=42))["id"])
    metrics = {
        m["key"]: m
        for m in client.get("/api/compare", params={"ids": f"{a['id']},{b['id']}"}).json()["metrics"]
    }
    assert metrics["ipi.ipis_sent"]["values"][0] == listed["ipis_sent"]
    assert metrics["ipi.calls.ipis_sent"]["values"][0] == ipi["ipis_sent"]
    assert metrics["ipi.sched_ipis_sent"]["values"][0] == ipi["sched_ipis_sent"]

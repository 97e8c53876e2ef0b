"""Bad input: 422 naming the field, 404 for unknown ids, 403, 413, one error shape everywhere."""

from __future__ import annotations

from typing import Any

import pytest

from tests.app.factories import small_config


def assert_error_shape(body: Any) -> None:
    assert set(body) == {"detail"}
    if isinstance(body["detail"], list):
        for item in body["detail"]:
            assert set(item) == {"loc", "msg", "type"}
            assert isinstance(item["loc"], list) and isinstance(item["msg"], str) and item["msg"]
    else:
        assert isinstance(body["detail"], str) and body["detail"]


def locs(body: Any) -> list[list[Any]]:
    return [e["loc"] for e in body["detail"]]


@pytest.mark.parametrize(
    ("config", "loc"),
    [
        ({"platform": "nope"}, ["body", "config", "platform"]),
        ({"governor": {"name": "schedutil"}}, ["body", "config", "governor", "name"]),
        ({"states": {"disabled": ["POLL", "C1", "C1E", "C6"]}}, ["body", "config", "states", "disabled"]),
        ({"states": {"disabled": ["C9"]}}, ["body", "config", "states", "disabled"]),
        ({"duration_ms": 0}, ["body", "config", "duration_ms"]),
        ({"duration_ms": 1e9}, ["body", "config", "duration_ms"]),
        ({"seed": -1}, ["body", "config", "seed"]),
        ({"topology": {"sockets": 0}}, ["body", "config", "topology", "sockets"]),
        ({"topology": {"sockets": 8, "cores_per_socket": 256}}, ["body", "config", "topology"]),
        (
            {"duration_ms": 60000, "topology": {"sockets": 8, "cores_per_socket": 64, "threads_per_core": 1}},
            ["body", "config", "duration_ms"],
        ),
        ({"wakeups": {"ipis": {"rate_hz": -5}}}, ["body", "config", "wakeups", "ipis", "rate_hz"]),
        ({"states": {"irq_enable": {"C6": True}}}, ["body", "config", "states", "irq_enable", "C6"]),
        ({"bogus": 1}, ["body", "config", "bogus"]),
    ],
)
def test_invalid_configs_are_422_naming_the_field(
    app_client: Any, config: dict[str, Any], loc: list[Any]
) -> None:
    r = app_client.post("/api/runs", json={"config": config})
    assert r.status_code == 422, r.text
    body = r.json()
    assert_error_shape(body)
    assert loc in locs(body), body


def test_bad_bodies_are_422(app_client: Any) -> None:
    r = app_client.post("/api/runs", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and locs(r.json()) == [["body"]]
    r = app_client.post("/api/runs", json={"config": small_config(), "title": "x" * 201})
    assert r.status_code == 422 and ["body", "title"] in locs(r.json())
    r = app_client.post("/api/runs", json={"config": small_config(), "colour": "red"})
    assert r.status_code == 422 and ["body", "colour"] in locs(r.json())
    r = app_client.post("/api/runs", json={"config": []})
    assert r.status_code == 422 and ["body", "config"] in locs(r.json())
    r = app_client.get("/api/runs", params={"sort": "nope"})
    assert r.status_code == 422 and ["query", "sort"] in locs(r.json())
    r = app_client.get("/api/runs", params={"limit": 0})
    assert r.status_code == 422 and ["query", "limit"] in locs(r.json())
    for resp in (r,):
        assert_error_shape(resp.json())


def test_custom_platform_validation_names_the_field(app_client: Any) -> None:
    def post(**body: Any) -> Any:
        base = {
            "name": "t1",
            "based_on": "skx",
            "states": [{"name": "C1", "exit_latency_us": 2, "target_residency_us": 2}],
        }
        return app_client.post("/api/platforms", json={**base, **body})

    r = post(based_on="nope")
    assert r.status_code == 422 and locs(r.json()) == [["body", "based_on"]]
    r = post(name="Bad Name!")
    assert r.status_code == 422 and ["body", "name"] in locs(r.json())
    r = post(states=[{"name": "C1", "exit_latency_us": -1, "target_residency_us": 2}])
    assert r.status_code == 422 and ["body", "states", 0, "exit_latency_us"] in locs(r.json())
    decreasing = [
        {"name": "C1", "exit_latency_us": 10, "target_residency_us": 20},
        {"name": "C6", "exit_latency_us": 5, "target_residency_us": 600},
    ]
    r = post(states=decreasing)
    assert r.status_code == 422 and locs(r.json()) == [["body", "states", 1, "exit_latency_us"]], r.json()
    r = post(
        states=[
            {"name": "C1", "flags": ["CPUIDLE_FLAG_BOGUS"], "exit_latency_us": 1, "target_residency_us": 1}
        ]
    )
    assert r.status_code == 422 and locs(r.json()) == [["body", "states", 0, "flags"]]
    r = post(name="skx")
    assert r.status_code == 409
    for resp in (r,):
        assert_error_shape(resp.json())


def test_unknown_ids_are_404_never_422(app_client: Any) -> None:
    for path in (
        "/api/runs/doesnotexist",
        "/api/runs/" + "x" * 300,
        "/api/platforms/nope",
        "/api/nothing-here",
    ):
        r = app_client.get(path)
        assert r.status_code == 404, path
        assert_error_shape(r.json())
    r = app_client.delete("/api/runs/doesnotexist", headers={"X-Delete-Token": "t"})
    assert r.status_code == 404
    assert_error_shape(r.json())


def test_wrong_delete_token_is_403(app_client: Any) -> None:
    created = app_client.post("/api/runs", json={"config": small_config()}).json()
    r = app_client.delete(
        f"/api/runs/{created['id']}", headers={"X-Delete-Token": created["delete_token"] + "x"}
    )
    assert r.status_code == 403
    assert_error_shape(r.json())
    assert app_client.get(f"/api/runs/{created['id']}").status_code == 200


def test_bodies_over_the_limit_are_413(app_client: Any) -> None:
    limit = app_client.app.state.settings.max_body_bytes
    big = {"config": small_config(), "title": "x" * (limit + 10)}
    r = app_client.post("/api/runs", json=big)
    assert r.status_code == 413
    assert_error_shape(r.json())

    def chunks() -> Any:  # no Content-Length: counted as it streams
        for _ in range(limit // 1024 + 2):
            yield b" " * 1024

    r = app_client.post("/api/runs", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert_error_shape(r.json())


def test_submitted_run_is_committed_queued(app_client: Any) -> None:
    created = app_client.post("/api/runs", json={"config": small_config(), "title": "queued-one"}).json()
    run = app_client.get(f"/api/runs/{created['id']}").json()
    assert run["status"] == "queued" and run["result"] is None and run["progress"] == 0
    assert run["config"]["duration_ms"] == 30


def test_openapi_shows_the_real_models(app_client: Any) -> None:
    schema = app_client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    assert "SimConfig" in components and "RunCreate" in components
    assert components["RunCreate"]["properties"]["config"]["$ref"].endswith("/SimConfig")
    body = schema["paths"]["/api/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["$ref"].endswith("/RunCreate")
    assert any(k.startswith("SimResult") for k in components)
    assert app_client.get("/docs").status_code == 200

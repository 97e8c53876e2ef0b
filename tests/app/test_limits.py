"""Small requests cannot build huge answers, configs that would fail in the worker are 422 at
submission naming the field, and faults are 4xx/503 in the one error shape, never a bare 500."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from engine import load_platform
from tests.app.factories import small_config

SKX = load_platform("skx").model_dump(mode="json")


def _table(change: Any) -> dict[str, Any]:
    table = copy.deepcopy(SKX)
    change(table)
    return table


def _many_states(table: dict[str, Any]) -> None:
    deepest = table["states"][-1]
    table["states"] += [{**deepest, "name": f"X{i}"} for i in range(60)]  # 1000 states were accepted once


@pytest.mark.parametrize(
    ("config", "loc"),
    [
        ({"duration_ms": 1e-9}, ["duration_ms"]),
        ({"states": {"latency_limit_us": 1e308}}, ["states", "latency_limit_us"]),
        ({"governor": {"name": "menu", "fixed_state": "C1"}}, ["governor", "fixed_state"]),
        ({"costs": {"tsc_mhz": 1e-300}}, ["costs", "tsc_mhz"]),
        ({"wakeups": {"timers": [{"period_us": 1e-6}]}, "duration_ms": 0.001}, ["wakeups", "timers", 0]),
        ({"platform": "x" * 1000}, ["platform"]),
        ({"platform_table": _table(_many_states)}, ["platform_table", "states"]),
        (
            {"platform_table": _table(lambda t: t["states"][2]["entry_cost_ns"].update(value=1e300))},
            ["platform_table", "states", 2, "entry_cost_ns"],
        ),
        (
            {"platform_table": _table(lambda t: t["costs"]["line_same_socket_ns"].update(value=-5))},
            ["platform_table", "costs", "line_same_socket_ns"],
        ),
        (
            {"platform_table": _table(lambda t: t["costs"]["exit_housekeeping_ns"].update(value=-5000))},
            ["platform_table", "costs", "exit_housekeeping_ns"],
        ),
        (
            {"platform_table": _table(lambda t: t["states"][1]["power_watts"].update(value=-1e300))},
            ["platform_table", "states", 1, "power_watts"],
        ),
        (
            {"platform_table": _table(lambda t: t["costs"]["tsc_mhz"].update(value=1e-300))},
            ["platform_table", "costs", "tsc_mhz"],
        ),
    ],
)
def test_configs_that_would_fail_or_explode_are_422_at_submission(
    app_client: Any, config: dict[str, Any], loc: list[Any]
) -> None:
    r = app_client.post("/api/runs", json={"config": {**small_config(), **config}})
    assert r.status_code == 422, r.text
    locs = [e["loc"] for e in r.json()["detail"]]
    assert any(found[2 : 2 + len(loc)] == loc for found in locs), locs
    assert all(found[:2] == ["body", "config"] for found in locs)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-1e400", "1e400"])
def test_custom_platform_parameters_must_be_finite_numbers(app_client: Any, value: str) -> None:
    state = '{"name": "C1", "exit_latency_us": 2, "target_residency_us": 2, "power_watts": {"value": VALUE}}'
    body = '{"name": "bad-power", "based_on": "skx", "states": [STATE]}'.replace("STATE", state)
    body = body.replace("VALUE", value + ', "kind": "estimate"')
    r = app_client.post("/api/platforms", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"][:3] == ["body", "states", 0]


def test_huge_numbers_in_queries_are_422(app_client: Any) -> None:
    assert app_client.get("/api/runs", params={"offset": 2**63}).status_code == 422
    r = app_client.get("/runs", params={"page": 10**30}, headers={"Accept": "application/json"})
    assert r.status_code == 422 and set(r.json()) == {"detail"}
    assert app_client.get("/runs", params={"status": "nope"}).status_code == 422  # as the API does


def test_database_faults_are_503_with_the_reason(app_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.runs.store as store

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("SELECT ...", {}, Exception("database is locked"))

    monkeypatch.setattr(store, "list_runs", locked)
    r = app_client.get("/api/runs")
    assert r.status_code == 503 and r.json() == {"detail": "database unavailable: database is locked"}


def test_csv_is_streamed(app_client: Any) -> None:
    from tests.app.factories import done_run

    run_id, _ = done_run(
        app_client.app, {**small_config(), "topology": {"sockets": 2, "cores_per_socket": 8}}
    )
    r = app_client.get(f"/runs/{run_id}.csv")
    assert r.status_code == 200 and "content-length" not in r.headers  # chunked: never built whole
    assert r.text.count("per_cpu_residency,cpu15,") >= 1


def test_compare_treats_repeated_ids_alike_in_page_and_api(app_client: Any) -> None:
    from tests.app.factories import done_run

    run_id, _ = done_run(app_client.app)
    api = app_client.get("/api/compare", params={"ids": f"{run_id},{run_id}"})
    page = app_client.get(f"/compare?ids={run_id}&ids={run_id}", headers={"Accept": "application/json"})
    assert api.status_code == page.status_code == 422
    assert api.json() == page.json()


def test_openapi_documents_every_status_a_route_answers(app_client: Any) -> None:
    paths = app_client.get("/openapi.json").json()["paths"]
    assert "404" in paths["/api/runs/{run_id}/charts/{name}"]["get"]["responses"]
    assert "404" in paths["/api/runs/{run_id}/charts"]["get"]["responses"]
    assert {"400", "409", "422"} <= set(paths["/api/platforms"]["post"]["responses"])
    assert "415" in paths["/api/runs"]["post"]["responses"]
    assert "304" in paths["/api/runs/{run_id}"]["get"]["responses"]
    assert "200" in paths["/api/scenarios/{name}/run"]["post"]["responses"]
    for path, ops in paths.items():
        for method, op in ops.items():
            assert {"403", "422", "503"} <= set(op["responses"]), (method, path)


@pytest.mark.parametrize("name", ["skx", "icx", "wsm"])
def test_a_built_in_table_given_inline_is_accepted(app_client: Any, name: str) -> None:
    table = app_client.get(f"/api/platforms/{name}").json()["table"]
    r = app_client.post("/api/runs", json={"config": {**small_config(), "platform_table": table}})
    assert r.status_code == 202, r.text

"""Hostile inputs refused before any query, on both databases: ids outside their alphabet and
length (404), U+0000 in a query parameter or a JSON string (422 naming the field), paging past
what PostgreSQL binds, and echoes cut short."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from tests.app.factories import small_config, submit


@pytest.fixture
def statements(app_client: Any) -> Iterator[list[str]]:
    """Every statement the app's engine runs (with its parameters), while the test runs."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append(f"{statement} {parameters!r}")

    engine = app_client.app.state.db_engine
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


BAD_IDS = ["x" * 10_000, "a b", "abc$def", "run\x00id"]
ID_PATHS = [
    "/api/runs/{}",
    "/api/runs/{}/charts",
    "/runs/{}",
    "/runs/{}.json",
    "/api/sweeps/{}",
    "/sweeps/{}",
    "/api/measurements/{}",
    "/measurements/{}",
    "/api/platforms/{}",
    "/platforms/{}",
]


@pytest.mark.parametrize("path", ID_PATHS)
def test_impossible_ids_are_404_without_a_query(app_client: Any, statements: list[str], path: str) -> None:
    for bad in BAD_IDS:
        r = app_client.get(path.format(bad.replace("\x00", "%00").replace(" ", "%20").replace("$", "%24")))
        assert r.status_code == 404, (bad[:20], r.text[:200])
        assert len(r.content) < 300, "the id is echoed in full"
        assert not any(bad in s for s in statements), "the id reached the database"


def test_delete_with_an_impossible_id_is_404(app_client: Any) -> None:
    r = app_client.delete("/api/runs/" + "y" * 500, headers={"X-Delete-Token": "t"})
    assert r.status_code == 404 and "...(" in r.json()["detail"]


def test_compare_ids_are_checked_and_bounded(app_client: Any, statements: list[str]) -> None:
    run = submit(app_client)["id"]
    r = app_client.get("/api/compare", params={"ids": f"{run},bad$id"})
    assert r.status_code == 404 and not any("bad$id" in s for s in statements)
    r = app_client.get("/api/compare", params={"ids": f"{run},bad\x00id"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "ids"]
    r = app_client.get("/api/compare", params={"ids": ",".join([run] * 2000)})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["query", "ids"]


@pytest.mark.parametrize(
    ("path", "param"),
    [
        ("/api/runs", "q"),
        ("/api/runs", "platform"),
        ("/api/runs", "sweep"),
        ("/api/runs", "sort"),
        ("/runs", "q"),
    ],
)
def test_nul_in_a_query_parameter_is_422_naming_it(
    app_client: Any, statements: list[str], path: str, param: str
) -> None:
    submit(app_client, title="listed")
    before = len(statements)
    r = app_client.get(path, params={param: "a\x00b"}, headers={"Accept": "application/json"})
    assert r.status_code == 422, r.text[:300]
    assert r.json()["detail"][0]["loc"] == ["query", param]
    assert "U+0000" in r.json()["detail"][0]["msg"]
    assert not any("a\x00b" in s for s in statements[before:])


def test_nul_in_a_json_string_is_422_naming_the_field(app_client: Any) -> None:
    r = app_client.post("/api/runs", json={"config": small_config(), "title": "a\x00b"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"] == ["body", "title"]
    states = [{"name": "C1\x00", "exit_latency_us": 2, "target_residency_us": 2}]
    r = app_client.post("/api/platforms", json={"name": "nul", "states": states})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "states", 0, "name"]
    # An escaped backslash before `u0000` is text, not a NUL.
    r = app_client.post(
        "/api/runs",
        content=b'{"config": {"duration_ms": 30}, "title": "a\\\\u0000b"}',
        headers={"Content-Type": "application/json"},
    )
    assert r.status_code == 202, r.text


def test_nul_in_a_form_field_is_422(app_client: Any) -> None:
    r = app_client.post("/api/measurements", files={"turbostat.txt": b"x"}, data={"title": "a\x00b"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "title"]


def test_paging_bounds_are_enforced_and_declared(app_client: Any) -> None:
    ok = app_client.get("/api/runs", params={"offset": 2**31 - 1})
    assert ok.status_code == 200 and ok.json()["runs"] == []
    assert app_client.get("/api/runs", params={"offset": 2**31}).status_code == 422
    assert app_client.get("/api/sweeps", params={"offset": 2**31}).status_code == 422
    assert app_client.get("/runs", params={"page": 10**6 + 1}).status_code == 422
    assert app_client.get("/runs", params={"page": 10**6}).status_code == 200
    schema = app_client.get("/openapi.json").json()
    for path in ("/api/runs", "/api/sweeps"):
        (offset,) = [p for p in schema["paths"][path]["get"]["parameters"] if p["name"] == "offset"]
        assert offset["schema"]["maximum"] == 2**31 - 1
    (ids,) = [p for p in schema["paths"]["/api/compare"]["get"]["parameters"] if p["name"] == "ids"]
    assert ids["schema"]["maxLength"] == 200

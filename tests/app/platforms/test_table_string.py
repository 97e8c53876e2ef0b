"""`intel_idle.table=` in the API: a custom platform given as a string on a base table (a 422
quoting the kernel where the kernel would ignore the string), and every platform answer carrying
its table as such a string or why none exists."""

from __future__ import annotations

from typing import Any

import pytest


def test_a_custom_platform_from_a_string_on_a_base(app_client: Any) -> None:
    body = {"name": "icx-c6-700", "base": "icx", "intel_idle_table": "C6:170:700"}
    r = app_client.post("/api/platforms", json=body)
    assert r.status_code == 201, r.text
    answer = r.json()
    assert answer["based_on"] == "icx"
    c6 = next(s for s in answer["table"]["states"] if s["name"] == "C6")
    assert (c6["exit_latency_us"], c6["target_residency_us"]) == (170, 700)
    assert (
        answer["intel_idle_table"] == "C1:1:1,C1E:4:4,C6:170:700" and answer["intel_idle_table_error"] is None
    )
    assert (
        app_client.get("/api/platforms/icx-c6-700").json()["intel_idle_table"] == answer["intel_idle_table"]
    )
    run = app_client.post("/api/runs", json={"config": {"platform": "icx-c6-700", "duration_ms": 5}})
    assert run.status_code == 202, run.text


@pytest.mark.parametrize(
    ("string", "kernel"),
    [
        ("C1E:4:1", "intel_idle: C-state 'C1E' validation failed"),  # residency below latency
        ("C1E:1:1", "intel_idle: C-state 'C1E' validation failed"),  # not above C1's 1/1
        ("C1:1", "intel_idle: Failed to adjust C-states with data from 'intel_idle.table'"),
        ("C1:1:1," * 40, "intel_idle.table: string doesn't fit in 255 chars."),
    ],
)
def test_a_string_the_kernel_ignores_is_a_422_quoting_it(app_client: Any, string: str, kernel: str) -> None:
    r = app_client.post(
        "/api/platforms", json={"name": "bad-string", "base": "icx", "intel_idle_table": string}
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["loc"] == ["body", "intel_idle_table"] and kernel in error["msg"]
    assert app_client.get("/api/platforms/bad-string").status_code == 404


def test_a_string_needs_an_intel_idle_base_and_not_states_too(app_client: Any) -> None:
    r = app_client.post("/api/platforms", json={"name": "x1", "intel_idle_table": "C6:170:700"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "base"]
    r = app_client.post(
        "/api/platforms", json={"name": "x2", "base": "acpi_idle", "intel_idle_table": "C2:1:2"}
    )
    assert r.status_code == 422 and "not an intel_idle table" in r.json()["detail"][0]["msg"]
    states = [{"name": "C1", "flags": [], "exit_latency_us": 2, "target_residency_us": 2}]
    r = app_client.post(
        "/api/platforms", json={"name": "x3", "states": states, "base": "icx", "intel_idle_table": "C1:1:1"}
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body"]


def test_every_platform_answer_carries_its_string_or_why_not(app_client: Any) -> None:
    platforms = {p["name"]: p for p in app_client.get("/api/platforms").json()["platforms"]}
    assert platforms["icx"]["intel_idle_table"] == "C1:1:1,C1E:4:4,C6:170:600"
    assert platforms["skl"]["intel_idle_table"] is None and "C8" in platforms["skl"]["intel_idle_table_error"]
    assert "not intel_idle" in platforms["acpi_idle"]["intel_idle_table_error"]
    for p in platforms.values():
        assert (p["intel_idle_table"] is None) != (p["intel_idle_table_error"] is None), p["name"]
    page = app_client.get("/platforms/skl")
    assert "No <code>intel_idle.table=</code> string" in page.text and "C8 is 200/800 us" in page.text

"""Imported and custom data validated (issue 23, hole 7; and hole 2's bounds on custom tables):
turbostat cells outside what their column can hold are refused naming the line and column; a
custom state both IRQ_ENABLE and IBRS is refused as a run override is, by the engine, so a
library user gets the rule too; state names and descs are bounded as the kernel bounds them; the
database holds at most `max_custom_platforms` custom platforms (409, the reason said)."""

from __future__ import annotations

from typing import Any

import pytest

from app.measurements.turbostat import TurbostatError, parse_turbostat
from engine import SimConfig, load_platform
from engine.table_rules import CPUIDLE_DESC_LEN, table_errors
from tests.app.measurements.test_turbostat import COLUMNS, OUTPUT, PREAMBLE

# The first data row of OUTPUT (the first interval's summary row) and its line number.
SUMMARY_LINE = PREAMBLE.count("\n") + 2


def with_cell(column: str, value: str) -> str:
    """OUTPUT with one cell of the first summary row replaced."""
    lines = OUTPUT.split("\n")
    cells = lines[SUMMARY_LINE - 1].split("\t")
    cells[COLUMNS.index(column)] = value
    lines[SUMMARY_LINE - 1] = "\t".join(cells)
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("Busy%", "-50", "a share of the interval"),
        ("CPU%c6", "1e308", "a share of the interval"),
        ("IRQ", "-50", "a count"),
        ("IRQ", "1e308", "a count"),
        ("Bzy_MHz", "1e308", "a frequency"),
        ("PkgWatt", "-50", "a power"),
        ("CoreTmp", "-50", "a temperature"),
        ("C6", "NaN", "expected a number"),
        ("Busy%", "inf", "expected a number"),
    ],
)
def test_turbostat_cells_out_of_their_columns_range_are_refused(column: str, value: str, words: str) -> None:
    with pytest.raises(TurbostatError) as e:
        parse_turbostat(with_cell(column, value).encode())
    assert (e.value.line, e.value.column, e.value.column_name) == (
        SUMMARY_LINE, COLUMNS.index(column) + 1, column,
    )  # fmt: skip
    assert words in e.value.reason


def test_turbostats_own_missing_spellings_stay_missing() -> None:
    parsed = parse_turbostat(with_cell("Busy%", "nan").encode())
    assert parsed.intervals[0].summary is not None
    assert parsed.intervals[0].summary.values["Busy%"] is None


@pytest.mark.parametrize("app_client", ["sqlite"], indirect=True)
def test_the_import_answers_422_naming_line_and_column(app_client: Any) -> None:
    r = app_client.post(
        "/api/measurements", content=with_cell("IRQ", "-50"), headers={"Content-Type": "text/plain"}
    )
    assert r.status_code == 422, r.text
    (error,) = r.json()["detail"]
    assert error["loc"][-4:] == ["line", SUMMARY_LINE, "column", COLUMNS.index("IRQ") + 1]
    assert "(IRQ)" in error["msg"] and "a count" in error["msg"]


IBRS_C6 = {
    "name": "C6",
    "flags": ["CPUIDLE_FLAG_IRQ_ENABLE", "CPUIDLE_FLAG_IBRS"],
    "exit_latency_us": 100,
    "target_residency_us": 400,
}


def platform_body(platform: str = "mine", **c6: Any) -> dict[str, Any]:
    return {
        "name": platform,
        "based_on": "skx",
        "states": [
            {"name": "C1", "flags": [], "exit_latency_us": 2, "target_residency_us": 2},
            {**IBRS_C6, "flags": ["CPUIDLE_FLAG_TLB_FLUSHED"], **c6},
        ],
    }


def test_the_engine_refuses_a_state_both_irq_enable_and_ibrs() -> None:
    skx = load_platform("skx")
    states = [s.model_dump() for s in skx.states]
    states[-1]["flags"] = ["CPUIDLE_FLAG_IRQ_ENABLE", "CPUIDLE_FLAG_IBRS"]
    table = skx.model_validate({**skx.model_dump(), "states": states})
    (error,) = table_errors(table, ["platform_table"])
    assert error["loc"] == ["platform_table", "states", len(states) - 1, "flags"]
    assert "IRQ_ENABLE" in str(error["msg"]) and "IBRS" in str(error["msg"])
    with pytest.raises(ValueError, match=r"platform_table\.states\.\d+\.flags: cannot enter C6"):
        SimConfig.model_validate({"platform": "mine", "platform_table": table.model_dump()})


def test_the_api_refuses_it_and_bounds_names_and_descs(app_client: Any) -> None:
    r = app_client.post("/api/platforms", json=platform_body(flags=IBRS_C6["flags"]))
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "states", 1, "flags"]
    r = app_client.post("/api/platforms", json=platform_body(desc="x" * 100_000))
    assert r.status_code == 422 and len(r.content) < 400
    (error,) = r.json()["detail"]
    assert error["loc"] == ["body", "states", 1, "desc"] and "at most 32 characters" in error["msg"]
    r = app_client.post("/api/platforms", json=platform_body("a17", name="C6-seventeen-long"))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:4] == ["body", "states", 1, "name"]
    r = app_client.post("/api/platforms", json=platform_body(desc="y" * CPUIDLE_DESC_LEN))
    assert r.status_code == 201, r.text
    assert app_client.get("/api/platforms/mine").json()["table"]["states"][-1]["desc"] == "y" * 32


def test_custom_platforms_are_bounded_by_the_setting(app_client: Any) -> None:
    app_client.app.state.settings.max_custom_platforms = 2
    for name in ("one", "two"):
        assert app_client.post("/api/platforms", json=platform_body(name)).status_code == 201
    r = app_client.post("/api/platforms", json=platform_body("three"))
    assert r.status_code == 409
    detail = r.json()["detail"]
    assert "2 custom platforms are stored" in detail and "MAX_CUSTOM_PLATFORMS" in detail
    assert app_client.get("/api/platforms/three").status_code == 404
    body = {"name": "four", "base": "skx", "intel_idle_table": "C6:100:400"}
    r = app_client.post("/api/platforms", json=body)
    assert r.status_code == 409
    assert [p["name"] for p in app_client.get("/api/platforms").json()["platforms"] if p["custom"]] == [
        "one", "two",
    ]  # fmt: skip

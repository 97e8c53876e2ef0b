"""Built-in scenarios and the validation table, through the app.

In-process (`app_client`: a migrated temporary SQLite database, no workers, so submitted runs
stay queued; `worker_client`: the same with one worker, for the validation runs), plus one
end-to-end run of a scenario through the real server's workers (`live_server`).
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from engine import SimConfig, engine_version
from engine.scenarios import SCENARIOS
from tests.app.factories import wait_finished
from tests.conftest import sqlite_url

NAMES = {
    "irq-enable-c1-icx",
    "irq-enable-c1-skx",
    "mwait-ipi-westmere",
    "rfc-review-read-before-cmpxchg",
    "rfc-review-irqs-off",
    "mainline-tif-polling",
    "pc6-disabled-skx",
    "smt-sibling",
    "menu-779b1a1cb13a-skx",
    "menu-db86f55bf81a-spr",
    "menu-80606f4eb8d7",
    "teo-4b20b07ce72f-psci",
}
ROW_FIELDS = {"source", "metric", "unit", "published", "simulated", "tolerance", "ok", "kind"}


class _Page(HTMLParser):
    """Collects the rows (`<tr data-...>`), the links inside them, and element ids of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self.ids: set[str] = set()
        self.chart_blocks = 0
        self._row: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "tr" and any(k.startswith("data-") for k in a):
            self._row = {"attrs": a, "links": [], "text": ""}
            self.rows.append(self._row)
        elif tag == "a" and self._row is not None:
            self._row["links"].append(a.get("href"))
        elif tag == "script" and a.get("type") == "application/json" and "data-chart" in a:
            self.chart_blocks += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._row is not None:
            self._row["text"] += data


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


# --- the list and the run endpoint ------------------------------------------------------------------


def test_list_scenarios(app_client: Any) -> None:
    r = app_client.get("/api/scenarios")
    assert r.status_code == 200
    items = r.json()["scenarios"]
    assert {s["name"] for s in items} == NAMES
    for s in items:
        assert s["title"] and s["url"].endswith(f"/scenarios/{s['name']}")
        # 2-3 sentences: what it is, what the source reported, what the simulation shows.
        assert 2 <= s["description"].count(". ") + 1 <= 4, s["description"]
        assert [r["name"] for r in s["roles"]] == SCENARIOS[s["name"]].role_names()
        assert all(r["label"] for r in s["roles"])


def test_unknown_scenario_is_404(app_client: Any) -> None:
    r = app_client.post("/api/scenarios/no-such-thing/run")
    assert r.status_code == 404
    assert "no-such-thing" in r.json()["detail"]
    assert app_client.get("/api/scenarios/no-such-thing").status_code == 404
    page = app_client.get("/scenarios/no-such-thing", headers={"accept": "text/html"})
    assert page.status_code == 404


def test_run_creates_one_run_per_role_through_the_job_path(app_client: Any) -> None:
    sc = SCENARIOS["rfc-review-read-before-cmpxchg"]
    r = app_client.post(f"/api/scenarios/{sc.name}/run")
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["scenario"] == sc.name
    runs = body["runs"]
    assert [x["role"] for x in runs] == sc.role_names()
    ids = [x["id"] for x in runs]
    assert len(set(ids)) == len(ids)
    for x in runs:
        assert x["url"].endswith(f"/runs/{x['id']}")
        assert x["status"] == "queued"  # no workers in this client
    assert body["comparison_url"].endswith("/compare?ids=" + ",".join(ids))

    # The runs are ordinary runs: listed, titled by scenario and role, with the role's config.
    listed = app_client.get("/api/runs", params={"q": sc.name, "limit": 200}).json()
    assert set(ids) <= {x["id"] for x in listed["runs"]}
    configs = dict(sc.configs())
    for x in runs:
        run = app_client.get(f"/api/runs/{x['id']}").json()
        assert run["title"] == f"{sc.name}: {x['role']}"
        assert SimConfig.model_validate(run["config"]).config_hash() == configs[x["role"]].config_hash()

    assert app_client.get("/compare", params={"ids": ",".join(ids)}).status_code == 200
    page = app_client.get(f"/scenarios/{sc.name}", params={"ids": ",".join(ids)})
    assert page.status_code == 200
    roles = {
        row["attrs"].get("data-role"): row for row in parse(page.text).rows if "data-role" in row["attrs"]
    }
    assert set(sc.role_names()) <= set(roles)
    assert all(f"/runs/{x['id']}" in roles[x["role"]]["links"] for x in runs)


def test_run_body(app_client: Any) -> None:
    name = "mainline-tif-polling"
    assert app_client.post(f"/api/scenarios/{name}/run", json={"unlisted": "yes"}).status_code == 422
    r = app_client.post(f"/api/scenarios/{name}/run", json={"colour": "red"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "colour"]
    r = app_client.post(f"/api/scenarios/{name}/run", json={"unlisted": True})
    assert r.status_code == 202
    ids = {x["id"] for x in r.json()["runs"]}
    listed = {x["id"] for x in app_client.get("/api/runs", params={"limit": 200}).json()["runs"]}
    assert not ids & listed
    for rid in ids:
        assert app_client.get(f"/api/runs/{rid}").status_code == 200


def test_run_form_redirects_to_the_scenario_page_with_the_runs(app_client: Any) -> None:
    r = app_client.post("/scenarios/rfc-review-irqs-off/run", follow_redirects=False)
    assert r.status_code == 303
    location = r.headers["location"]
    assert location.startswith("/scenarios/rfc-review-irqs-off?ids=")
    assert len(location.split("=", 1)[1].split(",")) == 2
    page = app_client.get(location)
    assert page.status_code == 200 and 'http-equiv="refresh"' in page.text  # queued: the page reloads


# --- validation ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def worker_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from app.core.settings import Settings
    from app.main import create_app

    db = tmp_path_factory.mktemp("validation") / "idlelab.db"
    app = create_app(Settings(database_url=sqlite_url(db), workers=1))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture(scope="module")
def validation(worker_client: Any) -> dict[str, Any]:
    """Reading the table makes no run; its POST makes the missing ones through the job runner."""
    before = worker_client.get("/api/validation").json()
    assert before["missing"] > 0 and all(row["simulated"] is None for row in before["rows"])
    assert worker_client.get("/api/runs").json()["total"] == 0
    assert 'id="run-validation"' in worker_client.get("/validation").text
    r = worker_client.post("/api/validation/run")
    assert r.status_code == 202, r.text
    assert len(r.json()["runs"]) == before["missing"]
    for run in r.json()["runs"]:
        wait_finished(worker_client, run["id"])
    after = worker_client.get("/api/validation").json()
    assert after["missing"] == 0 and not after["pending"]
    # Nothing left to make.
    assert worker_client.post("/api/validation/run").json()["runs"] == []
    return after  # type: ignore[no-any-return]


def test_validation_rows_all_ok(validation: dict[str, Any]) -> None:
    rows = {row["id"]: row for row in validation["rows"]}
    assert validation["engine_version"] == engine_version()
    for row in rows.values():
        assert ROW_FIELDS <= set(row), row
        assert row["kind"] in ("calibrated", "predicted", "consistency")
        assert row["simulated"] is not None
        assert row["ok"], row
        assert row["runs"] and all(link["url"].endswith(f"/runs/{link['id']}") for link in row["runs"])
    assert validation["all_ok"] is True
    published = {
        "wsm-ipi-same": 1600,
        "wsm-ipi-other": 2000,
        "wsm-rfc-same": 1200,
        "wsm-rfc-other": 1800,
        "icx-cyclictest-mean": -5.1,
    }
    for rid, value in published.items():
        assert rows[rid]["published"] == value
    assert (
        rows["icx-c1-intr-latency"]["published"] == rows["skx-c1-intr-latency"]["published"] == [-10.0, -5.0]
    )
    kinds = {rid: rows[rid]["kind"] for rid in rows}
    assert kinds["wsm-rfc-other"] == "predicted"
    assert kinds["icx-c1-intr-latency"] == kinds["skx-c1-intr-latency"] == "consistency"
    assert kinds["wsm-ipi-same"] == kinds["wsm-rfc-same"] == kinds["icx-cyclictest-mean"] == "calibrated"


def test_validation_reads_stored_runs_of_this_engine(worker_client: Any, validation: dict[str, Any]) -> None:
    app_client = worker_client
    rows = {row["id"]: row for row in validation["rows"]}
    # The simulated figure is the stored run's number, not a constant.
    wsm = rows["wsm-rfc-other"]
    run = app_client.get(f"/api/runs/{wsm['run_ids'][0]}").json()
    assert run["status"] == "done" and run["engine_version"] == engine_version()
    assert run["result"]["ipi"]["other_socket"]["idle_target_mean_cycles"] == wsm["simulated"]
    icx = rows["icx-cyclictest-mean"]
    off, on = (app_client.get(f"/api/runs/{rid}").json()["result"] for rid in icx["run_ids"])
    assert icx["simulated"] == pytest.approx(
        (on["latency"]["timer"]["mean_ns"] / off["latency"]["timer"]["mean_ns"] - 1) * 100
    )
    # Asked again, the same stored runs answer (nothing is simulated twice).
    again = app_client.get("/api/validation").json()
    assert [r["run_ids"] for r in again["rows"]] == [r["run_ids"] for r in validation["rows"]]
    # They are ordinary listed runs.
    listed = {
        x["id"]
        for x in app_client.get("/api/runs", params={"q": "mwait-ipi-westmere", "limit": 200}).json()["runs"]
    }
    assert set(wsm["run_ids"]) <= listed


def test_validation_page_renders_the_rows(worker_client: Any, validation: dict[str, Any]) -> None:
    r = worker_client.get("/validation")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    page = parse(r.text)
    assert "validation-table" in page.ids
    rows = {row["attrs"]["data-id"]: row for row in page.rows if "data-id" in row["attrs"]}
    assert set(rows) == {row["id"] for row in validation["rows"]}
    for row in validation["rows"]:
        shown = rows[row["id"]]
        assert shown["attrs"]["data-ok"] == "true"
        assert shown["attrs"]["data-kind"] == row["kind"]
        for rid in row["run_ids"]:
            assert any(link and link.endswith(f"/runs/{rid}") for link in shown["links"])
    assert "1,599" in rows["wsm-ipi-same"]["text"] or "1,600" in rows["wsm-ipi-same"]["text"]


def test_scenario_page_shows_the_key_table_and_charts(worker_client: Any, validation: dict[str, Any]) -> None:
    r = worker_client.get("/scenarios/mwait-ipi-westmere")
    assert r.status_code == 200
    page = parse(r.text)
    assert {"key-table", "scenario-checks", "run-scenario"} <= page.ids
    checks = {row["attrs"]["data-check"]: row for row in page.rows if "data-check" in row["attrs"]}
    assert {"wsm-ipi-same", "wsm-ipi-other", "wsm-rfc-same", "wsm-rfc-other"} <= set(checks)
    assert all("✓" in row["text"] for row in checks.values())
    assert page.chart_blocks >= 1


@pytest.mark.parametrize("name", sorted(NAMES))
def test_every_scenario_page_renders(app_client: Any, name: str) -> None:
    r = app_client.get(f"/scenarios/{name}")
    assert r.status_code == 200
    assert SCENARIOS[name].title in r.text.replace("&#39;", "'")
    assert "scenario-runs" in parse(r.text).ids


def test_scenarios_index_and_api_detail(app_client: Any) -> None:
    page = parse(app_client.get("/scenarios").text)
    assert "scenario-list" in page.ids
    detail = app_client.get("/api/scenarios/irq-enable-c1-icx").json()
    assert [r["name"] for r in detail["roles"]] == ["irq-off", "irq-on"]
    assert detail["roles"][1]["config"]["states"]["irq_enable"] == {"C1": True}


# --- end to end through the real server's workers ------------------------------------------------------


def test_scenario_runs_on_the_workers(live_server: str) -> None:
    with httpx.Client(base_url=live_server, timeout=120.0) as client:
        r = client.post("/api/scenarios/mwait-ipi-westmere/run", params={"wait": "true"})
        assert r.status_code in (200, 202), r.text
        body = r.json()
        for x in body["runs"]:
            assert wait_finished(client, x["id"])["status"] == "done"
        page = client.get(f"/scenarios/mwait-ipi-westmere?ids={','.join(x['id'] for x in body['runs'])}")
        checks = {
            row["attrs"]["data-check"]: row for row in parse(page.text).rows if "data-check" in row["attrs"]
        }
        assert checks and all("✓" in row["text"] for row in checks.values())
        # The same runs now answer the validation rows of that scenario.
        v = client.get("/api/validation").json()
        assert all(row["ok"] for row in v["rows"] if row["scenario"] == "mwait-ipi-westmere")


def test_consistency_rows_carry_their_sensitivity(worker_client: Any, validation: dict[str, Any]) -> None:
    rows = {row["id"]: row for row in validation["rows"]}
    assert validation["consistency"] == sum(r["kind"] == "consistency" for r in validation["rows"]) >= 4
    intr = rows["icx-c1-intr-latency"]
    estimates = {s["estimate"]: s for s in intr["sensitivity"]}
    h = estimates["costs.exit_housekeeping_ns (h)"]
    assert h["holds_from"] < h["value"] == 100 < h["holds_to"]
    others = {"costs.irq_entry_ns (e)", "C1 median exit latency (x)", "interrupt delivery delay (d)"}
    assert set(estimates) >= others
    assert rows["wsm-rfc-other"]["sensitivity"] == []  # predicted: nothing to list
    page = parse(worker_client.get("/validation").text)
    shown = next(row for row in page.rows if row["attrs"].get("data-id") == "icx-c1-intr-latency")
    assert "costs.exit_housekeeping_ns (h)" in shown["text"] and "holds from" in shown["text"]

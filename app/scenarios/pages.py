"""The home page, scenario and validation pages, and their Run buttons (plain form posts, then a
redirect)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from app import charts
from app.core import web
from app.core.deps import SessionDep
from app.core.models import ACTIVE
from app.runs import service as run_service
from app.runs.lifecycle import SubmitterDep
from app.runs.pages import platform_list
from app.scenarios import service as views
from app.scenarios.service import RunRef
from engine import engine_version
from engine.scenarios import Scenario

router = APIRouter(include_in_schema=False)


@router.get("/", name="home")
def home(request: Request, session: SessionDep) -> Response:
    recent = run_service.list_runs_view(session, limit=10).runs
    context = {"platforms": platform_list(session), "scenarios": views.list_scenarios(), "recent": recent}
    return web.page(request, "home.html", context)


@router.get("/scenarios", name="scenarios_page")
def scenarios_page(request: Request) -> Response:
    return web.page(request, "scenarios.html", {"scenarios": views.list_scenarios()})


def scenario_charts(scenario: Scenario, runs: Mapping[str, RunRef]) -> dict[str, Any]:
    """The dashboard's compare charts for the scenario's finished runs (labelled by role name)."""
    pairs = [(role, runs[role].result) for role in scenario.role_names() if role in runs and runs[role].done]
    if len(pairs) < 2:
        return {}
    names = [n for n in scenario.charts if n in charts.COMPARE_CHARTS] or ["residency"]
    return {n: charts.COMPARE_CHARTS[n](pairs) for n in names}  # type: ignore[arg-type]


@router.get("/scenarios/{name}", name="scenario_page")
def scenario_page(
    request: Request,
    name: str,
    session: SessionDep,
    ids: list[str] = Query(default=[]),  # noqa: B008
) -> Response:
    scenario = views.get_scenario(name)
    id_list = list(dict.fromkeys(p for v in ids for p in v.replace(" ", ",").split(",") if p))[:16]
    runs = views.runs_by_ids(session, scenario, id_list) if id_list else views.latest_runs(session, scenario)
    configs = dict(scenario.configs())
    roles = [
        {
            "name": r.name,
            "label": r.label,
            "run": runs.get(r.name),
            "config": orjson.dumps(
                configs[r.name].model_dump(mode="json"), option=orjson.OPT_INDENT_2
            ).decode(),
        }
        for r in scenario.roles
    ]
    return web.page(
        request,
        "scenario.html",
        {
            "scenario": scenario,
            "roles": roles,
            "runs": runs,
            "has_runs": bool(runs),
            "pending": any(r.status in ACTIVE for r in runs.values()),
            "key_table": views.key_table(scenario, runs),
            "metrics": views.metrics_table(scenario, runs),
            "checks": views.check_rows(scenario, runs),
            "charts": scenario_charts(scenario, runs),
            "comparison_url": views.compare_url([runs[r].id for r in scenario.role_names() if r in runs]),
            "engine_version": engine_version(),
            "pinned": bool(id_list),
        },
    )


@router.post("/scenarios/{name}/run", name="scenario_run_form")
def scenario_run_form(name: str, submit: SubmitterDep) -> Response:
    """The page's Run button (a plain form: no script needed): submit, then show those runs."""
    scenario = views.get_scenario(name)
    ids = ",".join(s["id"] for s in views.submit(submit, scenario))
    return web.see_other(f"/scenarios/{scenario.name}?ids={ids}")


@router.get("/validation", name="validation_page")
def validation_page(request: Request, session: SessionDep) -> Response:
    report = views.validation_report(session)
    groups = []
    for sc in report["scenarios"]:
        rows = [{**r, "state": check_state(r)} for r in report["rows"] if r["scenario"] == sc["name"]]
        if rows:
            groups.append({**sc, "source": rows[0]["source"], "rows": rows})
    states = [r["state"] for g in groups for r in g["rows"]]
    counts = {state: states.count(state) for state in CHECK_STATES}
    context = {"report": report, "fmt": views.fmt_value, "groups": groups, "counts": counts}
    return web.page(request, "validation.html", context)


# A check's state on the page: a row whose runs are not all done has no simulated value yet, so it
# is neither within tolerance nor outside it.
CHECK_STATES = ("ok", "outside", "running", "failed", "not-run")


def check_state(row: Mapping[str, Any]) -> str:
    if row["simulated"] is not None:
        return "ok" if row["ok"] else "outside"
    statuses = {run["status"] for run in row["runs"]}
    if statuses & set(ACTIVE):
        return "running"
    return "failed" if "failed" in statuses else "not-run"


@router.post("/validation/run", name="validation_run_form")
def validation_run_form(session: SessionDep, submit: SubmitterDep) -> Response:
    """The validation page's button: make the missing runs, then show the page (it reloads while they run)."""
    views.submit_missing(session, submit)
    return web.see_other("/validation")

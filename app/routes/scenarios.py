"""Built-in scenarios and the validation table: API and pages.

API
- `GET /api/scenarios`: `{"scenarios": [{name, title, description, source, url, roles, checks}]}`.
- `GET /api/scenarios/{name}`: one scenario with each role's config, its latest runs for the
  current engine and the checks evaluated on them.
- `POST /api/scenarios/{name}/run[?wait=true]` (body optional: `{"unlisted": false}`): submits one
  run per role through the job runner (`app.state.runner.submit`, the path `POST /api/runs`
  takes, so the runs show on /runs and reuse finished runs of the same config) and answers
  `202 {"scenario", "runs": [{"id", "url", "role", "status", "delete_token", "reused_from"}],
  "comparison_url", "scenario_url"}`. With `?wait=true` it waits (bounded by
  IDLELAB_WAIT_TIMEOUT_S) and, once every run is done, answers 200 with `"checks"` too.
  Unknown name: 404.
- `GET /api/validation`: `app.validation.report`: rows `{"source", "metric", "unit",
  "published", "simulated", "tolerance", "ok", "kind", ...}` from stored runs of the current
  engine version (missing runs are simulated and stored first).

Pages: `/scenarios`, `/scenarios/{name}` (with `?ids=` for given runs; a plain form posts to
`/scenarios/{name}/run` and is redirected there), `/validation`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from app import charts, validation, views
from app.db import session_scope
from app.errors import InvalidInput, NotFound
from app.routes import base_url_of
from engine import engine_version
from engine.scenarios import SCENARIOS, Scenario, summary

router = APIRouter()

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"description": 'Unknown scenario: `{"detail": "..."}`'},
}


def _json(body: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status_code, media_type="application/json")


def get_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise NotFound(
            f"scenario {name!r} not found; built-in scenarios are {', '.join(SCENARIOS)}"
        ) from None


def scenario_item(scenario: Scenario, base_url: str = "") -> dict[str, Any]:
    """A scenario as `GET /api/scenarios` lists it."""
    item = summary(scenario)
    item["url"] = f"{base_url}/scenarios/{scenario.name}"
    item["run_url"] = f"{base_url}/api/scenarios/{scenario.name}/run"
    return item


def list_scenarios() -> list[dict[str, Any]]:
    """The built-in scenarios (name, title, description, url...): the home page lists these."""
    return [scenario_item(s) for s in SCENARIOS.values()]


# --- API ------------------------------------------------------------------------------------------


@router.get("/api/scenarios", tags=["scenarios"])
def api_list_scenarios(request: Request) -> Response:
    """The built-in experiments: the source documents' figures, and the review's requests."""
    base = base_url_of(request)
    return _json({"scenarios": [scenario_item(s, base) for s in SCENARIOS.values()]})


@router.get("/api/scenarios/{name}", tags=["scenarios"], responses=ERROR_RESPONSES)
def api_get_scenario(name: str, request: Request) -> Response:
    """One scenario: its roles' configs, its latest runs for this engine, and its checks on them."""
    scenario = get_scenario(name)
    base = base_url_of(request)
    with session_scope(request.app.state.sessionmaker) as session:
        runs = validation.latest_scenario_runs(session, scenario)
    item = scenario_item(scenario, base)
    configs = dict(scenario.configs())
    item["roles"] = [
        {"name": r.name, "label": r.label, "config": configs[r.name].model_dump(mode="json")}
        for r in scenario.roles
    ]
    item["details"] = scenario.details
    item["engine_version"] = engine_version()
    item["runs"] = [runs[r].link(base) for r in scenario.role_names() if r in runs]
    ids = [runs[r].id for r in scenario.role_names() if r in runs]
    item["comparison_url"] = validation.compare_url(ids, base) if len(ids) >= 2 else None
    item["checks"] = validation.check_rows(scenario, runs, base)
    return _json(item)


async def _read_unlisted(request: Request) -> bool:
    raw = await request.body()
    if not raw.strip():
        return False
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidInput.one(["body"], f"invalid JSON: {exc}", "json_invalid") from None
    if not isinstance(data, dict):
        raise InvalidInput.one(["body"], "body must be a JSON object", "dict_type")
    extra = set(data) - {"unlisted"}
    if extra:
        raise InvalidInput.one(
            ["body", sorted(extra)[0]], "unknown field; only `unlisted` is accepted", "extra_forbidden"
        )
    unlisted = data.get("unlisted", False)
    if not isinstance(unlisted, bool):
        raise InvalidInput.one(["body", "unlisted"], "must be true or false", "bool_type")
    return unlisted


def submit_scenario(request: Request, scenario: Scenario, *, unlisted: bool = False) -> list[dict[str, Any]]:
    """Submit one run per role through the job runner; returns `{"id", "role", "status", ...}`."""
    runner = request.app.state.runner
    out = []
    for role, config in scenario.configs():
        sub = runner.submit(config, title=validation.run_title(scenario, role), unlisted=unlisted)
        out.append(
            {
                "id": sub.id,
                "role": role,
                "status": sub.status,
                "delete_token": sub.delete_token,
                "reused_from": sub.reused_from,
            }
        )
    return out


@router.post("/api/scenarios/{name}/run", tags=["scenarios"], status_code=202, responses=ERROR_RESPONSES)
async def api_run_scenario(
    name: str,
    request: Request,
    wait: Annotated[bool, Query(description="Wait (bounded) for every run to finish.")] = False,
) -> Response:
    """Run every role of a scenario: one run each, through the normal job path."""
    scenario = get_scenario(name)
    unlisted = await _read_unlisted(request)
    base = base_url_of(request)
    submitted = await run_in_threadpool(submit_scenario, request, scenario, unlisted=unlisted)
    ids = [s["id"] for s in submitted]
    body: dict[str, Any] = {
        "scenario": scenario.name,
        "runs": [{**s, "url": views.run_url(s["id"], base)} for s in submitted],
        "comparison_url": validation.compare_url(ids, base),
        "scenario_url": f"{base}/scenarios/{scenario.name}?ids={','.join(ids)}",
    }
    if not wait:
        return _json(body, 202)
    runner = request.app.state.runner
    timeout = request.app.state.settings.wait_timeout_s
    pending = [s["id"] for s in submitted if s["status"] not in ("done", "failed")]
    if pending:
        await asyncio.gather(*(runner.wait(rid, timeout) for rid in pending))

    def load() -> dict[str, validation.RunRef]:
        with session_scope(request.app.state.sessionmaker) as session:
            return validation.scenario_runs_by_ids(session, scenario, ids)

    runs = await run_in_threadpool(load)
    by_id = {r.id: r for r in runs.values()}
    for item in body["runs"]:
        ref = by_id.get(item["id"])
        item["status"] = ref.status if ref else item["status"]
        item["error"] = ref.error if ref else None
    body["checks"] = validation.check_rows(scenario, runs, base)
    finished = all(item["status"] in ("done", "failed") for item in body["runs"])
    return _json(body, 200 if finished else 202)


@router.get("/api/validation", tags=["scenarios"])
async def api_validation(request: Request) -> Response:
    """Each published figure beside the simulated one, with the runs used (simulated and stored
    first if the current engine version has none)."""
    body = await run_in_threadpool(
        validation.validation_report, request.app.state.sessionmaker, base_url_of(request)
    )
    return _json(body)


# --- pages ----------------------------------------------------------------------------------------


def _render(request: Request, name: str, context: dict[str, Any]) -> Any:
    from app.routes.pages import render

    return render(request, name, context)


@router.get("/scenarios", name="scenarios_page", include_in_schema=False)
def scenarios_page(request: Request) -> Any:
    return _render(request, "scenarios.html", {"scenarios": list_scenarios()})


def scenario_charts(scenario: Scenario, runs: Mapping[str, validation.RunRef]) -> dict[str, Any]:
    """The dashboard's compare charts for the scenario's finished runs (labelled by role name)."""
    pairs = [
        (role, runs[role].result)
        for role in scenario.role_names()
        if role in runs and runs[role].done and runs[role].result is not None
    ]
    if len(pairs) < 2:
        return {}
    names = [n for n in scenario.charts if n in charts.COMPARE_CHARTS] or ["residency"]
    return {n: charts.COMPARE_CHARTS[n](pairs) for n in names}  # type: ignore[arg-type]


def _ids(values: Sequence[str]) -> list[str]:
    ids: list[str] = []
    for v in values:
        for part in v.replace(" ", ",").split(","):
            if part and part not in ids:
                ids.append(part)
    return ids


@router.get("/scenarios/{name}", name="scenario_page", include_in_schema=False)
def scenario_page(request: Request, name: str, ids: list[str] = Query(default=[])) -> Any:  # noqa: B008
    scenario = get_scenario(name)
    id_list = _ids(ids)
    with session_scope(request.app.state.sessionmaker) as session:
        if id_list:
            runs = validation.scenario_runs_by_ids(session, scenario, id_list)
        else:
            runs = validation.latest_scenario_runs(session, scenario)
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
    run_ids = [runs[r].id for r in scenario.role_names() if r in runs]
    pending = any(r.status in ("queued", "running") for r in runs.values())
    return _render(
        request,
        "scenario.html",
        {
            "scenario": scenario,
            "roles": roles,
            "runs": runs,
            "has_runs": bool(runs),
            "pending": pending,
            "key_table": validation.key_table(scenario, runs),
            "metrics": validation.metrics_table(scenario, runs),
            "checks": validation.check_rows(scenario, runs),
            "charts": scenario_charts(scenario, runs),
            "comparison_url": validation.compare_url(run_ids) if len(run_ids) >= 2 else None,
            "engine_version": engine_version(),
            "pinned": bool(id_list),
        },
    )


@router.post("/scenarios/{name}/run", name="scenario_run_form", include_in_schema=False)
def scenario_run_form(request: Request, name: str) -> Any:
    """The page's Run button (a plain form: no script needed): submit, then show those runs."""
    scenario = get_scenario(name)
    submitted = submit_scenario(request, scenario)
    ids = ",".join(s["id"] for s in submitted)
    return RedirectResponse(f"/scenarios/{scenario.name}?ids={ids}", status_code=303)


@router.get("/validation", name="validation_page", include_in_schema=False)
async def validation_page(request: Request) -> Any:
    body = await run_in_threadpool(validation.validation_report, request.app.state.sessionmaker, "")
    return _render(
        request, "validation.html", {"report": body, "fmt": validation.fmt_value, "groups": _groups(body)}
    )


def _groups(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The validation rows grouped by scenario (one source document and platform each)."""
    out: list[dict[str, Any]] = []
    for sc in body["scenarios"]:
        rows = [r for r in body["rows"] if r["scenario"] == sc["name"]]
        if rows:
            out.append({**sc, "source": rows[0]["source"], "rows": rows})
    return out

"""The scenarios API: list and read the built-in experiments, run one, and the validation table
(read it; `POST /api/validation/run` makes the runs it lacks)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from app.core.deps import RunEventsDep, SessionDep, SettingsDep
from app.core.errors import ERROR_RESPONSES
from app.core.models import FINISHED
from app.core.web import absolute, json_response
from app.runs.lifecycle import SubmitterDep
from app.scenarios import service as views
from engine import engine_version

router = APIRouter(prefix="/api", tags=["scenarios"])


@router.get("/scenarios", responses=ERROR_RESPONSES)
def list_scenarios() -> Response:
    """The built-in experiments: the source documents' figures, and the review's requests."""
    return json_response({"scenarios": views.list_scenarios()})


@router.get("/scenarios/{name}", responses=ERROR_RESPONSES)
def get_scenario(name: str, session: SessionDep) -> Response:
    """One scenario: its roles' configs, its latest listed runs for this engine, and its checks on them."""
    scenario = views.get_scenario(name)
    runs = views.latest_runs(session, scenario)
    configs = dict(scenario.configs())
    ids = [runs[r].id for r in scenario.role_names() if r in runs]
    return json_response(
        {
            **views.scenario_item(scenario),
            "roles": [
                {"name": r.name, "label": r.label, "config": configs[r.name].model_dump(mode="json")}
                for r in scenario.roles
            ],
            "details": scenario.details,
            "engine_version": engine_version(),
            "runs": [runs[r].link() for r in scenario.role_names() if r in runs],
            "comparison_url": views.compare_url(ids),
            "checks": views.check_rows(scenario, runs),
        }
    )


class ScenarioRun(BaseModel):
    """Body of `POST /api/scenarios/{name}/run` (optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    unlisted: bool = False


@router.post(
    "/scenarios/{name}/run",
    status_code=202,
    responses={**ERROR_RESPONSES, 200: {"description": "With `?wait=true`, every run finished in time."}},
)
async def run_scenario(
    name: str,
    request: Request,
    session: SessionDep,
    submit: SubmitterDep,
    events: RunEventsDep,
    settings: SettingsDep,
    body: ScenarioRun | None = None,
    wait: Annotated[bool, Query(description="Wait (bounded) for every run to finish.")] = False,
) -> Response:
    """Run every role of a scenario: one run each, through the normal job path. With `?wait=true`
    and every run done, 200 with `"checks"` too."""
    scenario = views.get_scenario(name)
    body = body or ScenarioRun()
    submitted = await run_in_threadpool(views.submit, submit, scenario, unlisted=body.unlisted)
    ids = [s["id"] for s in submitted]
    compare = views.compare_url(ids)
    answer: dict[str, Any] = {
        "scenario": scenario.name,
        "runs": [{**s, "url": absolute(request, s["url"])} for s in submitted],
        "comparison_url": compare and absolute(request, compare),
        "scenario_url": absolute(request, f"/scenarios/{scenario.name}?ids={','.join(ids)}"),
    }
    if not wait:
        return json_response(answer, 202)
    pending = [s["id"] for s in submitted if s["status"] not in FINISHED]
    await asyncio.gather(*(events.wait(rid, settings.wait_timeout_s) for rid in pending))

    runs = await run_in_threadpool(views.runs_by_ids, session, scenario, ids)
    by_id = {r.id: r for r in runs.values()}
    for item in answer["runs"]:
        ref = by_id.get(item["id"])
        item["status"] = ref.status if ref else item["status"]
        item["error"] = ref.error if ref else None
    answer["checks"] = views.check_rows(scenario, runs)
    finished = all(item["status"] in FINISHED for item in answer["runs"])
    return json_response(answer, 200 if finished else 202)


@router.get("/validation", responses=ERROR_RESPONSES)
def validation(session: SessionDep) -> Response:
    """Each published figure beside the simulated one, from the runs that exist for this engine
    (`missing` roles have none yet: `POST /api/validation/run` makes them)."""
    return json_response(views.validation_report(session))


@router.post("/validation/run", status_code=202, responses=ERROR_RESPONSES)
def run_validation(session: SessionDep, submit: SubmitterDep) -> Response:
    """Queue the validation runs this engine lacks."""
    return json_response({"runs": views.submit_missing(session, submit)}, 202)

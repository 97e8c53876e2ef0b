"""The runs API: submit, read, list, delete, each run's charts as Plotly JSON, and the run that
simulates a platform's table."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Body, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from app import charts
from app.core.database import session_scope
from app.core.deps import DbDep, RunEventsDep, SessionDep, SettingsDep
from app.core.errors import ERROR_RESPONSES, NotFound
from app.core.inputs import MAX_OFFSET, TEXT
from app.core.models import FINISHED
from app.core.tokens import authorized
from app.core.web import absolute, json_response, require_json
from app.platforms.service import machine_config
from app.runs import service, store
from app.runs.lifecycle import Submitted, SubmitterDep
from app.runs.schemas import RunCreate, RunList, RunRead, RunStatus, RunSubmitted
from app.runs.service import ArtifactsDep, ListCacheDep

router = APIRouter(prefix="/api", tags=["runs"])


@router.post(
    "/runs",
    status_code=202,
    response_model=RunSubmitted,
    responses={**ERROR_RESPONSES, 200: {"description": "With `?wait=true`, the run finished in time."}},
    dependencies=[Depends(require_json)],
)
async def create_run(
    request: Request,
    submit: SubmitterDep,
    events: RunEventsDep,
    settings: SettingsDep,
    body: Annotated[RunCreate, Body(description="`{}`: the default run.")],
    wait: Annotated[
        bool, Query(description="Wait (bounded by IDLELAB_WAIT_TIMEOUT_S) for the run to finish.")
    ] = False,
) -> Response:
    """Submit a run (`RunCreate`; `{}` is the default run). 202 with its id, share link
    and delete token (shown once).

    The run is committed as `queued` before this answers. With `?wait=true` the answer comes when
    the run is done or failed (200, with `result`), or at the time-out (202, still running).
    """
    factory = request.app.state.sessionmaker

    def submit_run() -> Submitted:
        # The whole submission in one trip to the threadpool (a session dependency would add two:
        # its opening and its commit), on its own session.
        with session_scope(factory) as session:
            return submit.config(
                session, body.config, title=body.title, unlisted=body.unlisted, repeats=body.repeats
            )

    submitted = await run_in_threadpool(submit_run)
    answer: dict[str, Any] = submitted.answer(absolute(request, service.run_path(submitted.id)))
    if not wait:
        return json_response(answer, 202)
    if submitted.status not in FINISHED:
        await events.wait(submitted.id, settings.wait_timeout_s)

    def load() -> service.RunView:
        with session_scope(factory) as session:
            return service.load_run_view(session, submitted.id)

    view = await run_in_threadpool(load)
    answer.update(status=view.status, progress=view.summary["progress"], error=view.summary["error"])
    answer["result"] = orjson.Fragment(view.result_json) if view.result_json is not None else None
    return json_response(answer, 200 if view.status in FINISHED else 202)


@router.get("/runs", response_model=RunList, responses=ERROR_RESPONSES)
def list_runs(
    db: DbDep,
    run_lists: ListCacheDep,
    platform: Annotated[str | None, Query(max_length=64, json_schema_extra=TEXT)] = None,
    governor: Annotated[str | None, Query(max_length=32, json_schema_extra=TEXT)] = None,
    mechanism: Annotated[str | None, Query(max_length=32, json_schema_extra=TEXT)] = None,
    status: RunStatus | None = None,
    q: Annotated[
        str | None, Query(max_length=200, description="Text in the title.", json_schema_extra=TEXT)
    ] = None,
    sweep: Annotated[
        str | None,
        Query(max_length=24, description="A sweep's points (hidden otherwise).", json_schema_extra=TEXT),
    ] = None,
    sort: Annotated[
        str,
        Query(
            max_length=64,
            description="A summary column (`-col` for descending); default newest first.",
            json_schema_extra={"enum": service.SORT_KEYS},
        ),
    ] = "created_at",
    order: Annotated[
        Literal["asc", "desc"] | None, Query(description="Overrides `sort`'s direction.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    """Listed runs (unlisted ones excluded), filtered, sorted and paginated: indexed reads of the
    summary columns only (never config or result), answered from a cache of list bytes while no
    run has changed."""
    with db.connect() as conn:
        body = service.list_runs_json(
            conn, run_lists, platform=platform, governor=governor, mechanism=mechanism, status=status,
            q=q, sweep=sweep, sort=sort, order=order, limit=limit, offset=offset,
        )  # fmt: skip
    return json_response(body)


@router.get(
    "/runs/{run_id}",
    response_model=RunRead,
    responses={**ERROR_RESPONSES, 304: {"description": "`If-None-Match` named the current ETag."}},
)
async def get_run(run_id: str, request: Request) -> Response:
    """A run with its config and, once done, its result (stored bytes, not rebuilt): a finished
    run's from memory, else one primary-key read."""
    # The app's objects straight from its state, not as dependencies: on this, the hottest read,
    # solving them was a third of a cached answer's time.
    state = request.app.state
    return await service.serve(request, state.db_engine, state.artifacts, run_id, "api")


@router.delete("/runs/{run_id}", status_code=204, responses=ERROR_RESPONSES)
def delete_run(
    run_id: str,
    session: SessionDep,
    artifacts: ArtifactsDep,
    x_delete_token: Annotated[str | None, Header(description="The token POST /api/runs gave.")] = None,
) -> Response:
    """Delete a run; needs the `X-Delete-Token` its submission answered with."""
    authorized(store.get_run(session, run_id), x_delete_token, f"run {run_id!r}")
    store.delete_run(session, run_id)
    session.commit()
    artifacts.discard(run_id)  # at once here; other processes' LRUs within a second
    return Response(status_code=204)


@router.get("/runs/{run_id}/charts", responses=ERROR_RESPONSES)
def chart_names(run_id: str, session: SessionDep) -> dict[str, list[str]]:
    """The chart names a run offers (the same for every finished run)."""
    if not store.exists(session, run_id):
        raise NotFound(f"run {run_id!r} not found")
    return {"charts": list(charts.CHARTS)}


@router.get("/runs/{run_id}/charts/{name}", name="run_chart", responses=ERROR_RESPONSES)
async def run_chart(run_id: str, name: str, request: Request) -> Response:
    """A Plotly figure `{"data": [...], "layout": {...}}`; 404 for an unknown run or chart name,
    or a run that has no result yet (its status says when to ask again). A finished run's from
    memory, else built in the threadpool."""
    if name not in charts.CHARTS:
        raise NotFound(f"unknown chart {name!r}; charts are {', '.join(charts.CHARTS)}")
    state = request.app.state
    return await service.serve_chart(state.db_engine, state.artifacts, run_id, name)


@router.post(
    "/platforms/{name}/simulate", status_code=202, response_model=RunSubmitted, responses=ERROR_RESPONSES
)
def simulate_platform(name: str, request: Request, session: SessionDep, submit: SubmitterDep) -> Response:
    """Run the default load on an imported machine's table and topology, with the states its dump
    shows disabled disabled: the simulation the platform page shows beside the counters."""
    submitted = submit.config(session, machine_config(session, name), title=f"{name}: simulated")
    return json_response(submitted.answer(absolute(request, service.run_path(submitted.id))), 202)

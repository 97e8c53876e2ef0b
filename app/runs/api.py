"""The runs API: submit, read, list, delete, compare, and each run's charts as Plotly JSON."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app import charts
from app.deps import ArtifactsDep, DbDep, ListCacheDep, RunnerDep, SessionDep, SettingsDep
from app.errors import ERROR_RESPONSES, Forbidden, InvalidInput, NotFound, UnsupportedMediaType
from app.runs import store, views
from app.runs.artifacts import serve
from app.schemas import Comparison, RunList, RunRead, RunStatus, RunSubmitted
from app.web import absolute

router = APIRouter(prefix="/api", tags=["runs"])


def _json(body: bytes, status_code: int = 200) -> Response:
    return Response(body, status_code=status_code, media_type="application/json")


class _RunCreateShell(BaseModel):
    """RunCreate with the config left raw: a custom platform id is resolved before validation."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | None = None
    title: Annotated[str, Field(max_length=200)] = ""
    unlisted: bool = False


async def _read_json(request: Request) -> Any:
    """The body as JSON; only `application/json` is read (a form or `text/plain` post needs no
    preflight, so another site's page could send one)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise UnsupportedMediaType(f"send the body as application/json, not {content_type or 'nothing'!r}")
    raw = await request.body()
    try:
        return orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise InvalidInput.one(["body"], f"invalid JSON: {exc}", "json_invalid") from None


@router.post(
    "/runs",
    status_code=202,
    response_model=RunSubmitted,
    responses={**ERROR_RESPONSES, 200: {"description": "With `?wait=true`, the run finished in time."}},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunCreate"}}},
        }
    },
)
async def create_run(
    request: Request,
    session: SessionDep,
    runner: RunnerDep,
    settings: SettingsDep,
    wait: Annotated[
        bool, Query(description="Wait (bounded by IDLELAB_WAIT_TIMEOUT_S) for the run to finish.")
    ] = False,
) -> Response:
    """Submit a run (`RunCreate`). 202 with its id, share link and delete token (shown once).

    The run is committed as `queued` before this answers. With `?wait=true` the answer comes when
    the run is done or failed (200, with `result`), or at the time-out (202, still running).
    """
    try:
        shell = _RunCreateShell.model_validate(await _read_json(request))
    except ValidationError as exc:
        raise InvalidInput([{**e, "loc": ["body", *e["loc"]]} for e in exc.errors()]) from None

    def submit() -> Any:
        config = views.resolve_config(session, shell.config)
        session.commit()  # ends the read: what follows must see the run finish
        return runner.submit(config, title=shell.title, unlisted=shell.unlisted)

    submitted = await run_in_threadpool(submit)
    answer: dict[str, Any] = {
        "id": submitted.id,
        "url": absolute(request, views.run_path(submitted.id)),
        "status": submitted.status,
        "delete_token": submitted.delete_token,
        "reused_from": submitted.reused_from,
    }
    if not wait:
        return _json(orjson.dumps(answer), 202)
    if submitted.status not in store.FINISHED:
        await runner.wait(submitted.id, settings.wait_timeout_s)

    view = await run_in_threadpool(views.load_run_view, session, submitted.id)
    answer.update(status=view.status, progress=view.summary["progress"], error=view.summary["error"])
    answer["result"] = orjson.Fragment(view.result_json) if view.result_json is not None else None
    return _json(orjson.dumps(answer), 200 if view.status in store.FINISHED else 202)


@router.get("/runs", response_model=RunList, responses=ERROR_RESPONSES)
async def list_runs(
    db: DbDep,
    run_lists: ListCacheDep,
    platform: Annotated[str | None, Query(max_length=64)] = None,
    governor: Annotated[str | None, Query(max_length=32)] = None,
    mechanism: Annotated[str | None, Query(max_length=32)] = None,
    status: RunStatus | None = None,
    q: Annotated[str | None, Query(max_length=200, description="Text in the title.")] = None,
    sweep: Annotated[
        str | None, Query(max_length=24, description="A sweep's points (hidden otherwise).")
    ] = None,
    sort: Annotated[
        str,
        Query(max_length=64, description="A summary column (`-col` for descending); default newest first."),
    ] = "created_at",
    order: Annotated[str | None, Query(description="`asc` or `desc`.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> Response:
    """Listed runs (unlisted ones excluded), filtered, sorted and paginated: indexed reads of the
    summary columns only (never config or result), answered from a cache of list bytes while no
    run has changed."""
    with db.connect() as conn:
        body = views.list_runs_json(
            conn,
            run_lists,
            platform=platform,
            governor=governor,
            mechanism=mechanism,
            status=status,
            q=q,
            sweep=sweep,
            sort=sort,
            order=order,
            limit=limit,
            offset=offset,
        )
    return _json(body)


@router.get(
    "/runs/{run_id}",
    response_model=RunRead,
    responses={**ERROR_RESPONSES, 304: {"description": "`If-None-Match` named the current ETag."}},
)
async def get_run(run_id: str, request: Request, db: DbDep, artifacts: ArtifactsDep) -> Response:
    """A run with its config and, once done, its result (stored bytes, not rebuilt). On the event
    loop: a primary-key read (SQLite in WAL mode never blocks a reader on a writer)."""
    return await serve(request, db, artifacts, run_id, "api")


@router.delete(
    "/runs/{run_id}", status_code=204, responses={**ERROR_RESPONSES, 403: {"description": "Wrong token"}}
)
def delete_run(
    run_id: str,
    session: SessionDep,
    artifacts: ArtifactsDep,
    x_delete_token: Annotated[str | None, Header(description="The token POST /api/runs gave.")] = None,
) -> Response:
    """Delete a run; needs the `X-Delete-Token` its submission answered with."""
    run = store.get_run(session, run_id)
    if run is None:
        raise NotFound(f"run {run_id!r} not found")
    if not store.token_matches(run, x_delete_token):
        raise Forbidden("wrong or missing X-Delete-Token")
    store.delete_run(session, run_id)
    session.commit()
    artifacts.discard(run_id)  # frees the memory; the existence check keeps reads exact anyway
    return Response(status_code=204)


@router.get("/compare", response_model=Comparison, responses=ERROR_RESPONSES)
def compare(
    session: SessionDep,
    ids: Annotated[str, Query(description="2 to 8 run ids, comma-separated; deltas are against the first.")],
) -> Response:
    """Aligned metrics of several runs with percent deltas against the first (repeated ids count once)."""
    return _json(views.compare_view(session, ids).comparison.model_dump_json().encode())


@router.get("/runs/{run_id}/charts", responses=ERROR_RESPONSES)
def chart_names(run_id: str, session: SessionDep) -> dict[str, list[str]]:
    """The chart names a run offers (the same for every finished run)."""
    if not store.exists(session, run_id):
        raise NotFound(f"run {run_id!r} not found")
    return {"charts": list(charts.CHARTS)}


@router.get("/runs/{run_id}/charts/{name}", name="run_chart", responses=ERROR_RESPONSES)
def run_chart(run_id: str, name: str, session: SessionDep) -> Response:
    """A Plotly figure `{"data": [...], "layout": {...}}`; 404 for an unknown run or chart name,
    or a run that has no result yet (its status says when to ask again)."""
    if name not in charts.CHARTS:
        raise NotFound(f"unknown chart {name!r}; charts are {', '.join(charts.CHARTS)}")
    view = views.load_run_view(session, run_id)
    if view.result is None:
        raise NotFound(f"run {run_id!r} has no result yet (status {view.status!r})")
    figure = charts.run_chart(name, view.result)
    return _json(orjson.dumps(figure, option=orjson.OPT_SERIALIZE_NUMPY))

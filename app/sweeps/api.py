"""The sweeps API: submit, list, read (JSON and CSV), cancel, delete."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse

from app.deps import ArtifactsDep, RunnerDep, SessionDep
from app.errors import ERROR_RESPONSES, Forbidden, NotFound
from app.runs.api import _read_json
from app.runs.store import token_matches
from app.sweeps import store, views
from app.web import absolute

router = APIRouter(prefix="/api", tags=["sweeps"])


def _json(data: Any, status_code: int = 200) -> Response:
    return Response(orjson.dumps(data), status_code=status_code, media_type="application/json")


@router.post(
    "/sweeps",
    status_code=202,
    responses=ERROR_RESPONSES,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": views.SweepCreate.model_json_schema()}},
        }
    },
)
async def create_sweep(request: Request, session: SessionDep, runner: RunnerDep) -> Response:
    """Submit a sweep (`SweepCreate`): 202 with its id, link, delete token (shown once) and point
    count. Its points are queued (or answered from finished identical runs) before this answers."""
    body = views.parse(await _read_json(request))
    made = await run_in_threadpool(views.submit, session, runner, body)
    answer = {**made, "url": absolute(request, views.sweep_path(made["id"])), "status": "queued"}
    return _json(answer, 202)


@router.get("/sweeps", responses=ERROR_RESPONSES)
def list_sweeps(
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=2**62)] = 0,
) -> Response:
    """Listed sweeps, newest first, with their progress."""
    return _json(views.list_view(session, limit=limit, offset=offset))


@router.get("/sweeps/{sweep_id}", responses=ERROR_RESPONSES)
def get_sweep(sweep_id: str, session: SessionDep) -> Response:
    """A sweep: base, axes, status, progress, and every point (values, run, status, metrics)."""
    return _json(views.sweep_view(session, sweep_id))


@router.get("/sweeps/{sweep_id}/points.csv", name="sweep_csv", responses=ERROR_RESPONSES)
def sweep_csv(sweep_id: str, session: SessionDep) -> StreamingResponse:
    """The points as CSV: index, axis values, run id, status, metrics."""
    view = views.sweep_view(session, sweep_id)
    headers = {"Content-Disposition": f'attachment; filename="sweep-{sweep_id}.csv"'}
    return StreamingResponse(views.points_csv(view), media_type="text/csv", headers=headers)


def _authorized(session: Any, sweep_id: str, token: str | None) -> None:
    sweep = store.get_sweep(session, sweep_id)
    if sweep is None:
        raise NotFound(f"sweep {sweep_id!r} not found")
    if not token_matches(sweep, token):  # type: ignore[arg-type]
        raise Forbidden("wrong or missing X-Delete-Token")


@router.post("/sweeps/{sweep_id}/cancel", responses=ERROR_RESPONSES)
def cancel_sweep(
    sweep_id: str,
    session: SessionDep,
    x_delete_token: Annotated[str | None, Header(description="The token POST /api/sweeps gave.")] = None,
) -> Response:
    """Cancel the sweep's queued points (running ones finish); needs its `X-Delete-Token`."""
    _authorized(session, sweep_id, x_delete_token)
    cancelled = store.cancel_sweep(session, sweep_id)
    return _json({"id": sweep_id, "cancelled": cancelled})


@router.delete("/sweeps/{sweep_id}", status_code=204, responses=ERROR_RESPONSES)
def delete_sweep(
    sweep_id: str,
    session: SessionDep,
    artifacts: ArtifactsDep,
    x_delete_token: Annotated[str | None, Header(description="The token POST /api/sweeps gave.")] = None,
) -> Response:
    """Delete a sweep and its points; needs its `X-Delete-Token`."""
    _authorized(session, sweep_id, x_delete_token)
    for run_id in store.delete_sweep(session, sweep_id):
        artifacts.discard(run_id)
    return Response(status_code=204)

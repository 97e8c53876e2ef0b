"""The sweeps API: submit, list, read (JSON and CSV), cancel, delete."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response, StreamingResponse

from app.core.deps import SessionDep
from app.core.errors import ERROR_RESPONSES
from app.core.inputs import MAX_OFFSET
from app.core.tokens import authorized
from app.core.web import absolute, json_response, require_json
from app.runs.lifecycle import SubmitterDep
from app.runs.service import ArtifactsDep
from app.sweeps import kernels, service, store
from app.sweeps.service import SweepCreate

router = APIRouter(prefix="/api", tags=["sweeps"])
TokenHeader = Annotated[str | None, Header(description="The token POST /api/sweeps gave.")]


@router.post("/sweeps", status_code=202, responses=ERROR_RESPONSES, dependencies=[Depends(require_json)])
def create_sweep(request: Request, body: SweepCreate, session: SessionDep, submit: SubmitterDep) -> Response:
    """Submit a sweep (`SweepCreate`): 202 with its id, link, delete token (shown once) and point
    count. Its points are queued (or answered from finished identical runs) before this answers."""
    made = service.submit(session, submit, body)
    answer = {**made, "url": absolute(request, service.sweep_path(made["id"])), "status": "queued"}
    return json_response(answer, 202)


@router.get("/sweeps", responses=ERROR_RESPONSES)
def list_sweeps(
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    """Listed sweeps, newest first, with their progress."""
    return json_response(service.list_view(session, limit=limit, offset=offset))


@router.get("/sweeps/{sweep_id}", responses=ERROR_RESPONSES)
def get_sweep(sweep_id: str, session: SessionDep) -> Response:
    """A sweep: base, axes, status, progress, and every point (values, run, status, metrics)."""
    return json_response(service.sweep_view(session, sweep_id))


@router.get("/sweeps/{sweep_id}/kernels", responses=ERROR_RESPONSES)
def get_sweep_kernels(sweep_id: str, session: SessionDep) -> Response:
    """What changed between the kernels of a sweep with a `governor.kernel` axis: per combination
    of the other axes, each figure per kernel with each step's change (pp for shares and ratios,
    else %), and the step with the largest change (in the figure's practical threshold). 404 when
    the sweep has no such axis."""
    return json_response(kernels.kernel_steps(session, sweep_id))


@router.get("/sweeps/{sweep_id}/points.csv", name="sweep_csv", responses=ERROR_RESPONSES)
def sweep_csv(sweep_id: str, session: SessionDep) -> StreamingResponse:
    """The points as CSV: index, axis values, run id, status, metrics."""
    view = service.sweep_view(session, sweep_id)
    headers = {"Content-Disposition": f'attachment; filename="sweep-{sweep_id}.csv"'}
    return StreamingResponse(service.points_csv(view), media_type="text/csv", headers=headers)


@router.post("/sweeps/{sweep_id}/cancel", responses=ERROR_RESPONSES)
def cancel_sweep(sweep_id: str, session: SessionDep, x_delete_token: TokenHeader = None) -> Response:
    """Cancel the sweep's queued points (running ones finish); needs its `X-Delete-Token`."""
    authorized(store.get_sweep(session, sweep_id), x_delete_token, f"sweep {sweep_id!r}")
    return json_response({"id": sweep_id, "cancelled": service.cancel(session, sweep_id)})


@router.delete("/sweeps/{sweep_id}", status_code=204, responses=ERROR_RESPONSES)
def delete_sweep(
    sweep_id: str, session: SessionDep, artifacts: ArtifactsDep, x_delete_token: TokenHeader = None
) -> Response:
    """Delete a sweep and its points; needs its `X-Delete-Token`."""
    authorized(store.get_sweep(session, sweep_id), x_delete_token, f"sweep {sweep_id!r}")
    for run_id in store.delete_sweep(session, sweep_id):
        artifacts.discard(run_id)
    return Response(status_code=204)

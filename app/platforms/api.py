"""The platforms API: list, read and create C-state tables."""

from __future__ import annotations

from typing import Annotated

import orjson
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from app.deps import RunnerDep, SessionDep
from app.errors import ERROR_RESPONSES, InvalidInput
from app.platforms import importing, views
from app.runs import views as run_views
from app.schemas import PlatformCreate, PlatformList, PlatformRead, RunSubmitted
from app.web import absolute

router = APIRouter(prefix="/api", tags=["platforms"])


def _json(model: PlatformList | PlatformRead, status_code: int = 200) -> Response:
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


@router.get("/platforms", response_model=PlatformList, responses=ERROR_RESPONSES)
def list_platforms(session: SessionDep) -> Response:
    """Built-in C-state tables (with provenance) and custom ones."""
    return _json(views.platforms_view(session))


@router.get("/platforms/{name}", response_model=PlatformRead, responses=ERROR_RESPONSES)
def get_platform(name: str, session: SessionDep) -> Response:
    return _json(views.platform_view(session, name))


@router.post(
    "/platforms",
    status_code=201,
    response_model=PlatformRead,
    responses={**ERROR_RESPONSES, 400: {"description": "Malformed body"}, 409: {"description": "Name taken"}},
)
def create_platform(body: PlatformCreate, session: SessionDep) -> Response:
    """A custom table: `{"name", "states": [...], "based_on": "skx"}`. Runs use it as `platform`."""
    return _json(views.create_platform(session, body), 201)


@router.post(
    "/platforms/import",
    status_code=201,
    response_model=PlatformRead,
    responses={**ERROR_RESPONSES, 409: {"description": "Name taken"}},
    openapi_extra={
        "requestBody": {"required": True, "content": {"text/plain": {"schema": {"type": "string"}}}}
    },
)
async def import_platform(
    request: Request,
    session: SessionDep,
    name: Annotated[str | None, Query(max_length=48, description="Default: from the CPU model name.")] = None,
    title: Annotated[str, Query(max_length=200)] = "",
) -> Response:
    """A machine's sysfs dump (what `idlelab collect` or the README's `grep` writes) as the body,
    `text/plain`: stored as a custom platform. The answer says what was recognised (equal to, a
    variant of, or closest to a built-in table; costs and power borrowed from it, labelled so), the
    topology (and whether inferred) and the counter snapshot (`machine`). A bad dump is a 422
    naming the line and the reason; nothing is stored."""
    body = await request.body()
    if not body.strip():
        raise InvalidInput.one(["body"], "empty body: send the dump's text", "missing")

    def store() -> PlatformRead:
        table, _ = importing.import_dump(session, body, name=name, title=title)
        return views.platform_view(session, table.name)

    return _json(await run_in_threadpool(store), 201)


@router.post(
    "/platforms/{name}/simulate", status_code=202, response_model=RunSubmitted, responses=ERROR_RESPONSES
)
def simulate_platform(name: str, request: Request, session: SessionDep, runner: RunnerDep) -> Response:
    """Run the default load on an imported machine's table and topology, with the states its dump
    shows disabled disabled: the simulation the platform page shows beside the counters."""
    submitted = run_views.submit(session, runner, machine_config(session, name), title=f"{name}: simulated")
    answer = {
        "id": submitted.id,
        "url": absolute(request, run_views.run_path(submitted.id)),
        "status": submitted.status,
        "delete_token": submitted.delete_token,
        "reused_from": submitted.reused_from,
    }
    return Response(orjson.dumps(answer), status_code=202, media_type="application/json")


def machine_config(session: SessionDep, name: str) -> dict[str, object]:
    """The simulation config of a platform: an imported one's topology and disabled states."""
    view = views.platform_view(session, name)
    if view.machine is None:
        return {"platform": name, "duration_ms": importing.SIMULATED_MS}
    return importing.simulation_config(name, importing.MachineView.model_validate(view.machine))

"""The measurements API: import a wult or turbostat result, read it, delete it, simulate it,
calibrate a platform on it."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import UploadFile

from app.deps import RunnerDep, SessionDep, SettingsDep
from app.errors import ERROR_RESPONSES, Forbidden, InvalidInput, NotFound
from app.measurements import actions, store, views
from app.runs import views as run_views
from app.runs.store import token_matches
from app.web import absolute

router = APIRouter(prefix="/api", tags=["measurements"])
MAX_UPLOAD_FILES = 4


def _json(body: Any, status_code: int = 200) -> Response:
    return Response(
        orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS),
        status_code=status_code,
        media_type="application/json",
    )


class Upload(BaseModel):
    files: dict[str, bytes]
    fields: dict[str, str] = {}

    @property
    def title(self) -> str:
        return self.fields.get("title", "")

    @property
    def unlisted(self) -> bool:
        return self.fields.get("unlisted") in ("1", "on", "true")


async def read_upload(request: Request, limit: int, *, filename: str | None = None) -> Upload:
    """The files of a multipart form (and its text fields: `title`, `unlisted`...), or the whole
    body as one file named by `filename` (a turbostat text, or a wult zip/tar)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "multipart/form-data":
        body = await request.body()
        if not body:
            raise InvalidInput.one(["body"], "empty body: send a wult result or turbostat output", "missing")
        return Upload(files={filename or "upload": body})
    files: dict[str, bytes] = {}
    fields: dict[str, str] = {}
    async with request.form(max_files=MAX_UPLOAD_FILES, max_fields=8, max_part_size=limit) as form:
        for key, value in form.multi_items():
            if not isinstance(value, UploadFile):
                fields[key] = value
            elif value.filename:  # an empty file input sends a nameless empty part
                files[value.filename] = await value.read()
    return Upload(files=files, fields=fields)


@router.post(
    "/measurements",
    status_code=201,
    responses=ERROR_RESPONSES,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "multipart/form-data": {"schema": {"type": "object"}},
                "text/plain": {"schema": {"type": "string"}},
                "application/zip": {"schema": {"type": "string", "format": "binary"}},
            },
        }
    },
)
async def create_measurement(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    title: Annotated[str, Query(max_length=200)] = "",
    unlisted: bool = False,
    filename: Annotated[str | None, Query(max_length=200, description="The body's file name.")] = None,
) -> Response:
    """Import a measurement: a wult raw result (`datapoints.csv` and `info.yml` as two multipart
    files, or one zip/tar of the result directory) or turbostat output (multipart, or the body as
    `text/plain`). 201 with its id, link and delete token (shown once). A bad file is a 422 whose
    `loc` names the file, line and column; nothing is stored."""
    upload = await read_upload(request, settings.import_max_body_bytes, filename=filename)

    def create() -> tuple[views.MeasurementView, str]:
        return views.create_measurement(
            session, upload.files, title=upload.title or title, unlisted=upload.unlisted or unlisted
        )

    view, token = await run_in_threadpool(create)
    answer = {**view.to_dict(), "url": absolute(request, view.url), "delete_token": token}
    return _json(answer, 201)


@router.get("/measurements/{measurement_id}", responses=ERROR_RESPONSES)
def get_measurement(measurement_id: str, session: SessionDep) -> Response:
    """A measurement as its page shows it: distributions per requested C-state (wult), residency
    columns (turbostat), the measured conditions and notes."""
    return _json(views.load_measurement_view(session, measurement_id).to_dict())


@router.delete(
    "/measurements/{measurement_id}",
    status_code=204,
    responses={**ERROR_RESPONSES, 403: {"description": "Wrong token"}},
)
def delete_measurement(
    measurement_id: str,
    session: SessionDep,
    x_delete_token: Annotated[str | None, Header(description="The token the import gave.")] = None,
) -> Response:
    row = store.get_measurement(session, measurement_id)
    if row is None:
        raise NotFound(f"measurement {measurement_id!r} not found")
    if not token_matches(row, x_delete_token):  # type: ignore[arg-type]
        raise Forbidden("wrong or missing X-Delete-Token")
    store.delete_measurement(session, measurement_id)
    return Response(status_code=204)


class SimulateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    platform: Annotated[
        str | None, Field(max_length=64, description="Default: chosen from the measurement.")
    ] = None
    unlisted: bool = False


def simulate(session: Any, runner: Any, measurement_id: str, body: SimulateBody) -> dict[str, Any]:
    """Submit the run that reproduces a measurement; its id, the compare link and the notes."""
    config, title, notes = actions.simulation_config(session, measurement_id, platform=body.platform)
    submitted = run_views.submit(session, runner, config, title=title, unlisted=body.unlisted)
    return {
        "id": submitted.id,
        "url": run_views.run_path(submitted.id),
        "status": submitted.status,
        "delete_token": submitted.delete_token,
        "comparison_url": f"/compare?ids={submitted.id},{measurement_id}",
        "config": config,
        "notes": notes,
    }


@router.post("/measurements/{measurement_id}/simulate", status_code=202, responses=ERROR_RESPONSES)
def simulate_measurement(
    measurement_id: str,
    request: Request,
    session: SessionDep,
    runner: RunnerDep,
    body: SimulateBody | None = None,
) -> Response:
    """ "Simulate this": a run whose config reproduces the measured conditions as far as they are
    known (platform, requested C-states, wake-up interval from LDist; the delivery method noted).
    202 with the run's id and the link comparing it with the measurement."""
    answer = simulate(session, runner, measurement_id, body or SimulateBody())
    answer["url"] = absolute(request, answer["url"])
    return _json(answer, 202)


class CalibrateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    platform: Annotated[str | None, Field(max_length=64, description="The table to start from.")] = None
    name: Annotated[str | None, Field(min_length=1, max_length=48, pattern=r"^[a-z0-9][a-z0-9_\-]*$")] = None


@router.post("/measurements/{measurement_id}/calibrate", status_code=201, responses=ERROR_RESPONSES)
def calibrate_measurement(
    measurement_id: str, session: SessionDep, body: CalibrateBody | None = None
) -> Response:
    """Save a custom platform whose exit-latency medians (and, with >= 10^5 samples per state, the
    hardware's 99.99th percentile) are fitted to this wult measurement, labelled `measured` with
    its id; the table figures the governor sees stay the kernel's. 201 with the platform and fits."""
    body = body or CalibrateBody()
    table, fits = actions.calibrate(session, measurement_id, platform=body.platform, name=body.name)
    return _json(
        {"name": table.name, "url": f"/platforms/{table.name}", "fits": fits, "table": table.model_dump()},
        201,
    )

"""The measurements API: import a wult or turbostat result, read it, delete it, simulate it,
calibrate a platform on it."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from app.core.deps import SessionDep, SettingsDep
from app.core.errors import ERROR_RESPONSES
from app.core.inputs import TEXT, no_nul_strings
from app.core.tokens import authorized
from app.core.web import MAX_UPLOAD_FIELDS, absolute, json_response, read_upload
from app.measurements import service, store
from app.runs.lifecycle import Submitter, SubmitterDep
from app.runs.service import run_path

router = APIRouter(prefix="/api", tags=["measurements"])


@router.post(
    "/measurements",
    status_code=201,
    responses=ERROR_RESPONSES,
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                # Parts named as its fields: at most MAX_UPLOAD_FIELDS text fields (and 4 files,
                # which a form's JSON Schema cannot tell from text).
                "multipart/form-data": {
                    "schema": {"type": "object", "minProperties": 1, "maxProperties": MAX_UPLOAD_FIELDS}
                },
                "text/plain": {"schema": {"type": "string", "minLength": 1}},
                "application/zip": {"schema": {"type": "string", "format": "binary", "minLength": 1}},
            },
        }
    },
)
async def create_measurement(
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    title: Annotated[str, Query(max_length=200, json_schema_extra=TEXT)] = "",
    unlisted: bool = False,
    filename: Annotated[
        str | None, Query(max_length=200, description="The body's file name.", json_schema_extra=TEXT)
    ] = None,
) -> Response:
    """Import a measurement: a wult raw result (`datapoints.csv` and `info.yml` as two multipart
    files, or one zip/tar of the result directory) or turbostat output (multipart, or the body as
    `text/plain`). 201 with its id, link and delete token (shown once). A bad file is a 422 whose
    `loc` names the file, line and column; nothing is stored."""
    upload = await read_upload(request, settings.import_max_body_bytes, filename=filename)
    files = {name: data for name, data in upload.files.items() if data}

    def create() -> tuple[service.MeasurementView, str]:
        return service.create_measurement(
            session, files, title=upload.title or title, unlisted=upload.unlisted or unlisted
        )

    view, token = await run_in_threadpool(create)
    return json_response({**view.to_dict(), "url": absolute(request, view.url), "delete_token": token}, 201)


@router.get("/measurements/{measurement_id}", responses=ERROR_RESPONSES)
def get_measurement(measurement_id: str, session: SessionDep) -> Response:
    """A measurement as its page shows it: distributions per requested C-state (wult), residency
    columns (turbostat), the measured conditions and notes."""
    return json_response(service.load_measurement_view(session, measurement_id).to_dict())


@router.delete("/measurements/{measurement_id}", status_code=204, responses=ERROR_RESPONSES)
def delete_measurement(
    measurement_id: str,
    session: SessionDep,
    x_delete_token: Annotated[str | None, Header(description="The token the import gave.")] = None,
) -> Response:
    authorized(
        store.get_measurement(session, measurement_id), x_delete_token, f"measurement {measurement_id!r}"
    )
    store.delete_measurement(session, measurement_id)
    return Response(status_code=204)


class SimulateBody(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)

    platform: Annotated[
        str | None, Field(max_length=64, description="Default: chosen from the measurement.")
    ] = None
    unlisted: bool = Field(default=False, description="Always so for an unlisted measurement's run.")


def simulate(session: Session, submit: Submitter, measurement_id: str, body: SimulateBody) -> dict[str, Any]:
    """Submit the run that reproduces a measurement; its id, the compare link and the notes."""
    config, title, notes, hidden = service.simulation_config(session, measurement_id, platform=body.platform)
    submitted = submit.config(session, config, title=title, unlisted=body.unlisted or hidden)
    return {
        "id": submitted.id,
        "url": run_path(submitted.id),
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
    submit: SubmitterDep,
    body: SimulateBody | None = None,
) -> Response:
    """ "Simulate this": a run whose config reproduces the measured conditions as far as they are
    known (platform, requested C-states; for wult its experiment: a timer on the measured CPU
    alone, launch distances drawn from the measured LDist, each armed after the previous wake-up;
    the delivery method noted).
    202 with the run's id and the link comparing it with the measurement."""
    answer = simulate(session, submit, measurement_id, body or SimulateBody())
    answer["url"] = absolute(request, answer["url"])
    return json_response(answer, 202)


class CalibrateBody(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=no_nul_strings)

    platform: Annotated[str | None, Field(max_length=64, description="The table to start from.")] = None
    name: Annotated[str | None, Field(min_length=1, max_length=48, pattern=r"^[a-z0-9][a-z0-9_\-]*$")] = None


@router.post(
    "/measurements/{measurement_id}/calibrate",
    status_code=201,
    responses={**ERROR_RESPONSES, 409: {"description": "Name taken, or the custom platforms at their limit"}},
)
def calibrate_measurement(
    measurement_id: str, session: SessionDep, settings: SettingsDep, body: CalibrateBody | None = None
) -> Response:
    """Save a custom platform whose exit-latency medians (and, with >= 10^5 samples per state, the
    hardware's 99.99th percentile) are fitted to this wult measurement, labelled `measured` with
    its id; the table figures the governor sees stay the kernel's. 201 with the platform and fits."""
    body = body or CalibrateBody()
    table, fits = service.calibrate(
        session, measurement_id, limit=settings.max_custom_platforms, platform=body.platform, name=body.name
    )
    return json_response(
        {"name": table.name, "url": f"/platforms/{table.name}", "fits": fits, "table": table.model_dump()},
        201,
    )

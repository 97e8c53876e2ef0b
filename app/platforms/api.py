"""The platforms API: list, read and create C-state tables, and import a machine's sysfs dump."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query
from fastapi.responses import Response

from app.core.deps import SessionDep, SettingsDep
from app.core.errors import ERROR_RESPONSES, InvalidInput
from app.core.inputs import TEXT
from app.core.web import json_response
from app.platforms import service
from app.platforms.service import PlatformCreate, PlatformList, PlatformRead

# Some character that is not ASCII white space (`bytes.strip()`'s).
NOT_BLANK_PATTERN = "[^ \\t\\n\\r\\x0b\\x0c]"
router = APIRouter(prefix="/api", tags=["platforms"])


@router.get("/platforms", response_model=PlatformList, responses=ERROR_RESPONSES)
def list_platforms(session: SessionDep) -> Response:
    """Built-in C-state tables (with provenance) and custom ones."""
    return json_response(service.platforms_view(session))


@router.get("/platforms/{name}", response_model=PlatformRead, responses=ERROR_RESPONSES)
def get_platform(name: str, session: SessionDep) -> Response:
    return json_response(service.platform_view(session, name))


@router.post(
    "/platforms",
    status_code=201,
    response_model=PlatformRead,
    responses={**ERROR_RESPONSES, 400: {"description": "Malformed body"}, 409: {"description": "Name taken"}},
)
def create_platform(body: PlatformCreate, session: SessionDep, settings: SettingsDep) -> Response:
    """A custom table: `{"name", "states": [...], "based_on": "skx"}`. Runs use it as `platform`."""
    return json_response(service.create_platform(session, body, limit=settings.max_custom_platforms), 201)


@router.post(
    "/platforms/import",
    status_code=201,
    response_model=PlatformRead,
    responses={**ERROR_RESPONSES, 409: {"description": "Name taken"}},
)
def import_platform(
    session: SessionDep,
    settings: SettingsDep,
    dump: Annotated[
        bytes,
        Body(
            media_type="text/plain",
            description="The dump's text (not only white space).",
            json_schema_extra={"minLength": 1, "pattern": NOT_BLANK_PATTERN},
        ),
    ],
    name: Annotated[
        str | None,
        Query(
            max_length=48,
            description="Default: from the CPU model name.",
            json_schema_extra={"pattern": service.NAME_PATTERN.pattern},
        ),
    ] = None,
    title: Annotated[str, Query(max_length=200, json_schema_extra=TEXT)] = "",
) -> Response:
    """A machine's sysfs dump (what `idlelab collect` or the README's `grep` writes) as the body,
    `text/plain`: stored as a custom platform. The answer says what was recognised (equal to, a
    variant of, or closest to a built-in table; costs and power borrowed from it, labelled so), the
    topology (and whether inferred) and the counter snapshot (`machine`). A bad dump is a 422
    naming the line and the reason; nothing is stored."""
    if not dump.strip():
        raise InvalidInput.one(["body"], "empty body: send the dump's text", "missing")
    table, _ = service.import_dump(session, dump, limit=settings.max_custom_platforms, name=name, title=title)
    return json_response(service.platform_view(session, table.name), 201)

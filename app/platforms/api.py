"""The platforms API: list, read and create C-state tables."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from app.deps import SessionDep
from app.errors import ERROR_RESPONSES
from app.platforms import views
from app.schemas import PlatformCreate, PlatformList, PlatformRead

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

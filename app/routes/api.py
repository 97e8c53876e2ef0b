"""The JSON API under /api (DESIGN.md section 3). Pages call the same loaders in `app.views`."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app import store, views
from app.cache import FINISHED, Answer, Entry, ReadCache, etag_of, register, stamp_of
from app.db import SessionDep, session_scope
from app.errors import Forbidden, InvalidInput, NotFound
from app.routes import base_url_of
from app.schemas import (
    Comparison,
    PlatformCreate,
    PlatformList,
    PlatformRead,
    RunList,
    RunRead,
    RunStatus,
    RunSubmitted,
)

router = APIRouter(prefix="/api", tags=["api"])

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    404: {"description": 'Unknown id: `{"detail": "..."}`'},
    422: {"description": 'Invalid input: `{"detail": [{"loc": [...], "msg": ..., "type": ...}]}`'},
}


def _json(body: bytes, status_code: int = 200) -> Response:
    return Response(body, status_code=status_code, media_type="application/json")


# --- platforms -----------------------------------------------------------------------------------


@router.get("/platforms", response_model=PlatformList)
def list_platforms(session: SessionDep) -> Response:
    """Built-in C-state tables (with provenance) and custom ones."""
    return _json(views.platforms_view(session).model_dump_json().encode())


@router.get("/platforms/{name}", response_model=PlatformRead, responses=ERROR_RESPONSES)
def get_platform(name: str, session: SessionDep) -> Response:
    return _json(views.platform_view(session, name).model_dump_json().encode())


@router.post("/platforms", status_code=201, response_model=PlatformRead, responses=ERROR_RESPONSES)
def create_platform(body: PlatformCreate, session: SessionDep) -> Response:
    """A custom table: `{"name", "states": [...], "based_on": "skx"}`. Runs use it as `platform`."""
    return _json(views.create_platform(session, body).model_dump_json().encode(), 201)


# --- runs ----------------------------------------------------------------------------------------


class _RunCreateShell(BaseModel):
    """RunCreate with the config left raw: a custom platform id is resolved before validation."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | None = None
    title: Annotated[str, Field(max_length=200)] = ""
    unlisted: bool = False


def _parse_run_create(raw: bytes) -> _RunCreateShell:
    try:
        data = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise InvalidInput.one(["body"], f"invalid JSON: {exc}", "json_invalid") from None
    try:
        return _RunCreateShell.model_validate(data)
    except ValidationError as exc:
        raise InvalidInput([{**e, "loc": ["body", *e["loc"]]} for e in exc.errors()]) from None


def _submit(request: Request, shell: _RunCreateShell) -> Any:
    with session_scope(request.app.state.sessionmaker) as session:
        config = views.resolve_config(session, shell.config)
    return request.app.state.runner.submit(config, title=shell.title, unlisted=shell.unlisted)


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
    wait: Annotated[
        bool, Query(description="Wait (bounded by IDLELAB_WAIT_TIMEOUT_S) for the run to finish.")
    ] = False,
) -> Response:
    """Submit a run (`RunCreate`). 202 with its id, share link and delete token (shown once).

    The run is committed as `queued` before this answers. With `?wait=true` the answer comes when
    the run is done or failed (200, with `result`), or at the time-out (202, still running).
    """
    shell = _parse_run_create(await request.body())
    submitted = await run_in_threadpool(_submit, request, shell)
    answer: dict[str, Any] = {
        "id": submitted.id,
        "url": views.run_url(submitted.id, base_url_of(request)),
        "status": submitted.status,
        "delete_token": submitted.delete_token,
        "reused_from": submitted.reused_from,
    }
    if not wait:
        return _json(orjson.dumps(answer), 202)
    if submitted.status not in ("done", "failed"):
        await request.app.state.runner.wait(submitted.id, request.app.state.settings.wait_timeout_s)

    def load() -> views.RunView:
        with session_scope(request.app.state.sessionmaker) as session:
            return views.load_run_view(session, submitted.id)

    view = await run_in_threadpool(load)
    answer.update(status=view.status, progress=view.progress, error=view.error)
    head = orjson.dumps(answer)
    body = head[:-1] + b',"result":' + (view.result_json if view.result_json is not None else b"null") + b"}"
    return _json(body, 200 if view.status in ("done", "failed") else 202)


@router.get("/runs", response_model=RunList, responses=ERROR_RESPONSES)
async def list_runs(
    request: Request,
    platform: str | None = None,
    governor: str | None = None,
    mechanism: str | None = None,
    status: RunStatus | None = None,
    q: Annotated[str | None, Query(max_length=200, description="Text in the title.")] = None,
    sort: Annotated[
        str, Query(description="A summary column (`-col` for descending); default newest first.")
    ] = "created_at",
    order: Annotated[str | None, Query(description="`asc` or `desc`.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> Response:
    """Listed runs (unlisted ones excluded), filtered, sorted and paginated.

    Indexed reads of summary columns only (never config or result), run on the event loop; the
    answer is cached (by query string) until the database next changes.
    """
    cache: ReadCache = request.app.state.read_cache
    version = cache.version()
    base_url = base_url_of(request)
    with session_scope(request.app.state.sessionmaker) as session:
        view = views.list_runs_view(
            session,
            platform=platform,
            governor=governor,
            mechanism=mechanism,
            status=status,
            q=q,
            sort=sort,
            order=order,
            limit=limit,
            offset=offset,
            base_url=base_url,
        )
    answer = _answer(view.to_json())
    if version is not None:
        cache.put(_list_key(request, base_url), Entry(answer, len(answer.body), version=version))
    return answer.response(request)


def _list_key(request: Request, base_url: str) -> tuple[str, ...]:
    return ("list", request.scope["query_string"].decode("latin-1"), base_url)


def cached_list(request: Request) -> Answer | None:
    entry = request.app.state.read_cache.versioned_entry(_list_key(request, base_url_of(request)))
    return None if entry is None else entry.value  # type: ignore[no-any-return]


@router.get("/runs/{run_id}", response_model=RunRead, responses=ERROR_RESPONSES)
async def get_run(run_id: str, request: Request) -> Response:
    """A run with its config and, once done, its result (stored bytes, not rebuilt).

    `run_answer` answers it before routing; this handler documents it and answers 404s.
    """
    answer = run_answer(request, run_id)
    if answer is None:
        raise NotFound(f"run {run_id!r} not found")
    return answer.response(request)


def run_answer(request: Request, run_id: str) -> Answer | None:
    """The hot read, on the event loop itself (SQLite in WAL mode never blocks a reader on a
    writer); None if there is no such run.

    A finished run's answer comes from the cache, revalidated by a two-column primary-key read
    (none while the database has not changed). Otherwise one indexed read, the stored JSON
    spliced into the answer, and the answer cached if the run is finished.
    """
    cache: ReadCache = request.app.state.read_cache
    base_url = base_url_of(request)
    key = ("run", run_id, "api", base_url)
    entry = cache.run_entry(key, run_id)
    if entry is not None:
        return entry.value  # type: ignore[no-any-return]
    version = cache.version()
    template = cache.run_entry(_template_key(run_id), run_id)
    if template is not None:
        answer = template.value.answer(base_url)
        cache.put(key, Entry(answer, len(answer.body), stamp=template.stamp, version=version))
        return answer  # type: ignore[no-any-return]
    row = cache.first(store.RUN_ROW, run_id=run_id)
    if row is None:
        return None
    view = views.run_view(row, base_url)
    answer = _answer(view.to_json())
    if view.status in FINISHED:
        stamp = stamp_of(view.summary)
        cache.put(key, Entry(answer, len(answer.body), stamp=stamp, version=version))
    return answer


def _answer(body: bytes) -> Answer:
    return Answer(body, etag_of(body), "application/json")


# The run's `url` is absolute, so an answer depends on the base URL the client used: a finished
# run's answer is also kept as a template around its base URL, made when the run finishes.
_BASE_URL_MARK = f"base-url-{secrets.token_hex(8)}"


@dataclass(frozen=True)
class RunAnswerTemplate:
    """A run's answer cut where its base URL goes."""

    parts: list[bytes]

    def answer(self, base_url: str) -> Answer:
        return _answer(base_url.encode().join(self.parts))


def _template_key(run_id: str) -> tuple[str, ...]:
    return ("run", run_id, "api-template")


def prerender_run_answer(app: Any, run_id: str) -> None:
    """Keep a finished run's answer template in the read cache (called when a run finishes), so
    that its first read, from any base URL, needs no database read but the freshness check."""
    cache: ReadCache = app.state.read_cache
    if cache.max_bytes == 0:
        return  # no cache to keep it in
    version = cache.version()
    row = cache.first(store.RUN_ROW, run_id=run_id)
    if row is None:
        return  # deleted meanwhile
    view = views.run_view(row, _BASE_URL_MARK)
    if view.status not in FINISHED:
        return
    body = view.to_json()
    template = RunAnswerTemplate(body.split(_BASE_URL_MARK.encode()))
    stamp = stamp_of(view.summary)
    cache.put(_template_key(run_id), Entry(template, len(body), stamp=stamp, version=version))


def install(app: Any) -> None:
    """Called by `create_app()`: runs and cached lists are answered before routing."""
    register(app, "/api/runs", cached_list)
    register(app, "/api/runs/(?P<run_id>[^/]+)", run_answer)
    app.state.run_finished_hooks.append(prerender_run_answer)


@router.delete(
    "/runs/{run_id}", status_code=204, responses={**ERROR_RESPONSES, 403: {"description": "Wrong token"}}
)
def delete_run(
    run_id: str,
    request: Request,
    session: SessionDep,
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
    request.app.state.read_cache.discard_run(run_id)  # frees the memory; stamps keep reads exact anyway
    return Response(status_code=204)


@router.get("/compare", response_model=Comparison, responses=ERROR_RESPONSES)
def compare(
    request: Request,
    session: SessionDep,
    ids: Annotated[str, Query(description="2 to 8 run ids, comma-separated; deltas are against the first.")],
) -> Response:
    """Aligned metrics of several runs with percent deltas against the first."""
    return _json(views.compare_view(session, ids, base_url_of(request)).model_dump_json().encode())

"""The FastAPI app: `create_app(settings=None)` wires settings, database, job runner and routers.

On start (lifespan) it applies the Alembic migrations, requeues runs a stopped server left
`running`, and starts the worker pool; on stop it stops the pool (runs in flight are requeued).
"""

from __future__ import annotations

import gc
import importlib
import logging
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.openapi.utils import get_openapi
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import errors
from app.cache import CachedReads, ReadCache
from app.config import REPO_ROOT, Settings, get_settings
from app.db import make_db_engine, make_sessionmaker, upgrade_db
from app.jobs import JobRunner
from app.schemas import RunCreate
from engine import ENGINE_VERSION

log = logging.getLogger("idlelab")

ROUTERS = ("app.routes.api", "app.routes.pages", "app.routes.charts", "app.routes.scenarios")


class BodySizeLimit:
    """Refuse request bodies over `max_bytes` with 413 (declared length or streamed bytes)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            await self.app(scope, receive, send)
            return
        too_large = errors.error_response(
            413, f"request body over the limit of {self.max_bytes} bytes (IDLELAB_MAX_BODY_BYTES)"
        )
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = 0
                if declared > self.max_bytes:
                    await too_large(scope, receive, send)
                    return
        # Read the whole (bounded) body first, then replay it to the app.
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _custom_openapi(app: FastAPI) -> Any:
    """The generated schema plus `RunCreate` (POST /api/runs reads its body itself, to resolve a
    custom platform id before validating, so FastAPI would not list the model by itself)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        extra = RunCreate.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, sub in extra.pop("$defs", {}).items():
            components.setdefault(name, sub)
        components["RunCreate"] = extra
        app.openapi_schema = schema
        return schema

    return openapi


def _run_hooks(app: FastAPI, run_id: str) -> None:
    for hook in app.state.run_finished_hooks:
        try:
            hook(app, run_id)
        except Exception:  # noqa: BLE001 - a hook's failure must not reach the job collector
            log.exception("after-finish hook %s failed for run %s", hook.__name__, run_id)


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the app. Nothing touches the database until the lifespan starts."""
    settings = settings or get_settings()
    db_engine = make_db_engine(settings.database_url)
    sessionmaker = make_sessionmaker(db_engine)
    runner = JobRunner(
        sessionmaker,
        workers=settings.workers,
        progress_step=settings.progress_step,
        reuse=settings.reuse_results,
    )
    read_cache = ReadCache(db_engine, settings.read_cache_bytes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await run_in_threadpool(upgrade_db, settings.database_url)
        await run_in_threadpool(runner.recover)
        # Work off the request path and the job collector's thread, one task at a time: what must
        # happen when a run finishes, and storing pages rendered on request.
        background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
        app.state.background = background
        if app.state.run_finished_hooks:
            runner.on_finished = lambda run_id: background.submit(_run_hooks, app, run_id)
        runner.start()
        # Startup's objects (numba, plotly, SQLAlchemy, FastAPI...) live as long as the process: out
        # of the cyclic GC's sight, a full collection no longer walks them (~150 ms, a pause every
        # request in flight would wait out).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            runner.on_finished = None
            await run_in_threadpool(runner.stop)
            background.shutdown(wait=True, cancel_futures=True)
            app.state.background = None
            read_cache.close()
            db_engine.dispose()

    app = FastAPI(
        title="idlelab",
        version=ENGINE_VERSION,
        description="Simulate CPU idle states (intel_idle C-states, cpuidle governors, IPI wake-ups).",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.db_engine = db_engine
    app.state.sessionmaker = sessionmaker
    app.state.runner = runner
    app.state.read_cache = read_cache
    app.state.cached_reads = []
    app.state.run_finished_hooks = []
    app.state.background = None  # the lifespan's background thread
    errors.install(app)
    for module_name in ROUTERS:
        module = importlib.import_module(module_name)
        app.include_router(module.router)
        install = getattr(module, "install", None)
        if callable(install):
            install(app)
    app.mount("/static", StaticFiles(directory=REPO_ROOT / "static", check_dir=False), name="static")
    if getattr(app.state, "templates", None) is None:
        from fastapi.templating import Jinja2Templates

        app.state.templates = Jinja2Templates(directory=str(REPO_ROOT / "templates"))
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    # Outermost: a cached read skips everything below it.
    app.add_middleware(CachedReads, routes=app.state.cached_reads)
    app.openapi = _custom_openapi(app)  # type: ignore[method-assign]
    return app
